"""The import graph of our packages, read from the source with `ast` (nothing is imported).

Every `import` counts, at module level or inside a function, except those under
`if TYPE_CHECKING:`; an import inside a function is "lazy". Edges go to the module named
(`from a.b import c` goes to `a.b.c` when that is a module, else to `a.b`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("constraints", "arbiter", "engine")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (one of ours) or a top-level third-party name
    line: int
    lazy: bool  # inside a function
    comment: str  # the text after `#` on the import's line(s), or ""


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of our packages."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(root: Path = ROOT) -> list[Import]:
    """Every import statement in our packages."""
    files = module_files(root)
    found: list[Import] = []
    for module, path in files.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, lazy: bool, module: str = module, is_package: bool = is_package):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    for other in child.orelse:
                        visit(other, lazy)
                    continue
                inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    span = lines[child.lineno - 1 : (child.end_lineno or child.lineno)]
                    comment = " ".join(s.split("#", 1)[1].strip() for s in span if "#" in s)
                    if child.lineno >= 2 and lines[child.lineno - 2].strip().startswith("#"):
                        comment = (lines[child.lineno - 2].strip()[1:].strip() + " " + comment).strip()
                    for target in _targets(child, module, is_package, files):
                        found.append(Import(module, target, child.lineno, lazy, comment))
                visit(child, inner)

        visit(tree, False)
    return found


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, files: dict[str, Path]
) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _absolute(module, is_package, node.level, node.module)
    out = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        out.append(candidate if candidate in files else base)
    return out


def graph(root: Path = ROOT, *, lazy: bool = True) -> nx.DiGraph:
    """Our modules and the imports among them (lazy ones too unless `lazy` is False)."""
    files = module_files(root)
    g = nx.DiGraph()
    g.add_nodes_from(files)
    for imp in imports(root):
        if imp.target in files and imp.target != imp.source and (lazy or not imp.lazy):
            g.add_edge(imp.source, imp.target)
    return g


def cycles(root: Path = ROOT, limit: int = 20) -> list[list[str]]:
    """Up to `limit` import cycles among our modules (empty when there is none)."""
    found = []
    for cycle in nx.simple_cycles(graph(root)):
        found.append(cycle)
        if len(found) >= limit:
            break
    return found
