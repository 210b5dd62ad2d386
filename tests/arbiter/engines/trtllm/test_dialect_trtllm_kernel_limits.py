"""Kernel limits of TensorRT-LLM that hang on model and machine facts: an NVFP4 checkpoint
needs Blackwell; on the 1.0 line the default MoE backend (CUTLASS) has no FP8 block-scale
path on Blackwell; and the LLM API's max_batch_size-above-max_num_tokens warning changes
nothing. Plus MLC's refusal of max_single_sequence_length for an RNN-state model."""

from __future__ import annotations

from pathlib import Path

from arbiter.engines.mlc import native as mlc
from arbiter.engines.trtllm.defaults import moe_backend_default
from arbiter.engines.trtllm.native import check_trtllm

MODELS = Path(__file__).parents[3] / "fixtures" / "models"
NVFP4 = MODELS / "llama-3.3-70b-nvfp4.json"
DEEPSEEK_FP8 = MODELS / "deepseek-r1-0528-fp8.json"
PARALLEL_8 = {"tensor_parallel_size": 8, "moe_expert_parallel_size": 8}


def test_nvfp4_checkpoint_is_refused_on_hopper_and_runs_on_blackwell():
    hopper = check_trtllm({}, model=NVFP4, device="H200")
    assert hopper.verdict == "reject"
    assert "quant.nvfp4-needs-blackwell" in hopper.rules
    blackwell = check_trtllm({}, model=NVFP4, device="B200")
    assert blackwell.verdict == "accept", blackwell.reasons


def test_nvfp4_on_hopper_is_refused_on_the_tensorrt_backend_too():
    verdict = check_trtllm({"backend": "tensorrt"}, model=NVFP4, device="H200")
    assert verdict.verdict == "reject"
    assert "quant.nvfp4-needs-blackwell" in verdict.rules


def test_release_default_moe_backend_comes_from_the_field_list():
    assert (moe_backend_default("1.0"), moe_backend_default("1.2")) == ("CUTLASS", "AUTO")


def test_fp8_block_scales_on_b200_needs_a_moe_backend_on_1_0():
    default = check_trtllm(
        PARALLEL_8, model=DEEPSEEK_FP8, device="B200", gpus=8, profile="trtllm-1.0"
    )
    assert default.verdict == "reject"
    assert default.rules == ("moe.fp8-block-scales-not-cutlass-on-blackwell",)
    assert "engine default moe_config.backend" in default.reasons[0]
    explicit = {**PARALLEL_8, "moe_config": {"backend": "DEEPGEMM"}}
    chosen = check_trtllm(explicit, model=DEEPSEEK_FP8, device="B200", gpus=8, profile="trtllm-1.0")
    assert chosen.verdict == "accept", chosen.reasons
    assert chosen.config["moe_config"] == {"backend": "DEEPGEMM"}
    # the engine's own default is pinned, not written into a config that did not name it
    plain = check_trtllm({"max_batch_size": 8}, profile="trtllm-1.0")
    assert plain.config == {"max_batch_size": 8}


def test_fp8_block_scales_default_moe_backend_elsewhere():
    # Hopper runs CUTLASS; 1.2's default (AUTO) picks a backend itself
    hopper = check_trtllm(
        PARALLEL_8, model=DEEPSEEK_FP8, device="H200", gpus=8, profile="trtllm-1.0"
    )
    assert hopper.verdict == "accept", hopper.reasons
    later = check_trtllm(
        PARALLEL_8, model=DEEPSEEK_FP8, device="B200", gpus=8, profile="trtllm-1.2"
    )
    assert later.verdict == "accept", later.reasons
    assert "moe_config" not in later.config  # the engine's default is not written out


def test_batch_above_token_budget_is_a_warning_not_a_change():
    verdict = check_trtllm({"max_num_tokens": 1024, "max_seq_len": 1024})
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert verdict.resolution.value("build_config.max_batch_size") == 2048
    assert any("max_batch_size [2048]" in w for w in verdict.warnings)
    quiet = check_trtllm({"max_num_tokens": 4096, "max_batch_size": 64})
    assert not any("max_batch_size [" in w for w in quiet.warnings)


def test_mlc_rnn_state_model_takes_no_max_single_sequence_length():
    refused = mlc.refusals({"max_single_sequence_length": 4096}, "Rwkv6ForCausalLM")
    assert len(refused) == 1 and "RNN state does not support" in refused[0]
    assert mlc.refusals({}, "Rwkv6ForCausalLM") == []
    assert mlc.refusals({"max_single_sequence_length": 4096}, "LlamaForCausalLM") == []


def test_cuda_graphs_above_max_batch_size_are_a_warning_not_a_conflict():
    # TorchLlmArgs accepts both; the PyTorch engine captures graphs only up to the batch
    graphs = {"max_batch_size": 256, "enable_padding": True}
    verdict = check_trtllm({"max_batch_size": 64, "cuda_graph_config": graphs})
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert verdict.config["cuda_graph_config"] == graphs  # written back as given
    assert any("captures them only up to 64" in w for w in verdict.warnings)
    # with drafts, the token budget bounds the decode batch: 1024 // (1 + 3) = 256
    spec = {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    drafted = check_trtllm(
        {"max_num_tokens": 1024, "cuda_graph_config": graphs, "speculative_config": spec}
    )
    assert not any("captures them only" in w for w in drafted.warnings), drafted.warnings
    tighter = check_trtllm(
        {"max_num_tokens": 512, "cuda_graph_config": graphs, "speculative_config": spec}
    )
    assert any("only up to 128" in w for w in tighter.warnings), tighter.warnings
    quiet = check_trtllm({"max_batch_size": 64})  # the default graphs are not the user's
    assert not any("captures them only" in w for w in quiet.warnings)


def test_cache_transceiver_config_is_carried_with_its_reason():
    config = {"cache_transceiver_config": {"backend": "UCX", "max_tokens_in_buffer": 4096}}
    verdict = check_trtllm(config)
    assert verdict.verdict == "accept"
    assert verdict.config["cache_transceiver_config"] == config["cache_transceiver_config"]
    assert "disaggregated serving" in verdict.not_arbitrated["cache_transceiver_config"]
    bad = check_trtllm({"cache_transceiver_config": {"backend": "RDMA"}})
    assert bad.verdict == "reject" and "cache_transceiver_config.backend" in bad.reasons[0]


def test_block_table_counts_the_draft_tokens_a_tensorrt_engine_adds():
    """builder.py build() grows a speculative engine's max_seq_len by max_draft_len (EAGLE:
    and num_eagle_layers); the int32 block-table check counts them there only."""
    from constraints.rules import every_rule

    rule = next(r for r in every_rule() if r.id == "kv.block-table-fits-int32")
    # (2 * 4096 - 1) * (8389601 + 31) is just within 32 * (2^31 - 1); 4 tokens more are not
    edge = {
        "build_config.max_batch_size": 4096,
        "build_config.max_seq_len": 8389601,
        "kv_cache_config.tokens_per_block": 32,
        "build_config.max_draft_len": 4,
        "speculative_config.num_eagle_layers": 4,
        "speculative_config.max_total_draft_tokens": 0,
    }
    plain = {
        **edge,
        "runtime_config.backend": "tensorrt",
        "speculative_config.decoding_type": "none",
    }
    assert rule.expr.evaluate(plain)
    medusa = {**plain, "speculative_config.decoding_type": "Medusa"}
    assert not rule.expr.evaluate(medusa)
    assert rule.expr.evaluate({**medusa, "build_config.max_seq_len": 8389597})  # 4 fewer
    eagle = {
        **plain,
        "speculative_config.decoding_type": "Eagle",
        "build_config.max_seq_len": 8389597,
    }
    assert not rule.expr.evaluate(eagle)  # + num_eagle_layers
    # the PyTorch backend builds nothing, but its KV cache manager holds max_seq_len + 1
    # (overlap scheduler) + 2 x the drafts (create_py_executor): 8 + 1 tokens fewer fit
    torch = {
        **medusa,
        "runtime_config.backend": "pytorch",
        "runtime_config.disable_overlap_scheduler": False,
        "speculative_config.eagle3": False,
        "speculative_config.eagle3_one_model": True,
    }
    assert not rule.expr.evaluate(torch)
    assert rule.expr.evaluate({**torch, "build_config.max_seq_len": 8389601 - 9})
    assert not rule.expr.evaluate({**torch, "build_config.max_seq_len": 8389601 - 8})
    serial = {**torch, "runtime_config.disable_overlap_scheduler": True}
    assert rule.expr.evaluate({**serial, "build_config.max_seq_len": 8389597})  # + 4 drafts


def test_a_sequence_limit_within_the_token_budget_needs_no_chunked_prefill():
    # llm.py _check_arguments refuses a prompt per request; with max_seq_len 128 no
    # admissible prompt exceeds max_num_tokens 256, whatever max_input_len says
    short = check_trtllm({"max_num_tokens": 256, "max_seq_len": 128}, profile="trtllm-1.0")
    assert short.verdict == "accept", (short.reasons, short.changes)
    long = check_trtllm({"max_num_tokens": 256, "max_seq_len": 4096}, profile="trtllm-1.0")
    assert long.verdict == "adjust"
    assert "enable_chunked_prefill: False -> True" in long.changes
