"""The wrong outputs the TensorRT-LLM 1.x issue measured, each now giving the engine's
answer through `check_trtllm` (the corpus holds the same configurations with their
sources; these are the short, direct forms)."""

from __future__ import annotations

from pathlib import Path

from arbiter.engines.trtllm.native import check_trtllm
from constraints.profiles import get_profile
from constraints.rules import rules_for

MODELS = Path(__file__).parents[3] / "fixtures" / "models"


def test_an_fp8_checkpoint_keeps_fp8():
    # was: Llama-3.3-70B (an FP8 checkpoint) got quant_algo W4A8_AWQ
    verdict = check_trtllm({}, model=MODELS / "llama-3.3-70b-fp8.json", device="H200")
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("quant_config.quant_algo") == "FP8"


def test_an_mxfp4_checkpoint_keeps_mxfp4():
    # was: gpt-oss-120b (MXFP4) got FP8
    verdict = check_trtllm({}, model=MODELS / "gpt-oss-120b.json", device="H100-80GB")
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("quant_config.quant_algo") == "MXFP4"


def test_eagle3_on_pytorch_keeps_its_batch():
    # was: max_batch_size cut to 512 by a TensorRT builder limit
    spec = {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "/draft"}
    verdict = check_trtllm(
        {"speculative_config": spec}, model=MODELS / "llama-3.1-8b.json", device="H100-80GB"
    )
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert verdict.resolution.value("build_config.max_batch_size") == 2048
    compiled = {r.id for r in rules_for(get_profile("trtllm-1.2"))}
    assert "speculative.eagle-limits" not in compiled  # the TensorRT builder's limit
    assert "speculative.eagle-limits" in {r.id for r in rules_for(get_profile("trtllm-tensorrt"))}


def test_a_prebuilt_engine_runs_below_its_build_limits():
    # was: an engine built at batch 8 / 256 tokens with runtime limits 4 / 16 conflicted
    engine = {
        "version": "1.2",
        "pretrained_config": {
            "architecture": "LlamaForCausalLM",
            "dtype": "float16",
            "num_hidden_layers": 22,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "vocab_size": 32000,
            "max_position_embeddings": 2048,
        },
        "build_config": {"max_batch_size": 8, "max_num_tokens": 256, "max_seq_len": 2048},
    }
    verdict = check_trtllm(
        {"max_batch_size": 4, "max_num_tokens": 16}, profile="trtllm-tensorrt", engine=engine
    )
    assert verdict.verdict in ("accept", "adjust"), verdict.reasons
    assert not any("max_batch_size" in c or "max_num_tokens" in c for c in verdict.changes)
    assert verdict.resolution.value("build_config.max_batch_size") == 8  # the build's


def test_every_unknown_key_is_named_at_once_with_suggestions():
    # was: refused at the first unknown key (one file needed 8 rounds of fixes)
    verdict = check_trtllm(
        {"max_batch_sise": 8, "kv_cache_config": {"enable_blok_reuse": True}, "moe_backend": "X"}
    )
    assert verdict.verdict == "reject"
    assert set(verdict.unknown_keys) == {
        "max_batch_sise",
        "kv_cache_config.enable_blok_reuse",
        "moe_backend",
    }
    text = "\n".join(verdict.reasons)
    assert "'max_batch_size'" in text and "'kv_cache_config.enable_block_reuse'" in text
    assert "'moe_config.backend'" in text  # nested where the engine nests it
