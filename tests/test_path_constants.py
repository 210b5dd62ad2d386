"""One option path, one place (issue 29): no two modules of our packages declare a
module-level constant holding the same schema option path as a string literal. A module
that needs an option's path takes it from the schema (`constraints.paths`:
`PARALLEL_CONFIG.tensor_parallel_size`, checked against the schema at import) or imports
the one module's constant. Read with `ast` over the modules `tests.import_graph` walks."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from constraints.schema import options
from tests.import_graph import ROOT, module_files


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at import: the body, and the blocks of a module-level
    `if`, `try` or `with` (not the bodies of functions and classes)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            blocks = node.body + node.orelse + node.finalbody
            yield from _module_level(blocks + [s for h in node.handlers for s in h.body])
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)


def path_literals(paths: set[str], root: Path = ROOT) -> dict[str, dict[str, list[str]]]:
    """{option path: {module: ["NAME:line", ...]}} for every module-level assignment of a
    string literal that is one of `paths` (`TP = "parallel_config.tensor_parallel_size"`,
    `TP: str = "..."`), in the modules of our packages under `root`."""
    found: dict[str, dict[str, list[str]]] = {}
    for module, file in module_files(root).items():
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in _module_level(tree.body):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if not (isinstance(value, ast.Constant) and value.value in paths):
                continue
            names = [t.id for t in targets if isinstance(t, ast.Name)] or ["?"]
            where = found.setdefault(value.value, {}).setdefault(module, [])
            where += [f"{name}:{node.lineno}" for name in names]
    return found


def redeclared(paths: set[str], root: Path = ROOT) -> list[str]:
    """One line per option path held in the constants of more than one module, naming the
    path and each module with its constants."""
    return [
        f"{path} is declared in {len(modules)} modules: "
        + ", ".join(f"{module} ({', '.join(names)})" for module, names in sorted(modules.items()))
        for path, modules in sorted(path_literals(paths, root).items())
        if len(modules) > 1
    ]


def schema_paths() -> set[str]:
    return {spec.path for spec in options()}


def test_no_option_path_is_declared_in_two_modules():
    assert redeclared(schema_paths()) == []


def test_the_checker_sees_a_path_declared_in_two_modules(tmp_path):
    for package in ("constraints", "arbiter", "engine"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    tp = "parallel_config.tensor_parallel_size"
    (tmp_path / "constraints" / "sizes.py").write_text(
        f'TP = "{tp}"\nPP = "parallel_config.pipeline_parallel_size"\nNAME = "tp"\n'
    )
    (tmp_path / "arbiter" / "fixes.py").write_text(
        f'from constraints.sizes import PP\n\nif True:\n    SIZE: str = "{tp}"\n'
    )
    # a literal inside a function, and one module naming a path twice, are no re-declaration
    (tmp_path / "engine" / "local.py").write_text(
        'A = "kv_cache_config.enable_block_reuse"\nB = "kv_cache_config.enable_block_reuse"\n'
        f'\n\ndef f():\n    tp = "{tp}"\n    return tp\n'
    )
    assert redeclared(schema_paths(), tmp_path) == [
        f"{tp} is declared in 2 modules: arbiter.fixes (SIZE:4), constraints.sizes (TP:1)"
    ]
    found = path_literals(schema_paths(), tmp_path)
    assert found["kv_cache_config.enable_block_reuse"] == {"engine.local": ["A:1", "B:2"]}
    assert "parallel_config.pipeline_parallel_size" in found  # declared once: allowed
