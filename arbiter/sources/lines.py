"""Where each key of a YAML or JSON document sits: `key_lines(text) -> {path: line}`.

SARIF results and input errors point at the line of the offending key. The lines come
from `yaml.compose` marks (JSON is read the same way: its tabs, only ever whitespace in
valid JSON, become spaces first so that the YAML scanner takes them). A path is dotted,
with `[i]` for a list item: `kv_cache_config.enable_block_reuse`,
`spec.template.spec.containers[0].args`. Lines are 1-based; the value of a key that
holds a mapping or list is the line of the key itself.
"""

from __future__ import annotations

from typing import Any

import yaml

from constraints.edge import EdgeError, _BoundedLoader  # the edge's alias-bounded loader


def _walk(node: Any, prefix: str, out: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key.start_mark.line)
            path = f"{prefix}.{name}" if prefix else str(name)
            out.setdefault(path, key.start_mark.line + 1)
            _walk(value, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = f"{prefix}[{i}]"
            out.setdefault(path, item.start_mark.line + 1)
            _walk(item, path, out)


def compose_documents(text: str) -> list[Any]:
    """The node tree of every document of `text` (empty documents skipped). Raises
    yaml.YAMLError for a syntax error and EdgeError past the alias limit."""
    if text.lstrip().startswith(("{", "[")):
        text = text.replace("\t", " ")
    loader = _BoundedLoader(text)
    nodes = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                nodes.append(node)
    finally:
        loader.dispose()
    return nodes


def node_lines(node: Any, prefix: str = "") -> dict[str, int]:
    """{path: 1-based line} of every key and list item under a composed node."""
    out: dict[str, int] = {}
    _walk(node, prefix, out)
    return out


def key_lines(text: str, document: int = 0) -> dict[str, int]:
    """{path: 1-based line} of every key of one document of a YAML or JSON text (the
    first by default). A text that does not parse gives {} (the reader reports it)."""
    try:
        nodes = compose_documents(text)
    except (yaml.YAMLError, EdgeError, RecursionError):
        return {}
    if document >= len(nodes):
        return {}
    return node_lines(nodes[document])


def line_of(lines: dict[str, int], path: str) -> int | None:
    """The line of `path`, else of its nearest enclosing key that has one."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            break
        path = path[:cut]
    return lines.get(path) if path else None
