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


def _comment(lines: list[str], node: ast.stmt) -> str:
    """The comment on an import's own lines, or on the line just above it."""
    span = lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
    comment = " ".join(s.split("#", 1)[1].strip() for s in span if "#" in s)
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    if above.startswith("#"):
        comment = (above[1:].strip() + " " + comment).strip()
    return comment


def _walk(node: ast.AST, lazy: bool = False) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Import statements under `node` (not those under `if TYPE_CHECKING:`), each with
    whether it sits inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                found += _walk(other, lazy)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            found.append((child, lazy))
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        found += _walk(child, inner)
    return found


def imports(root: Path = ROOT) -> list[Import]:
    """Every import statement in our packages, one entry per imported module."""
    files = module_files(root)
    found: list[Import] = []
    for module, path in files.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        is_package = path.name == "__init__.py"
        for node, lazy in _walk(ast.parse(text)):
            comment = _comment(lines, node)
            for target in sorted(set(_targets(node, module, is_package, files))):
                found.append(Import(module, target, node.lineno, lazy, comment))
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
