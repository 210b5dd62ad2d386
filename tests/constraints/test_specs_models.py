"""Parameter counts and KV bytes per token of current models, against published figures.

Each fixture under tests/fixtures/models/ is a re-authored config.json (the keys that
matter) with its provenance and the published totals (`_provenance`): one test per figure,
within 2%."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constraints.facts import ModelSpec

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
# the thirteen reference models carry their published totals; other fixtures (the corpus's)
# carry only their provenance
NAMES = sorted(
    p.stem
    for p in FIXTURES.glob("*.json")
    if "params" in json.loads(p.read_text()).get("_provenance", {})
)
TOLERANCE = 0.02


def published(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())["_provenance"]


def spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(FIXTURES / f"{name}.json")


def test_the_thirteen_models_of_the_issue_and_gpt_oss_20b_have_fixtures():
    assert NAMES == [
        "deepseek-v3",
        "gemma-2-27b",
        "gemma-3-27b",
        "gpt-oss-120b",
        "gpt-oss-20b",  # a deployment case's model (vLLM recipes: one A100)
        "kimi-k2",
        "llama-3.1-405b",
        "llama-3.1-70b",
        "llama-3.1-8b",
        "llama-4-scout",
        "mixtral-8x7b",
        "qwen2.5-7b",
        "qwen3-235b-a22b",
        "qwen3-next-80b-a3b",
    ]
    for name in NAMES:
        facts = published(name)
        assert facts["config"] and facts["params_source"] and facts["kv_source"]


@pytest.mark.parametrize("name", NAMES)
def test_parameter_count_within_two_percent(name):
    want = published(name)["params"]
    got = spec(name).num_params
    assert abs(got - want) / want < TOLERANCE, (got, want)


@pytest.mark.parametrize("name", NAMES)
def test_kv_bytes_per_token_within_two_percent(name):
    want = published(name)["kv_bytes_per_token"]
    got = spec(name).kv_bytes_per_token(2)
    assert abs(got - want) / want < TOLERANCE, (got, want)


ACTIVE = [n for n in NAMES if "active_params" in published(n) and "active_note" not in published(n)]


@pytest.mark.parametrize("name", ACTIVE)
def test_active_parameters_within_two_percent(name):
    want = published(name)["active_params"]
    got = spec(name).active_params
    assert abs(got - want) / want < TOLERANCE, (got, want)


def test_gpt_oss_active_count_leaves_the_input_embedding_out():
    s = spec("gpt-oss-120b")
    got = s.active_params - s.params.embedding
    assert abs(got - 5_130_000_000) / 5_130_000_000 < TOLERANCE


@pytest.mark.parametrize(
    ("name", "family", "full", "windowed", "window"),
    [
        ("llama-3.1-8b", "dense", 32, 0, 0),
        ("mixtral-8x7b", "moe", 32, 0, 0),
        ("deepseek-v3", "mla", 61, 0, 0),
        ("gpt-oss-120b", "hybrid", 18, 18, 128),
        ("gemma-2-27b", "hybrid", 23, 23, 4096),
        ("gemma-3-27b", "hybrid", 10, 52, 1024),
        ("llama-4-scout", "hybrid", 12, 36, 8192),
        ("qwen3-next-80b-a3b", "hybrid", 12, 0, 0),
    ],
)
def test_layer_kinds_and_windows(name, family, full, windowed, window):
    s = spec(name)
    assert s.family == family
    assert s.layers_of("full") == full and s.layers_of("sliding", "chunked") == windowed
    assert s.sliding_window == window


def test_windowed_layers_hold_at_most_their_window():
    gemma = spec("gemma-3-27b")
    per_layer = 2 * 16 * 128 * 2
    short, long = gemma.kv_bytes_of_sequence(512), gemma.kv_bytes_of_sequence(100_000)
    assert short == 62 * per_layer * 512  # every layer holds a short sequence whole
    assert long == 10 * per_layer * 100_000 + 52 * per_layer * 1024


def test_linear_attention_keeps_a_fixed_state():
    nxt = spec("qwen3-next-80b-a3b")
    # 36 DeltaNet layers: 32 value heads x 128 x 128 state + conv state of 3 steps x 8192
    per_layer = 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)
    assert nxt.state_bytes == 36 * per_layer * 2
    assert nxt.kv_bytes_of_sequence(10) - nxt.kv_bytes_of_sequence(0) == 10 * 24576


def test_checkpoint_quantization_is_read_as_a_fact():
    ds = spec("deepseek-v3")
    assert ds.checkpoint_claims() == {"quant_config.quant_algo": "FP8_BLOCK_SCALES"}
    # FP8 weights (one FP32 scale per 128 x 128 block), BF16 embedding and head
    assert 0.99 < ds.weight_bytes() / (ds.num_params - 2 * ds.params.embedding) < 1.01
    oss = spec("gpt-oss-120b")
    assert oss.checkpoint_claims() == {"quant_config.quant_algo": "MXFP4"}
    assert oss.facts()["model.weight_bytes"] == oss.weight_bytes()
    # experts in 4.25 bits, the rest (attention, router, embedding, head) in bf16:
    # about 61 GiB, as the checkpoint published for one 80 GB GPU
    assert 60 << 30 < oss.weight_bytes() < 62 << 30
    assert spec("llama-3.1-8b").checkpoint_claims() == {}
