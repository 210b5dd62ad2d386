"""Device rules: what GPUs before Ampere (sm < 80) cannot do.

The two "pre-ampere not supported" setups belong to the LLM API arbitrator (0.9-0.12);
bfloat16 is refused by both backends; the Volta assertion is in the attention plugin."""

from __future__ import annotations

from constraints.expr import eq, implies, lt
from constraints.rules._sources import ARBITRATOR, TENSORRT, TRTLLM
from constraints.rules.base import Rule, Source

PRE_AMPERE = lt("device.sm", 80)
HLAPI = Source(
    "TensorRT-LLM",
    "tensorrt_llm/hlapi/llm_utils.py (setup: pre-ampere not supported)",
    "T7",
    "0.9-0.12",
)

RULES = [
    Rule(
        id="device.pre-ampere-no-paged-context-fmha",
        text="GPUs before Ampere (sm < 80) have no paged context FMHA",
        source=HLAPI,
        scope=ARBITRATOR,
        expr=implies(PRE_AMPERE, eq("plugin_config.use_paged_context_fmha", False)),
        feasible={"device.sm": 75, "plugin_config.use_paged_context_fmha": False},
        infeasible={"device.sm": 75, "plugin_config.use_paged_context_fmha": True},
    ),
    Rule(
        id="device.pre-ampere-no-block-reuse",
        text="GPUs before Ampere (sm < 80) have no KV block reuse",
        source=HLAPI,
        scope=ARBITRATOR,
        expr=implies(PRE_AMPERE, eq("kv_cache_config.enable_block_reuse", False)),
        feasible={"device.sm": 70, "kv_cache_config.enable_block_reuse": False},
        infeasible={"device.sm": 70, "kv_cache_config.enable_block_reuse": True},
    ),
    Rule(
        id="device.pre-ampere-no-bfloat16",
        text="GPUs before Ampere (sm < 80) do not support bfloat16",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.validate_dtype",
            "T61",
            "1.2",
        ),
        scope=TRTLLM,
        expr=implies(PRE_AMPERE, ~eq("build_config.dtype", "bfloat16")),
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
            "0.9",
        ),
        scope=TENSORRT,
        expr=implies(eq("device.sm", 70), eq("plugin_config.use_paged_context_fmha", False)),
        feasible={"device.sm": 70, "plugin_config.use_paged_context_fmha": False},
        infeasible={"device.sm": 70, "plugin_config.use_paged_context_fmha": True},
    ),
]
