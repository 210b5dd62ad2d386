"""The memory rules' build cache (constraints/shared/rules/memory.py `_fact_key`): the
machine's GPUs leave the key only where they do not shape the expression, and the parts
shared between builds give the expression a fresh build gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constraints.facts import DeviceSpec, ModelSpec
from constraints.schema import options
from constraints.shared.rules.memory import (
    _beam_case,
    _fact_key,
    _one_block,
    _one_sequence,
    _rank_kv_need,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
GRAPHS = "model.vllm_cudagraph_bytes"


def facts(model: str, device: str, terms: str, **values: object) -> dict[str, object]:
    data = json.loads((FIXTURES / f"{model}.json").read_text())
    data.pop("_provenance", None)
    return {
        **{s.path: s.default for s in options()},
        **ModelSpec.from_hf_config(data).facts(),
        **DeviceSpec.named(device).facts(),
        "memory.terms": terms,
        **values,
    }


def fresh(build, f):
    """The expression built with every shared part cleared: what a first build gives."""
    for cached in (_beam_case, _rank_kv_need):
        cached.cache_clear()
    return build(f)


@pytest.mark.parametrize("build", [_one_sequence, _one_block])
def test_a_dense_model_on_the_whole_device_is_built_the_same_on_any_gpu_count(build):
    one, eight = (facts("llama-3.1-70b", f"{n}xH200", "vllm") for n in (1, 8))
    assert _fact_key(one) == _fact_key(eight)
    assert fresh(build, one) == fresh(build, eight)  # the key may drop them: same rule


@pytest.mark.parametrize(
    ("model", "terms"),
    [
        ("qwen3-30b-a3b", "vllm"),
        ("llama-3.1-70b", "arbiter"),
    ],  # routed experts; a budget after loading
)
def test_the_gpu_count_stays_in_the_key_where_it_shapes_the_rule(model, terms):
    one, eight = (facts(model, f"{n}xH200", terms) for n in (1, 8))
    assert _fact_key(one) != _fact_key(eight)
    assert fresh(_one_sequence, one) != fresh(_one_sequence, eight)


def test_shared_parts_build_what_a_fresh_build_does():
    small, large = (
        facts("llama-3.1-70b", "8xH200", "vllm", **{GRAPHS: n}) for n in (1 << 20, 1 << 27)
    )
    _one_sequence(small)  # warms the shared parts with another workspace
    warm = _one_sequence(large)
    assert warm == fresh(_one_sequence, large)
    assert warm != fresh(_one_sequence, small)  # the CUDA-graph bytes do reach the rule
