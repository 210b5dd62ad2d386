"""`compare()` end to end on TensorRT-LLM 1.2 and MLC, whose checkers are on this branch:
holds, holds with changes, conflicts on one engine only, soft wishes dropped with the
engine's reasons, the KV capacity each engine gives, and engines that cannot be checked."""

from __future__ import annotations

import pytest

from arbiter.compare import compare, parse_intent, read_intent
from arbiter.compare import run as compare_run
from arbiter.compare.result import CHANGED, CONFLICTS, ERROR, HOLDS, UNAVAILABLE
from arbiter.dialects import DIALECTS, Entry
from arbiter.engines.mlc.native import check_mlc
from arbiter.engines.trtllm.native import check_trtllm

TWO = ("trtllm", "mlc")
H100 = {"model": "llama-3.1-8b", "device": "H100-80GB"}
EAGLE3 = {"kind": "eagle3", "draft_tokens": 3, "draft_model": "/models/eagle3"}


def intent(hard=None, soft=None, **facts):
    return parse_intent({**H100, **facts, "hard": hard or {}, "soft": soft or {}})


def test_chat_example_holds_on_trtllm_and_gives_way_on_mlc():
    comparison = compare(read_intent("examples/compare/chat.yaml"), TWO)
    trt, mlc = comparison["trtllm"], comparison["mlc"]
    assert trt.status == HOLDS and trt.checks == 1 and not trt.dropped
    assert trt.config["kv_cache_config"] == {"enable_block_reuse": True, "dtype": "fp8"}
    assert trt.config["speculative_config"] == {"decoding_type": "NGram", "max_draft_len": 4}
    assert mlc.status == CHANGED
    assert set(mlc.dropped) == {"fp8_kv", "speculative"}
    assert "n-gram" in mlc.dropped["speculative"]
    assert mlc.config["prefix_cache_mode"] == "radix" and mlc.config["max_num_sequence"] == 64
    assert comparison.all_hold and comparison.exit_code == 0
    # the capacity is the checker's own resolution's
    direct = check_trtllm(
        trt.config, model=comparison.intent.model, device="H100-80GB"
    ).resolution.capacity
    assert trt.kv_tokens == direct.kv_tokens > 0
    mlc_direct = check_mlc(mlc.config, model=comparison.intent.model, device="H100-80GB")
    assert mlc.kv_tokens == mlc_direct.resolution.capacity.kv_tokens > 0


def test_fp8_kv_about_doubles_the_capacity():
    plain = compare(intent({"context_length": 8192}), ["trtllm"])["trtllm"]
    fp8 = compare(intent({"context_length": 8192, "fp8_kv": True}), ["trtllm"])["trtllm"]
    assert 1.9 < fp8.kv_tokens / plain.kv_tokens < 2.1


def test_a_rule_conflict_on_one_engine_only():
    comparison = compare(intent({"kv_page_size": 32, "prefix_caching": True}), TWO)
    assert comparison["trtllm"].status == HOLDS
    mlc = comparison["mlc"]
    assert mlc.status == CONFLICTS and mlc.rules == ("mlc.kv-page-size-16",)
    assert "mlc.kv_cache_page_size" in mlc.conflicts[0]
    assert mlc.kv_tokens is None and mlc.config["kv_cache_page_size"] == 32
    assert comparison.exit_code == 1


def test_a_hard_feature_the_engine_lacks_is_a_conflict():
    comparison = compare(read_intent("examples/compare/lora_l4.yaml"), TWO)
    assert comparison["trtllm"].status == HOLDS
    assert comparison["trtllm"].config["lora_config"] == {"max_lora_rank": 64, "max_loras": 8}
    mlc = comparison["mlc"]
    assert mlc.status == CONFLICTS and set(mlc.missing) == {"lora"}
    assert "LoRA" in mlc.missing["lora"] and mlc.kv_tokens is None
    assert not comparison.all_hold


def test_hard_features_that_conflict_through_trtllm_rules():
    result = compare(intent({"pipeline_parallel": 2, "speculative": EAGLE3}, gpus=2), ["trtllm"])[
        "trtllm"
    ]
    assert result.status == CONFLICTS
    assert "pairs.t58.pipeline-parallel-x-spec-linear" in result.rules
    assert "llm_args.pipeline_parallel_size" in result.conflicts[0]
    assert result.config["speculative_config"]["decoding_type"] == "Eagle3"  # as asked


def test_soft_wish_dropped_with_the_engines_reason():
    comparison = compare(read_intent("examples/compare/pipeline_eagle3.yaml"), TWO)
    trt = comparison["trtllm"]
    assert trt.status == CHANGED and set(trt.dropped) == {"speculative"}
    assert "pairs.t58.pipeline-parallel-x-spec" in trt.dropped["speculative"]
    assert "speculative_config" not in trt.config
    assert trt.config["kv_cache_config"] == {"dtype": "fp8"}  # the other wish holds
    assert trt.checks == 4  # all, hard only, then each wish
    mlc = comparison["mlc"]
    assert set(mlc.dropped) == {"speculative", "fp8_kv"} and "EAGLE-3" in mlc.dropped["speculative"]
    assert trt.kv_tokens > 0 and mlc.kv_tokens > 0


def test_soft_wishes_give_way_in_the_order_written():
    wishes = {"pipeline_parallel": 2, "speculative": EAGLE3}
    first = compare(intent(soft=wishes, gpus=2), ["trtllm"])["trtllm"]
    assert set(first.dropped) == {"speculative"} and first.config["pipeline_parallel_size"] == 2
    swapped = dict(reversed(list(wishes.items())))
    second = compare(intent(soft=swapped, gpus=2), ["trtllm"])["trtllm"]
    assert set(second.dropped) == {"pipeline_parallel"}
    assert second.config["speculative_config"]["decoding_type"] == "Eagle3"
    assert "pipeline_parallel_size" not in second.config


def test_engine_adjustments_are_changes():
    # a prefill budget below batch x (draft + 1) makes TensorRT-LLM chunk the context
    result = compare(
        intent(
            {"batch": 256, "token_budget": 128, "speculative": {"kind": "ngram", "draft_tokens": 4}}
        ),
        ["trtllm"],
    )["trtllm"]
    assert result.status == CHANGED and not result.dropped
    assert "enable_chunked_prefill: False -> True" in result.changes


def test_a_checker_that_is_not_importable_is_reported(monkeypatch):
    monkeypatch.setattr(DIALECTS, "_loaded", {})
    monkeypatch.setitem(
        DIALECTS.entries,
        "vllm",
        Entry("vllm", "vLLM", "arbiter.engines.vllm", "arbiter.engines.no_such_vllm"),
    )
    monkeypatch.setitem(
        DIALECTS.entries,
        "sglang",
        Entry("sglang", "SGLang", "arbiter.engines.sglang", "arbiter.engines.mlc.judge"),
    )
    comparison = compare(intent({"prefix_caching": True}), ["vllm", "sglang", "mlc"])
    vllm, sglang = comparison["vllm"], comparison["sglang"]
    assert vllm.status == UNAVAILABLE and "no_such_vllm is not importable" in vllm.reason
    assert vllm.config == {"enable-prefix-caching": True}  # the native config, unchecked
    assert sglang.status == UNAVAILABLE and "has no DIALECT" in sglang.reason
    assert comparison["mlc"].status == HOLDS and comparison.exit_code == 1


def test_a_checker_fault_is_an_error_not_a_traceback(monkeypatch):
    def broken(config, **_):
        raise RuntimeError("boom")

    monkeypatch.setattr(compare_run, "checker", lambda engine: (broken, None))
    result = compare(intent({"batch": 8}), ["trtllm"])["trtllm"]
    assert result.status == ERROR and "RuntimeError: boom" in result.reason


def test_unknown_engines_are_bad_input():
    from arbiter.compare import IntentError

    with pytest.raises(IntentError) as caught:
        compare(intent({"batch": 8}), "trtllm,tgi,trtllm")
    reasons = [p.reason for p in caught.value.problems]
    assert reasons == ["unknown engine", "an engine is named twice"]


def test_json_form_round_trips_the_results():
    comparison = compare(intent({"batch": 8}, {"fp8_kv": True}), TWO)
    data = comparison.to_json()
    assert [r["engine"] for r in data["results"]] == ["trtllm", "mlc"]
    assert data["intent"]["hard"] == {"batch": 8} and data["all_hold"] is True
    assert data["results"][1]["dropped"]["fp8_kv"].startswith("MLC fixes")
    assert data["results"][0]["kv_tokens"] == comparison["trtllm"].kv_tokens


def test_compare_reads_a_file_or_a_mapping():
    from_file = compare("examples/compare/chat.yaml", ["trtllm"])
    assert (
        from_file.to_json()
        == compare(read_intent("examples/compare/chat.yaml"), ["trtllm"]).to_json()
    )
    from_mapping = compare({**H100, "hard": {"batch": 4}}, ["mlc"])
    assert from_mapping["mlc"].config["max_num_sequence"] == 4
