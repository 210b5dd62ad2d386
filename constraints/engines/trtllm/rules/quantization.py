"""Quantization rules of the TensorRT engine builder (the FP8 attention rules live in
attention.py)."""

from __future__ import annotations

from constraints.expr import eq, ge, implies, lt, one_of
from constraints.rules._sources import TENSORRT, TRTLLM, builder
from constraints.rules.base import Rule, Source

# Hopper's precisions list no FP4 (support-matrix.md, "Precision": Hopper (SM90) FP32,
# FP16, BF16, FP8, INT8, INT4); the deployment recipes say NVFP4 runs on Blackwell only
SUPPORT_MATRIX = Source(
    "TensorRT-LLM",
    "docs/source/reference/support-matrix.md (Software, Precision) and "
    "docs/source/deployment-guide/quick-start-recipe-for-llama3.3-70b-on-trtllm.md "
    "('NVFP4 is only supported on NVIDIA Blackwell')",
    "support-matrix @03dad6287acb; recipe @0f34bf05edf0",
    "1.0-1.2",
)

# FP8 weights or activations: Ampere's precisions list no FP8, and INT4 AWQ/GPTQ with FP8
# activations require SM >= 89 (support-matrix.md, "Precision" and its footnote); on the
# TensorRT path the engine build fails on an A100 with TensorRT's "Networks with FP8
# precision require hardware with FP8 support." (NVIDIA/TensorRT-LLM#1428)
FP8_ALGOS = ["FP8", "FP8_BLOCK_SCALES", "FP8_PER_CHANNEL_PER_TOKEN", "W4A8_AWQ"]
FP8_PRECISION = Source(
    "TensorRT-LLM",
    "docs/source/reference/support-matrix.md (Software, Precision: Ampere SM80/SM86 FP32,"
    " FP16, BF16, INT8, INT4; footnote: INT4 AWQ and GPTQ with FP8 activations require"
    " SM >= 89); TensorRT's refusal on an A100 in NVIDIA/TensorRT-LLM#1428",
    "support-matrix @03dad6287acb",
    "1.0-1.2",
)

RULES = [
    Rule(
        id="quant.blackwell-no-int8",
        text="INT8/INT4 weight-only quantization (W4A8_AWQ included), SmoothQuant, per-channel/per-token scaling and an INT8 KV cache are not supported on sm 100-119",
        # quantization/mode.py maps W4A8_AWQ to an INT4 weight-only mode and
        # FP8_PER_CHANNEL_PER_TOKEN to per-channel, per-token scaling: both are refused
        source=builder("T22; modes from tensorrt_llm/quantization/mode.py from_quant_algo"),
        scope=TENSORRT,
        expr=implies(
            ge("device.sm", 100) & lt("device.sm", 120),
            one_of(
                "quant_config.quant_algo",
                [None, "FP8", "FP8_BLOCK_SCALES", "NVFP4"],
            )
            & ~eq("quant_config.kv_cache_quant_algo", "INT8"),
        ),
        feasible={"device.sm": 100, "quant_config.quant_algo": "NVFP4"},
        infeasible={"device.sm": 100, "quant_config.quant_algo": "W8A16"},
    ),
    Rule(
        id="quant.nvfp4-gemm-plugin",
        text="NVFP4 weights use the nvfp4 GEMM plugin unless the user chose otherwise",
        source=builder("T27"),
        scope=TENSORRT,
        kind="default",
        expr=implies(
            eq("quant_config.quant_algo", "NVFP4"), eq("plugin_config.gemm_plugin", "nvfp4")
        ),
        feasible={"quant_config.quant_algo": "NVFP4", "plugin_config.gemm_plugin": "nvfp4"},
        infeasible={"quant_config.quant_algo": "NVFP4", "plugin_config.gemm_plugin": None},
    ),
    Rule(
        id="quant.nvfp4-needs-blackwell",
        text="NVFP4 weights (a pre-quantized FP4 checkpoint or quant_algo NVFP4) need a Blackwell GPU (sm >= 100)",
        source=SUPPORT_MATRIX,
        scope=TRTLLM,
        expr=implies(eq("quant_config.quant_algo", "NVFP4"), ge("device.sm", 100)),
        feasible={"device.sm": 100, "quant_config.quant_algo": "NVFP4"},
        infeasible={"device.sm": 90, "quant_config.quant_algo": "NVFP4"},
    ),
    Rule(
        id="quant.fp8-needs-ada",
        text="FP8 weights (FP8, FP8 block scales, FP8 per-channel, W4A8 AWQ: a pre-quantized"
        " FP8 checkpoint or quant_algo) need an Ada or newer GPU (sm >= 89); Ampere has no FP8",
        source=FP8_PRECISION,
        scope=TRTLLM,
        expr=implies(one_of("quant_config.quant_algo", FP8_ALGOS), ge("device.sm", 89)),
        feasible={"device.sm": 89, "quant_config.quant_algo": "FP8"},
        infeasible={"device.sm": 80, "quant_config.quant_algo": "FP8"},
    ),
]
