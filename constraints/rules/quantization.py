"""Quantization rules (the FP8 attention rules live in attention.py)."""

from __future__ import annotations

from ..expr import eq, ge, implies, lt, one_of
from .base import Rule, Source

RULES = [
    Rule(
        id="quant.blackwell-no-int8",
        text="INT8/INT4 weight-only quantization, SmoothQuant and an INT8 KV cache are not supported on sm 100-119",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py", "T22"),
        expr=implies(
            ge("device.sm", 100) & lt("device.sm", 120),
            one_of(
                "quant_config.quant_algo",
                [None, "FP8", "FP8_BLOCK_SCALES", "FP8_PER_CHANNEL_PER_TOKEN", "NVFP4", "W4A8_AWQ"],
            )
            & ~eq("quant_config.kv_cache_quant_algo", "INT8"),
        ),
        feasible={"device.sm": 100, "quant_config.quant_algo": "NVFP4"},
        infeasible={"device.sm": 100, "quant_config.quant_algo": "W8A16"},
    ),
    Rule(
        id="quant.nvfp4-gemm-plugin",
        text="NVFP4 weights use the nvfp4 GEMM plugin unless the user chose otherwise",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py", "T27"),
        kind="default",
        expr=implies(
            eq("quant_config.quant_algo", "NVFP4"), eq("plugin_config.gemm_plugin", "nvfp4")
        ),
        feasible={"quant_config.quant_algo": "NVFP4", "plugin_config.gemm_plugin": "nvfp4"},
        infeasible={"quant_config.quant_algo": "NVFP4", "plugin_config.gemm_plugin": None},
    ),
]
