"""`compare()` end to end on vLLM 0.33, against the dialects' shared contract
(`check_vllm(config, *, model, device, gpus) -> Verdict`). Skipped until the vLLM dialect
is merged; each expectation is a verdict of vLLM 0.33.0 itself, recorded in the corpus
(tests/corpus/vllm/, checked by benchmarks/oracle_vllm.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("arbiter.engines.vllm.native")

from arbiter.compare import compare, parse_intent, read_intent  # noqa: E402
from arbiter.compare.result import CHANGED, CONFLICTS, HOLDS  # noqa: E402
from arbiter.dialects.surface import load_surface  # noqa: E402

H100 = {"model": "llama-3.1-8b", "device": "H100-80GB"}
SURFACE = load_surface("vllm-0.33")


def intent(hard=None, soft=None, **facts):
    return parse_intent({**H100, **facts, "hard": hard or {}, "soft": soft or {}})


def fields(config):
    """The written config by vLLM field name, whatever spelling the dialect writes."""
    out = {}
    for key, found in SURFACE.check_keys(config).items():
        value = config[key]
        out[found.field.name] = (not value) if found.negated else value
    return out


def test_chat_example_holds_on_vllm_with_its_wishes():
    comparison = compare(read_intent("examples/compare/chat.yaml"), ["trtllm", "vllm"])
    vllm = comparison["vllm"]
    assert vllm.status in (HOLDS, CHANGED), vllm.to_json()
    assert not vllm.dropped  # an FP8 KV cache and n-gram speculation are both vLLM's
    written = fields(vllm.config)
    assert written["enable_prefix_caching"] is True
    assert written["max_model_len"] == 8192 and written["max_num_seqs"] == 64
    assert written["kv_cache_dtype"] == "fp8"
    assert vllm.kv_tokens is not None and vllm.kv_tokens > 0


def test_lora_rank_outside_vllms_ranks_conflicts_on_vllm_only():
    # corpus vllm-lora-rank-48: "argument --max-lora-rank: invalid choice: 48"
    comparison = compare(intent({"lora": {"max_rank": 48, "adapters": 2}}), ["trtllm", "vllm"])
    assert comparison["vllm"].status == CONFLICTS and comparison["vllm"].conflicts
    assert comparison["trtllm"].status == HOLDS
    ok = compare(intent({"lora": {"max_rank": 64, "adapters": 4}}), ["vllm"])["vllm"]
    assert ok.status in (HOLDS, CHANGED)  # corpus vllm-lora-rank-64: accept


def test_budget_below_the_batch_conflicts_on_vllm_and_is_adjusted_by_trtllm():
    # corpus vllm-budget-below-seqs: max_num_batched_tokens (128) must be >= max_num_seqs (256)
    comparison = compare(intent({"batch": 256, "token_budget": 128}), ["trtllm", "vllm"])
    assert comparison["vllm"].status == CONFLICTS
    assert comparison["trtllm"].holds


def test_context_beyond_the_model_is_dropped_as_a_wish():
    # corpus vllm-max-model-len-above-model: 262144 > the model's 131072 positions
    result = compare(intent({"batch": 8}, {"context_length": 262144}), ["vllm"])["vllm"]
    assert set(result.dropped) == {"context_length"} and result.status == CHANGED
    assert fields(result.config).get("max_model_len") != 262144
