"""Option paths as constants derived from the schema: one name, one place.

Each section of `EngineConfig` has one `Section` here, named as the section in capitals:
`KV_CACHE_CONFIG.enable_block_reuse == "kv_cache_config.enable_block_reuse"`. Reading an
attribute checks it against the schema, so a module that declares its path constants this
way (rule modules do, at import) fails at import on a misspelt or removed option with an
`UnknownPath` naming it and its close matches, instead of carrying a wrong string.
"""

from __future__ import annotations

from .schema import EngineConfig, lookup


class Section:
    """The options of one section of the schema, as paths: `Section("build_config")
    .max_num_tokens` is "build_config.max_num_tokens" (checked with `schema.lookup`)."""

    def __init__(self, name: str):
        if name not in EngineConfig.model_fields:
            known = ", ".join(EngineConfig.model_fields)
            raise ValueError(f"{name!r} is no section of EngineConfig; sections: {known}")
        self.name = name

    def __getattr__(self, option: str) -> str:
        if option.startswith("__"):
            raise AttributeError(option)
        path = f"{self.name}.{option}"
        lookup(path)  # UnknownPath with close matches
        return path

    def __repr__(self) -> str:
        return f"Section({self.name!r})"


PLUGIN_CONFIG = Section("plugin_config")
KV_CACHE_CONFIG = Section("kv_cache_config")
BUILD_CONFIG = Section("build_config")
SCHEDULER_CONFIG = Section("scheduler_config")
SPECULATIVE_CONFIG = Section("speculative_config")
QUANT_CONFIG = Section("quant_config")
PARALLEL_CONFIG = Section("parallel_config")
RUNTIME_CONFIG = Section("runtime_config")
DEVICE = Section("device")
MODEL = Section("model")
CUDA_GRAPH_CONFIG = Section("cuda_graph_config")
MOE_CONFIG = Section("moe_config")
ATTENTION_DP_CONFIG = Section("attention_dp_config")
VLLM_CONFIG = Section("vllm_config")
SGLANG_CONFIG = Section("sglang_config")
MEMORY_POLICY = Section("memory_policy")

SECTIONS: dict[str, Section] = {
    s.name: s
    for s in (
        PLUGIN_CONFIG,
        KV_CACHE_CONFIG,
        BUILD_CONFIG,
        SCHEDULER_CONFIG,
        SPECULATIVE_CONFIG,
        QUANT_CONFIG,
        PARALLEL_CONFIG,
        RUNTIME_CONFIG,
        DEVICE,
        MODEL,
        CUDA_GRAPH_CONFIG,
        MOE_CONFIG,
        ATTENTION_DP_CONFIG,
        VLLM_CONFIG,
        SGLANG_CONFIG,
        MEMORY_POLICY,
    )
}
if set(SECTIONS) != set(EngineConfig.model_fields):  # a section added to the schema only
    raise ValueError(
        "constraints.paths lacks a Section for: "
        + ", ".join(sorted(set(EngineConfig.model_fields) - set(SECTIONS)))
    )

__all__ = [
    "ATTENTION_DP_CONFIG",
    "BUILD_CONFIG",
    "CUDA_GRAPH_CONFIG",
    "DEVICE",
    "KV_CACHE_CONFIG",
    "MEMORY_POLICY",
    "MODEL",
    "MOE_CONFIG",
    "PARALLEL_CONFIG",
    "PLUGIN_CONFIG",
    "QUANT_CONFIG",
    "RUNTIME_CONFIG",
    "SCHEDULER_CONFIG",
    "SECTIONS",
    "SGLANG_CONFIG",
    "SPECULATIVE_CONFIG",
    "Section",
    "VLLM_CONFIG",
]
