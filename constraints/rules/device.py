"""Device rules: what GPUs before Ampere (sm < 80) cannot do."""

from __future__ import annotations

from ..expr import eq, implies, lt
from .base import Rule, Source

PRE_AMPERE = lt("device.sm", 80)
HLAPI = Source(
    "TensorRT-LLM",
    "tensorrt_llm/hlapi/llm_utils.py (setup: pre-ampere not supported)",
    "T7",
    "0.10",
)

RULES = [
    Rule(
        id="device.pre-ampere-no-paged-context-fmha",
        text="GPUs before Ampere (sm < 80) have no paged context FMHA",
        source=HLAPI,
        expr=implies(PRE_AMPERE, eq("plugin_config.use_paged_context_fmha", False)),
        feasible={"device.sm": 75, "plugin_config.use_paged_context_fmha": False},
        infeasible={"device.sm": 75, "plugin_config.use_paged_context_fmha": True},
    ),
    Rule(
        id="device.pre-ampere-no-block-reuse",
        text="GPUs before Ampere (sm < 80) have no KV block reuse",
        source=HLAPI,
        expr=implies(PRE_AMPERE, eq("kv_cache_config.enable_block_reuse", False)),
        feasible={"device.sm": 70, "kv_cache_config.enable_block_reuse": False},
        infeasible={"device.sm": 70, "kv_cache_config.enable_block_reuse": True},
    ),
    Rule(
        id="device.pre-ampere-no-bfloat16",
        text="GPUs before Ampere (sm < 80) do not support bfloat16",
        source=Source("TensorRT-LLM", "tensorrt_llm/llmapi/llm_args.py", "T61"),
        expr=implies(
            PRE_AMPERE,
            ~eq("build_config.dtype", "bfloat16") & ~eq("kv_cache_config.dtype", "bfloat16"),
        ),
        feasible={"device.sm": 75, "build_config.dtype": "float16"},
        infeasible={"device.sm": 75, "build_config.dtype": "bfloat16"},
    ),
    Rule(
        id="device.volta-no-paged-context-fmha",
        text="Volta GPUs (sm 70) have no paged KV context FMHA",
        source=Source(
            "TensorRT-LLM",
            "gptAttentionCommon.cpp assertion, quoted in NVIDIA/TensorRT-LLM#1671",
            "T62",
        ),
        expr=implies(eq("device.sm", 70), eq("plugin_config.use_paged_context_fmha", False)),
        feasible={"device.sm": 70, "plugin_config.use_paged_context_fmha": False},
        infeasible={"device.sm": 70, "plugin_config.use_paged_context_fmha": True},
    ),
]
