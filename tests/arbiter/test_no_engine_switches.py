"""Engine facts the shared code needs come from the packs and the registry, not from a
comparison with an engine's name: the KV manager's longer sequences are the memory
terms' `held_tokens`, the model's key and flags and whether GPUs count per node are
fields of the registry's entries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arbiter.dialects import DIALECTS
from arbiter.sources.command import model_of
from constraints.facts.memory import memory_terms

ROOT = Path(__file__).resolve().parents[2]
# shared modules freed of engine-name switches (plan/, service/ and sources/detect.py
# still hold some: see the report of issue 29)
FREED = (
    "arbiter/resolution.py",
    "arbiter/application/check_setup.py",
    "arbiter/sources/manifest.py",
    "arbiter/check.py",
    "arbiter/dialects/_base.py",
    "arbiter/dialects/open_defaults.py",
)


def _engine_comparisons(path: Path) -> list[int]:
    names = set(DIALECTS)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and side.value in names:
                    out.append(node.lineno)
    return out


@pytest.mark.parametrize("module", FREED)
def test_no_shared_module_compares_with_an_engine_name(module):
    assert _engine_comparisons(ROOT / module) == [], module


def test_the_comparison_check_sees_one(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('if engine == "trtllm":\n    pass\n')
    assert _engine_comparisons(probe) == [1]


def test_only_tensorrt_llm_holds_longer_sequences_than_max_seq_len():
    values = {
        "runtime_config.backend": "pytorch",
        "build_config.max_seq_len": 100,
        "speculative_config.decoding_type": "none",
    }
    assert memory_terms("arbiter").held_tokens(values)[0] > 100  # the overlap scheduler
    for terms in ("vllm", "sglang", "mlc"):
        assert memory_terms(terms).held_tokens(values) is None


def test_the_model_is_named_the_engines_way():
    assert DIALECTS.entries["sglang"].model_key == "model-path"
    assert model_of("sglang", ["--model-path", "m"]) == "m"
    assert model_of("sglang", ["m"]) is None  # no positional model
    assert model_of("vllm", ["m", "--max-num-seqs", "8"]) == "m"
    assert [e for e in DIALECTS.entries.values() if e.gpus_per_node] == [DIALECTS.entries["sglang"]]
