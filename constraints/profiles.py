"""Profiles: named sets of option defaults (an engine release) and capacity modes.

A profile is what "fewest changes" counts from, and which memory terms the memory model
uses. `trtllm-current` is the schema's own defaults (those of the current TensorRT-LLM
release, see schema.py); `trtllm-0.10` brings back the defaults that flipped since
(catalog 1.2: paged context FMHA and FP8 context FMHA off, 128 tokens per block), plus
block reuse off, which the catalog does not list for 0.10 but without which those
defaults would break `kv.reuse-needs-paged-context-fmha`; `mlc` uses MLC LLM's serving
defaults (16-token pages, gpu_memory_utilization 0.85) and MLC's memory formulas.

A mode (MLC's `local`, `interactive`, `server`) infers the batch size, the prefill chunk
(`max_num_tokens`) and the KV token capacity (`kv_cache_config.max_tokens`) the way MLC's
`EstimateMemoryUsageOnMode` does, for every one of them no func or setup claim names:

- interactive: one sequence; KV capacity up to max_seq_len; prefill chunk up to the
  profile's max_num_tokens and max_seq_len;
- local: up to 4 sequences; KV capacity up to max_seq_len and 8192 tokens; prefill chunk
  as interactive;
- server: as many sequences as the profile's max_batch_size; prefill chunk the profile's
  max_num_tokens; KV capacity as large as memory allows, up to batch x max_seq_len.

Each target is a preference first (kept when the perf claims allow it), then the largest
value under it: `arbitrate()` runs them as objective stages after the perf tiers and the
default rules, before "fewest changes".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SchemaError


class UnknownProfile(SchemaError, KeyError):
    """A profile or mode name that does not exist."""

    def __init__(self, kind: str, name: str, known: tuple[str, ...]):
        super().__init__(name)
        self.kind = kind
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; use one of {', '.join(self.known)}"


ENGINE_NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang", "mlc": "MLC LLM"}


@dataclass(frozen=True)
class Profile:
    """One engine release line: `engine` ("trtllm", "vllm", "sglang", "mlc"), its
    `backend` ("pytorch" or "tensorrt" for TensorRT-LLM, "" elsewhere) and `release`
    (dotted integers, compared as a tuple by rule scopes); `version` is what the
    defaults were read from (a release or commit)."""

    name: str
    engine: str
    version: str
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    memory_terms: str = "arbiter"
    backend: str = ""
    release: str = ""

    @property
    def engine_name(self) -> str:
        return ENGINE_NAMES.get(self.engine, self.engine)

    def admits(self, rule: Any) -> bool:
        """Whether `rule`'s scope covers this profile (so it is compiled)."""
        return rule.scope.applies(self.engine, self.backend, self.release)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "trtllm-current",
            "trtllm",
            "1.2",
            "the schema's defaults (current TensorRT-LLM)",
            backend="tensorrt",
            release="1.2",
        ),
        Profile(
            "trtllm-0.10",
            "trtllm",
            "0.10",
            "plugin defaults before the flips of catalog 1.2",
            {
                "plugin_config.use_paged_context_fmha": False,
                "plugin_config.use_fp8_context_fmha": False,
                "kv_cache_config.tokens_per_block": 128,
                "kv_cache_config.enable_block_reuse": False,
            },
            backend="tensorrt",
            release="0.10",
        ),
        Profile(
            "mlc",
            "mlc",
            "79d603f0",
            "MLC serving defaults and MLC's memory estimate",
            {
                "kv_cache_config.tokens_per_block": 16,
                "kv_cache_config.free_gpu_memory_fraction": 0.85,
                "build_config.max_batch_size": 128,
                "build_config.max_num_tokens": 2048,
                "runtime_config.prefill_mode": "hybrid",
            },
            memory_terms="mlc",
            release="0.1",
        ),
    )
}
DEFAULT_PROFILE = "trtllm-current"


@dataclass(frozen=True)
class Mode:
    name: str
    batch_cap: int | None  # None: the profile's max_batch_size
    kv_cap: int | None  # a fixed cap on the KV capacity in tokens (local: 8192)
    kv_per_sequence: bool  # the capacity may reach batch x max_seq_len (server)
    prefill_within_sequence: bool  # the prefill chunk stays within max_seq_len


MODES: dict[str, Mode] = {
    "interactive": Mode("interactive", 1, None, False, True),
    "local": Mode("local", 4, 8192, False, True),
    "server": Mode("server", None, None, True, False),
}


def get_profile(name: str | Profile | None) -> Profile:
    if isinstance(name, Profile):
        return name
    if name is None:
        name = DEFAULT_PROFILE
    if name not in PROFILES:
        raise UnknownProfile("profile", str(name), tuple(PROFILES))
    return PROFILES[name]


def get_mode(name: str | None) -> Mode | None:
    if name is None:
        return None
    if name not in MODES:
        raise UnknownProfile("mode", str(name), tuple(MODES))
    return MODES[name]


__all__ = [
    "DEFAULT_PROFILE",
    "ENGINE_NAMES",
    "MODES",
    "PROFILES",
    "Mode",
    "Profile",
    "UnknownProfile",
    "get_mode",
    "get_profile",
]
