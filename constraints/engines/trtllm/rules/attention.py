"""Attention plugin rules: context FMHA, its paged and FP8 variants, StreamingLLM, sinks.

All of them are checks of the TensorRT-engine path (the builder and the GPT attention
plugin of a built engine), so they are scoped to the `tensorrt` backend."""

from __future__ import annotations

from constraints.expr import all_of, eq, ge, gt, implies, ne, one_of
from constraints.paths import PLUGIN_CONFIG
from constraints.rules._sources import ARBITRATOR, TENSORRT, arbitrator, batch_manager, builder
from constraints.rules.base import Rule, Source

PAGED = PLUGIN_CONFIG.use_paged_context_fmha
FP8_FMHA = PLUGIN_CONFIG.use_fp8_context_fmha
FMHA = PLUGIN_CONFIG.context_fmha
FP8_WORKFLOW = ("FP8", "W4A8_AWQ", "NVFP4")


def fp8_kv():
    """The KV cache is stored in FP8 (by KV quantization or by the KV dtype)."""
    return one_of("quant_config.kv_cache_quant_algo", ["FP8"]) | eq("kv_cache_config.dtype", "fp8")


RULES = [
    Rule(
        id="attention.streamingllm-no-paged-context-fmha",
        text="StreamingLLM needs paged context FMHA off",
        source=builder("T2, T10"),
        scope=TENSORRT,
        expr=implies(eq("plugin_config.streamingllm", True), eq(PAGED, False)),
        feasible={"plugin_config.streamingllm": True, PAGED: False},
        infeasible={"plugin_config.streamingllm": True, PAGED: True},
    ),
    Rule(
        id="attention.no-context-fmha-no-variants",
        text="without context FMHA, neither paged nor FP8 context FMHA can be on",
        source=builder("T17"),
        scope=TENSORRT,
        expr=implies(eq(FMHA, False), all_of(eq(PAGED, False), eq(FP8_FMHA, False))),
        feasible={FMHA: False, PAGED: False},
        infeasible={FMHA: False, PAGED: True},
    ),
    Rule(
        id="attention.fp8-context-fmha-needs-fp8-workflow",
        text="FP8 context FMHA needs an FP8 quantization workflow (FP8, W4A8_AWQ or NVFP4)",
        source=builder("T18"),
        scope=TENSORRT,
        expr=implies(eq(FP8_FMHA, True), one_of("quant_config.quant_algo", FP8_WORKFLOW)),
        feasible={FP8_FMHA: True, "quant_config.quant_algo": "FP8"},
        infeasible={FP8_FMHA: True, "quant_config.quant_algo": None},
    ),
    Rule(
        id="attention.fp8-kv-paged-context-needs-fp8-fmha",
        text="paged context FMHA over an FP8 KV cache needs FP8 context FMHA",
        source=builder("T18, T20"),
        scope=TENSORRT,
        expr=implies(all_of(eq(PAGED, True), fp8_kv()), eq(FP8_FMHA, True)),
        feasible={PAGED: True, "quant_config.kv_cache_quant_algo": "FP8", FP8_FMHA: True},
        infeasible={PAGED: True, "quant_config.kv_cache_quant_algo": "FP8", FP8_FMHA: False},
    ),
    Rule(
        id="attention.fp8-context-fmha-needs-ada",
        text="FP8 context FMHA runs only on Ada and Hopper or newer (sm >= 89)",
        source=builder("T19"),
        scope=TENSORRT,
        expr=implies(eq(FP8_FMHA, True), ge("device.sm", 89)),
        feasible={"device.sm": 90, FP8_FMHA: True},
        infeasible={"device.sm": 80, FP8_FMHA: True},
    ),
    Rule(
        id="attention.fp8-paged-context-fmha-needs-fp8-kv",
        text="FP8 paged context FMHA must be used together with an FP8 KV cache",
        source=builder("T20"),
        scope=TENSORRT,
        expr=implies(all_of(eq(PAGED, True), eq(FP8_FMHA, True)), fp8_kv()),
        feasible={PAGED: True, FP8_FMHA: True, "quant_config.kv_cache_quant_algo": "FP8"},
        infeasible={
            PAGED: True,
            FP8_FMHA: True,
            "quant_config.kv_cache_quant_algo": None,
            "kv_cache_config.dtype": "auto",
        },
    ),
    Rule(
        id="attention.int8-kv-no-paged-context-fmha",
        text="paged context FMHA does not work with an INT8 KV cache",
        source=builder("T21"),
        scope=TENSORRT,
        expr=implies(eq("quant_config.kv_cache_quant_algo", "INT8"), eq(PAGED, False)),
        feasible={"quant_config.kv_cache_quant_algo": "INT8", PAGED: False},
        infeasible={"quant_config.kv_cache_quant_algo": "INT8", PAGED: True},
    ),
    Rule(
        id="attention.paged-context-fmha-needs-onboarding",
        text="with paged context FMHA, offloaded KV blocks must be onboarded",
        source=batch_manager("T38"),
        scope=TENSORRT,
        expr=implies(eq(PAGED, True), eq("kv_cache_config.onboard_blocks", True)),
        feasible={"kv_cache_config.onboard_blocks": False, PAGED: False},
        infeasible={"kv_cache_config.onboard_blocks": False, PAGED: True},
    ),
    Rule(
        id="attention.streamingllm-needs-window-and-sinks",
        text="StreamingLLM needs max_attention_window set and sink_token_length > 0",
        source=arbitrator("T3"),
        scope=ARBITRATOR,
        expr=implies(
            eq("plugin_config.streamingllm", True),
            all_of(
                ne("kv_cache_config.max_attention_window", None),
                gt("kv_cache_config.sink_token_length", 0),
            ),
        ),
        feasible={
            "plugin_config.streamingllm": True,
            "kv_cache_config.max_attention_window": 4096,
            "kv_cache_config.sink_token_length": 4,
        },
        infeasible={
            "plugin_config.streamingllm": True,
            "kv_cache_config.max_attention_window": 4096,
            "kv_cache_config.sink_token_length": 0,
        },
    ),
    Rule(
        id="attention.sinks-no-paged-context-fmha",
        text="sink tokens (sink_token_length > 0) cannot be used with paged context FMHA",
        source=Source(
            "TensorRT-LLM",
            "cpp/tensorrt_llm/plugins/gptAttentionCommon/gptAttentionCommon.cpp (runtime check)",
            "audit 3 #5",
        ),
        scope=TENSORRT,
        expr=implies(gt("kv_cache_config.sink_token_length", 0), eq(PAGED, False)),
        feasible={"kv_cache_config.sink_token_length": 4, PAGED: False},
        infeasible={"kv_cache_config.sink_token_length": 4, PAGED: True},
    ),
]


# Not shipped: the condition comes from NVIDIA/TensorRT-LLM#8862, a pull request that was
# closed without merging (a reviewer disputed the premise), and no such check exists in
# the stored sources of _torch/attention_backend/trtllm.py; it also concerned the PyTorch
# flow while naming a TensorRT plugin option. Kept here so that the decision is visible.
HELD_BACK = [
    Rule(
        id="attention.awq-fp8-kv-no-paged-context-fmha",
        text="W4A16 AWQ weights with an FP8 KV cache have no paged context FMHA kernel",
        source=Source("TensorRT-LLM", "PR NVIDIA/TensorRT-LLM#8862 (closed, not merged)", "T64"),
        scope=TENSORRT,
        expr=implies(
            all_of(eq("quant_config.quant_algo", "W4A16_AWQ"), fp8_kv()), eq(PAGED, False)
        ),
        feasible={
            "quant_config.quant_algo": "W4A16_AWQ",
            "quant_config.kv_cache_quant_algo": "FP8",
            PAGED: False,
        },
        infeasible={
            "quant_config.quant_algo": "W4A16_AWQ",
            "quant_config.kv_cache_quant_algo": "FP8",
            PAGED: True,
        },
    ),
]
