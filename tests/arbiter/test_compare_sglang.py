"""`compare()` end to end on SGLang 0.5, against the dialects' shared contract
(`check_sglang(config, *, model, device, gpus) -> Verdict`). Skipped until the SGLang
dialect is merged; each expectation is a verdict of SGLang 0.5.23 itself, recorded in the
corpus (tests/corpus/sglang/, checked by benchmarks/oracle_sglang.py) or read from its
argument hooks (arg_groups/lora_hook.py, speculative_hook.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("arbiter.engines.sglang.native")

from arbiter.compare import compare, parse_intent, read_intent  # noqa: E402
from arbiter.compare.result import CHANGED, CONFLICTS, HOLDS  # noqa: E402
from arbiter.dialects.surface import load_surface  # noqa: E402

H100 = {"model": "llama-3.1-8b", "device": "H100-80GB"}
SURFACE = load_surface("sglang-0.5")
EAGLE = {"kind": "mtp", "draft_tokens": 3}


def intent(hard=None, soft=None, **facts):
    return parse_intent({**H100, **facts, "hard": hard or {}, "soft": soft or {}})


def fields(config):
    """The written config by SGLang field name, whatever spelling the dialect writes."""
    out = {}
    for key, found in SURFACE.check_keys(config).items():
        value = config[key]
        out[found.field.name] = (not value) if found.negated else value
    return out


def test_chat_example_holds_on_sglang_with_its_wishes():
    comparison = compare(read_intent("examples/compare/chat.yaml"), ["sglang", "mlc"])
    sglang = comparison["sglang"]
    assert sglang.status in (HOLDS, CHANGED), sglang.to_json()
    assert not sglang.dropped  # corpus sglang-ngram and sglang-kv-fp8-e4m3: accept
    written = fields(sglang.config)
    assert written["disable_radix_cache"] is False
    assert written["context_length"] == 8192 and written["max_running_requests"] == 64
    assert written["speculative_algorithm"] == "NGRAM"
    assert sglang.kv_tokens is not None and sglang.kv_tokens > 0
    assert comparison["mlc"].status == CHANGED  # no n-gram, no FP8 KV option in MLC


def test_a_chain_of_draft_steps_is_not_adjusted():
    # with top-k 1 SGLang makes the draft tokens num_steps + 1 (corpus
    # sglang-eagle-topk1-draft-adjusted); the mapping writes exactly that
    result = compare(intent({"speculative": EAGLE}), ["sglang"])["sglang"]
    assert result.holds
    assert not [c for c in result.changes if "draft_tokens" in c.replace("-", "_")]
    assert fields(result.config)["speculative_num_draft_tokens"] == 4


def test_lora_with_a_draft_model_conflicts_on_sglang():
    # lora_hook.check_lora_speculative_compatibility: LoRA takes NGRAM, EAGLE, EAGLE3 ...
    # but not STANDALONE (the draft-model algorithm)
    draft = {"kind": "draft_model", "draft_tokens": 4, "draft_model": "/models/small"}
    result = compare(
        intent({"lora": {"max_rank": 16, "adapters": 2}, "speculative": draft}), ["sglang"]
    )["sglang"]
    assert result.status == CONFLICTS and result.conflicts
    as_wish = compare(
        intent({"lora": {"max_rank": 16, "adapters": 2}}, {"speculative": draft}), ["sglang"]
    )["sglang"]
    assert set(as_wish.dropped) == {"speculative"} and as_wish.status == CHANGED


def test_context_beyond_the_model_conflicts():
    # corpus sglang-context-length-above-model
    result = compare(intent({"context_length": 262144}), ["sglang"])["sglang"]
    assert result.status == CONFLICTS


def test_attention_dp_divides_the_chunk():
    # corpus sglang-attn-dp-8: _handle_data_parallelism turns the 8192 chunk into 1024
    result = compare(
        intent(
            {"tensor_parallel": 8, "attention_dp": True, "token_budget": 8192},
            model="mixtral-8x7b",
            gpus=8,
        ),
        ["sglang"],
    )["sglang"]
    assert result.status == CHANGED
    assert [c for c in result.changes if "chunked" in c.replace("-", "_")]
