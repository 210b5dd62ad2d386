"""Option paths as constants derived from the schema: one name, one place.

Each shared section of `EngineConfig` has one `Section` here, named as the section in
capitals: `KV_CACHE_CONFIG.enable_block_reuse == "kv_cache_config.enable_block_reuse"`. An
engine pack's own sections have theirs in the pack (`VLLM_CONFIG` in
`constraints/engines/vllm/schema.py`); `constraints.paths.VLLM_CONFIG` still finds it, by
the section's name, without this module naming any pack. Reading an attribute checks it
against the schema, so a module that declares its path constants this way (rule modules
do, at import) fails at import on a misspelt or removed option with an `UnknownPath` naming
it and its close matches, instead of carrying a wrong string.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .schema import SharedSections, lookup, section_model, section_names, section_owner


class Section:
    """The options of one section of the schema, as paths: `Section("build_config")
    .max_num_tokens` is "build_config.max_num_tokens" (checked with `schema.lookup`)."""

    def __init__(self, name: str):
        if section_model(name) is None:
            known = ", ".join(section_names())
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
MEMORY_POLICY = Section("memory_policy")

_SHARED: dict[str, Section] = {
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
        MEMORY_POLICY,
    )
}
if set(_SHARED) != set(SharedSections.model_fields):  # a section added to the schema only
    raise ValueError(
        "constraints.paths lacks a Section for: "
        + ", ".join(sorted(set(SharedSections.model_fields) - set(_SHARED)))
    )


def __getattr__(name: str) -> Any:
    # SECTIONS: every section of EngineConfig (reads every pack's schema); a pack section's
    # constant by its name in capitals (`VLLM_CONFIG`): the one in its pack
    if name == "SECTIONS":
        return {s: _SHARED.get(s) or Section(s) for s in section_names()}
    section = name.lower()
    if name.isupper() and section not in _SHARED and section_model(section) is not None:
        pack = import_module(f"{__package__}.engines.{section_owner(section)}.schema")
        return getattr(pack, name, None) or Section(section)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "SPECULATIVE_CONFIG",
    "Section",
]
