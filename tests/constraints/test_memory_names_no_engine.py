"""The shared memory knowledge names no engine (issue 29): `constraints/facts/memory.py`
and `constraints/shared/rules/memory.py` hold no engine's option path and no engine's
constant or function; what differs per engine is a `MemoryTerms` method or attribute,
overridden in the engine's pack. Read with `ast`: comments and docstrings (which cite
engine sources) are prose, not names."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from constraints.profiles import ENGINES

ROOT = Path(__file__).resolve().parents[2]
SHARED = ("constraints/facts/memory.py", "constraints/shared/rules/memory.py")
PREFIXES = tuple(p for engine in (*ENGINES, "trt") for p in (f"{engine}_", f"{engine.upper()}_"))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [n for n in (node.name.rsplit(".", 1)[-1], node.asname) if n]
    return []


def _engine_path(text: str) -> bool:
    """An engine's option or fact path: in its section (`vllm_config.`) or an engine-named
    leaf in a shared one (`memory.mlc_temp_buffer_bytes`)."""
    if any(f"{engine}_config." in text for engine in ENGINES):
        return True
    head, _, leaf = text.partition(".")
    return bool(head) and "." not in leaf and leaf.startswith(PREFIXES) and " " not in text


def engine_names(source: str) -> list[str]:
    """Where `source` names an engine: an identifier with an engine's prefix, or a string
    (not a docstring) holding an engine's option path."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        for name in _names(node):
            if name.startswith(PREFIXES):
                found.append(f"line {node.lineno}: {name}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docs and _engine_path(node.value):
                found.append(f"line {node.lineno}: {node.value!r}")
    return found


@pytest.mark.parametrize("path", SHARED)
def test_the_shared_memory_modules_name_no_engine(path):
    assert engine_names((ROOT / path).read_text(encoding="utf-8")) == []


def test_the_check_sees_engine_names_and_leaves_prose_alone():
    source = (
        '"""Reads vllm_config.data_parallel_size (a docstring: prose)."""\n'
        "# vllm/distributed/utils.py get_pp_indices (a comment: prose)\n"
        'VLLM_DP = "vllm_config.data_parallel_size"\n'
        "from x import vllm_padded as pad\n"
        "def f(values):\n"
        '    """Counts sglang_config.attn_dp_size."""\n'
        '    return values.get("memory.mlc_temp_buffer_bytes"), TRT_ADP, x.sglang_attn\n'
    )
    assert sorted(engine_names(source)) == [
        "line 3: 'vllm_config.data_parallel_size'",
        "line 3: VLLM_DP",
        "line 4: vllm_padded",
        "line 7: 'memory.mlc_temp_buffer_bytes'",
        "line 7: TRT_ADP",
        "line 7: sglang_attn",
    ]
    assert engine_names('"model.weight_bytes", "memory.terms", "see vllm_config.x here"') == [
        "line 1: 'see vllm_config.x here'"
    ]


def test_importing_the_shared_memory_knowledge_imports_no_pack():
    code = (
        "import json, sys\n"
        "import constraints.facts.memory, constraints.shared.rules.memory\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('constraints.engines.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
