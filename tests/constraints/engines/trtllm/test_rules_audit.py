"""The rules the upstream audit (shared/reference/rules-audit.md) found wrong, over-strict or
under-strict, and the missing rules it ranked: each on the release line it belongs to."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, arbitrate, func, setup
from constraints.rules import every_rule

TRT = "trtllm-tensorrt"
S = "speculative_config."
MTP = {S + "decoding_type": "MTP", S + "num_nextn_predict_layers": 1}


def conflict_rules(claims, **kw):
    with pytest.raises(ConflictError) as err:
        arbitrate(claims, **kw)
    return {r for c in err.value.conflicts for r in c.rules}


def test_mtp_conflicts_with_the_models_sliding_window_not_an_explicit_window():
    explicit = func("window", {"kv_cache_config.max_attention_window": 4096})
    r = arbitrate([func("mtp", MTP), explicit])
    assert r.value("kv_cache_config.max_attention_window") == 4096
    swa = setup("model", {"model.sliding_window": 4096})
    assert "pairs.t56.mtp-x-sliding-window" in conflict_rules([func("mtp", MTP), swa])


def test_spec_legacy_is_not_the_tensorrt_engine_methods():
    # Medusa with pipeline parallelism on a TensorRT engine: the matrix says nothing
    medusa = {S + "decoding_type": "Medusa", "build_config.max_draft_len": 4}
    pp = {"parallel_config.pipeline_parallel_size": 2}
    gpus = setup("gpus", {"device.count": 2})
    r = arbitrate([func("medusa", medusa), func("pp", pp), gpus], profile=TRT)
    assert r.value("parallel_config.pipeline_parallel_size") == 2
    assert not [x for x in every_rule() if x.id.endswith("spec-legacy") and "Medusa" in str(x.expr)]


def test_the_kv_dtype_syncs_the_kv_quantization_instead_of_conflicting():
    r = arbitrate([func("fp8", {"kv_cache_config.dtype": "fp8"})])
    assert r.value("quant_config.kv_cache_quant_algo") == "FP8"
    assert r.provenance("quant_config.kv_cache_quant_algo").rules == ("kv.dtype-matches-kv-quant",)
    # another non-auto dtype next to a KV quantization only warns upstream
    both = {"kv_cache_config.dtype": "float16", "quant_config.kv_cache_quant_algo": "INT8"}
    arbitrate([func("both", both)])


def test_mamba_keeps_a_paged_kv_type_with_paged_state():
    mamba = setup("model", {"model.architecture": "MambaForCausalLM"})
    upstream = {
        "plugin_config.paged_kv_cache": False,
        "plugin_config.paged_state": True,
        "build_config.kv_cache_type": "PAGED",
        "runtime_config.batching_type": "INFLIGHT",
    }
    arbitrate([mamba, func("upstream", upstream)], profile=TRT)
    unpaged = {"plugin_config.paged_state": False, "build_config.kv_cache_type": "PAGED"}
    found = conflict_rules([mamba, func("unpaged", unpaged)], profile=TRT)
    assert "build.kv-cache-type-matches-paged-kv" in found


@pytest.mark.parametrize("algo", ["W4A8_AWQ", "FP8_PER_CHANNEL_PER_TOKEN", "W8A16"])
def test_blackwell_refuses_int4_weight_only_and_per_channel_modes(algo):
    b200 = setup("gpu", {"device.sm": 100})
    found = conflict_rules([b200, func("q", {"quant_config.quant_algo": algo})], profile=TRT)
    assert found == {"quant.blackwell-no-int8"}
    arbitrate([b200, func("q", {"quant_config.quant_algo": "NVFP4"})], profile=TRT)


def test_the_trtllm_sampler_refuses_any_eagle_on_pytorch():
    eagle = {S + "decoding_type": "Eagle", "build_config.max_draft_len": 3}  # no eagle3 flag
    sampler = {"runtime_config.sampler_type": "TRTLLMSampler"}
    found = conflict_rules([func("eagle", eagle), func("sampler", sampler)])
    assert "pairs.t56.trtllm-sampler-x-eagle3-one-model" in found


def test_inflight_batching_accepts_a_disabled_kv_cache():
    no_kv = {
        "plugin_config.paged_kv_cache": False,
        "build_config.kv_cache_type": "DISABLED",
        "runtime_config.batching_type": "INFLIGHT",
    }
    arbitrate([func("no_kv", no_kv)], profile=TRT)
    continuous = {**no_kv, "build_config.kv_cache_type": "CONTINUOUS"}
    assert "runtime.inflight-batching-needs-plugins" in conflict_rules(
        [func("continuous", continuous)], profile=TRT
    )


def test_fused_mlp_is_dropped_for_fp8_recurrentgemma():
    rg = setup("model", {"model.architecture": "RecurrentGemmaForCausalLM"})
    fused = {"plugin_config.use_fused_mlp": True, "quant_config.quant_algo": "FP8"}
    assert "model.fused-mlp-support" in conflict_rules([rg, func("fused", fused)], profile=TRT)
    arbitrate([func("fused", fused)], profile=TRT)  # a Llama keeps it


def test_the_unverifiable_rule_is_held_back():
    from constraints.engines.trtllm.rules.attention import HELD_BACK

    assert "attention.awq-fp8-kv-no-paged-context-fmha" not in {r.id for r in every_rule()}
    assert [r.id for r in HELD_BACK] == ["attention.awq-fp8-kv-no-paged-context-fmha"]


def test_sink_tokens_forbid_paged_context_fmha_without_streamingllm():
    sinks = {"kv_cache_config.sink_token_length": 4, "plugin_config.use_paged_context_fmha": True}
    assert conflict_rules([func("sinks", sinks)], profile=TRT) == {
        "attention.sinks-no-paged-context-fmha"
    }


def test_overlap_scheduler_gives_way_to_draft_target_on_1_0_only():
    draft = {S + "decoding_type": "DraftTarget", "build_config.max_draft_len": 4}
    overlap = {"runtime_config.disable_overlap_scheduler": False}
    found = conflict_rules([func("draft", draft), func("overlap", overlap)], profile="trtllm-1.0")
    assert found == {"runtime.spec-without-overlap-scheduler"}
    arbitrate([func("draft", draft), func("overlap", overlap)])  # 1.2: every drafter overlaps
    r = arbitrate([func("draft", draft)], profile="trtllm-1.0")
    assert r.value("runtime_config.disable_overlap_scheduler") is True


def test_beam_search_with_a_cyclic_kv_cache_ends_with_the_arbitrator_era():
    claims = [
        func("beam", {"build_config.max_beam_width": 4}),
        func("window", {"kv_cache_config.max_attention_window": 4096}),
    ]
    assert "kv.beam-search-no-cyclic-kv" in conflict_rules(claims, profile="trtllm-0.10")
    arbitrate(claims, profile=TRT)


def test_vanilla_attention_makes_one_block_of_the_token_budget():
    r = arbitrate(
        [
            func("vanilla", {"runtime_config.attn_backend": "VANILLA"}),
            func("budget", {"build_config.max_num_tokens": 4096}),
        ]
    )
    assert r.value("kv_cache_config.tokens_per_block") == 4096
