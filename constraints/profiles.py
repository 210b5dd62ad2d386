"""Profiles: one engine release line each (engine, backend, release), its option defaults,
and thereby the rules in scope (`Profile.admits`), plus the capacity modes.

A profile is what "fewest changes" counts from, which rules are compiled, and which memory
terms the memory model uses. The release lines (see README "Supported releases"):

- `trtllm-1.2` (the default, also for the trtllm dialect) and `trtllm-1.0`: TensorRT-LLM's
  LLM API on its PyTorch backend (`tensorrt_llm.LLM` in 1.x). Defaults are those of
  `TorchLlmArgs` / `KvCacheConfig` (llm_args.py ~1.2 and ~1.0 as read for the audit: 32
  tokens per block, block reuse on, batch 2048, 8192 tokens, fraction 0.9, chunked
  prefill off), i.e. the schema's, with `runtime_config.backend = pytorch`.
- `trtllm-tensorrt`: the TensorRT-engine backend (`trtllm-build` engines, the LLM API's
  `TrtLlmArgs` through `tensorrt_llm._tensorrt_engine`) at its last release, 1.2 (main
  removed it after 1.2: NVIDIA/TensorRT-LLM#15918). Defaults: the schema's, which are
  `BuildConfig` / `PluginConfig` (@c20322ff), with `use_fp8_context_fmha` at its effective
  value False (upstream's True is switched off by the builder outside an FP8 workflow on
  sm >= 89, audit section 5).
- `trtllm-0.10`: the TensorRT-engine line in the LLM-API arbitrator era (0.9-0.12, the only
  releases where the arbitrator's rules are in scope): paged and FP8 context FMHA off,
  block reuse off (older C++ KvCacheConfig), 64 tokens per block (the dataclass
  PluginConfig of ~0.11/0.12; 0.9.0.dev2024040900 still had 128, and the change shipped
  in 0.10.0 per the development update of 14 May 2024, #1599), and a token budget of 2048,
  which the arbitrator-era LLM API set when max_num_tokens was unset.
- `sglang-0.5.23` (formerly `sglang-0.5`, still accepted): SGLang 0.5.23 (`ServerArgs`):
  pages of one token, radix cache and chunked prefill (8192 tokens on an 80 GB GPU) on,
  fa3 attention (the default backend on an H100), and `mem_fraction_static` as the share
  of device memory for weights + KV pool (memory terms "sglang").
- `sglang-0.5.16`: SGLang 0.5.16, the release AIConfigurator 0.12 and Dynamo 1.3 write
  their SGLang workers for (`--cuda-graph-bs`, `--enable-dp-attention`); the same
  defaults, its own field list, and the rules scoped to it where its `ServerArgs` differs
  (the 20-35 GiB memory tier; see docs/engines/sglang.md).
- `mlc`: MLC LLM's serving defaults at 79d603f0 (16-token pages, gpu_memory_utilization
  0.85, batch 128, prefill chunk 8192 = min(context, 8192) since #2917, hybrid prefill)
  and MLC's memory formulas.
- `vllm-0.33`: vLLM 0.33.0 (`vllm serve`): gpu_memory_utilization 0.92 (a share of the
  whole device, as the memory model's budget), 16-token blocks, prefix caching and chunked
  prefill on, and the budget / sequence limit of the H100/H200 tier (8192 / 1024); the
  vllm dialect replaces the device-dependent ones by the device's tier
  (arbiter/engines/vllm/defaults.py).

Old names are aliases (`ALIASES`): `trtllm-current` is `trtllm-1.2`, `sglang-0.5` is
`sglang-0.5.23`.

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

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import import_module
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


def engine_label(engine: str) -> str:
    """The engine's name as its users write it: `LABEL` of its pack
    (`constraints/engines/<engine>/__init__.py`), loaded when first asked for, so that
    naming one engine imports no other engine's pack."""
    try:
        return str(import_module(f"constraints.engines.{engine}").LABEL)
    except (ImportError, AttributeError):
        return engine


def __getattr__(name: str) -> Any:
    if name == "ENGINE_NAMES":  # every engine's label: imports each pack's __init__ only
        return {engine: engine_label(engine) for engine in ENGINES}
    raise AttributeError(f"module 'constraints.profiles' has no attribute {name!r}")


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
        return engine_label(self.engine)

    @property
    def surface(self) -> Mapping[str, Any]:
        """{path: default} of every option this release has (its field list read through
        its dialect map, generated into `constraints/engines/<engine>/surfaces/`); the
        compiler holds every other option at the profile's default."""
        return load_surface(self)

    def on_surface(self, path: str) -> bool:
        """Whether option `path` is one this release has (facts are never surface)."""
        return path in load_surface(self)

    def admits(self, rule: Any) -> bool:
        """Whether `rule`'s scope covers this profile (so it is compiled)."""
        return rule.scope.applies(self.engine, self.backend, self.release)

    @property
    def line(self) -> str:
        """The release line in words: "TensorRT-LLM 1.2, pytorch backend"."""
        text = f"{self.engine_name} {self.release or self.version}"
        if self.version and self.version != (self.release or self.version):
            text += f" @{self.version}"
        return text + (f", {self.backend} backend" if self.backend else "")

    def why(self, rule: Any) -> str:
        """Why `rule` is compiled for this profile: its scope against the profile."""
        return f"scope {rule.scope} covers {self.name} ({self.line})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "engine": self.engine,
            "backend": self.backend,
            "release": self.release,
            "version": self.version,
            "description": self.description,
            "defaults": dict(self.defaults),
            "memory_terms": self.memory_terms,
        }


_TORCH_DEFAULTS = {"runtime_config.backend": "pytorch"}


class PackDefaults(Mapping[str, Any]):
    """A profile's defaults held in its engine's pack (`constraints/engines/<engine>/
    defaults.py`, its `DEFAULTS`), read on first use: an engine whose defaults name its
    own section keeps those names in its pack, and naming its profiles imports nothing
    of it."""

    def __init__(self, engine: str, name: str = "DEFAULTS") -> None:
        self.engine, self.name = engine, name

    @cached_property
    def _data(self) -> Mapping[str, Any]:
        module = import_module(f"{__package__}.engines.{self.engine}.defaults")
        return dict(getattr(module, self.name))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"PackDefaults({self.engine!r}, {self.name!r})"


# SGLang's defaults name its own section: they are the pack's (constraints/engines/sglang/
# defaults.py, with their sources), the same for 0.5.23 and 0.5.16
SGLANG_DEFAULTS = PackDefaults("sglang")
_TENSORRT_DEFAULTS = {"runtime_config.backend": "tensorrt"}

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "trtllm-1.2",
            "trtllm",
            "1.2",
            "TensorRT-LLM 1.2, PyTorch backend (tensorrt_llm.LLM)",
            _TORCH_DEFAULTS,
            backend="pytorch",
            release="1.2",
        ),
        Profile(
            "trtllm-1.0",
            "trtllm",
            "1.0",
            "TensorRT-LLM 1.0, PyTorch backend (tensorrt_llm.LLM)",
            _TORCH_DEFAULTS,
            backend="pytorch",
            release="1.0",
        ),
        Profile(
            "trtllm-tensorrt",
            "trtllm",
            "1.2",
            "TensorRT-LLM TensorRT-engine backend (trtllm-build engines), last release 1.2",
            _TENSORRT_DEFAULTS,
            backend="tensorrt",
            release="1.2",
        ),
        Profile(
            "trtllm-0.10",
            "trtllm",
            "0.10",
            "TensorRT-LLM 0.10 TensorRT engines with the LLM-API arbitrator (0.9-0.12 rules)",
            {
                **_TENSORRT_DEFAULTS,
                "plugin_config.use_paged_context_fmha": False,
                "plugin_config.use_fp8_context_fmha": False,
                "kv_cache_config.tokens_per_block": 64,
                "kv_cache_config.enable_block_reuse": False,
                "build_config.max_num_tokens": 2048,
            },
            backend="tensorrt",
            release="0.10",
        ),
        Profile(
            "mlc",
            "mlc",
            "79d603f0",
            "MLC LLM serving defaults and MLC's memory estimate",
            {
                "kv_cache_config.tokens_per_block": 16,
                "kv_cache_config.free_gpu_memory_fraction": 0.85,
                "build_config.max_batch_size": 128,
                "build_config.max_num_tokens": 8192,
                "runtime_config.prefill_mode": "hybrid",
            },
            memory_terms="mlc",
            release="0.1",
        ),
        Profile(
            "vllm-0.33",
            "vllm",
            "0.33.0",
            "vLLM 0.33 (vllm serve), defaults of an H100/H200-class GPU",
            {
                # CacheConfig: gpu_memory_utilization 0.92; block size 16 on CUDA
                "kv_cache_config.free_gpu_memory_fraction": 0.92,
                "kv_cache_config.tokens_per_block": 16,
                "kv_cache_config.enable_block_reuse": True,
                "scheduler_config.enable_chunked_context": True,
                # EngineArgs.get_batch_defaults, >= 70 GiB not A100, OPENAI_API_SERVER
                "build_config.max_batch_size": 1024,
                "build_config.max_num_tokens": 8192,
            },
            memory_terms="vllm",
            release="0.33",
        ),
        Profile(
            "vllm-0.24",
            "vllm",
            "0.24.0",
            "vLLM 0.24 (vllm serve; the release AIConfigurator 0.12's database and Dynamo 1.3 "
            "target), defaults of an H100/H200-class GPU",
            {
                # the same defaults as 0.33 in the 0.24.0 wheel's field list
                # (arbiter/engines/vllm/fields-0.24.yaml: gpu_memory_utilization 0.92,
                # block size, prefix caching and chunked prefill decided by the engine)
                "kv_cache_config.free_gpu_memory_fraction": 0.92,
                "kv_cache_config.tokens_per_block": 16,
                "kv_cache_config.enable_block_reuse": True,
                "scheduler_config.enable_chunked_context": True,
                "build_config.max_batch_size": 1024,
                "build_config.max_num_tokens": 8192,
            },
            memory_terms="vllm",
            release="0.24",
        ),
        Profile(
            "sglang-0.5.23",
            "sglang",
            "0.5.23",
            "SGLang 0.5.23 (ServerArgs) and its static memory fraction",
            SGLANG_DEFAULTS,
            memory_terms="sglang",
            release="0.5.23",
        ),
        Profile(
            "sglang-0.5.16",
            "sglang",
            "0.5.16",
            "SGLang 0.5.16 (ServerArgs; the release AIConfigurator 0.12 and Dynamo 1.3 write "
            "for) and its static memory fraction",
            SGLANG_DEFAULTS,
            memory_terms="sglang",
            release="0.5.16",
        ),
    )
}


def surface_module(profile: Profile) -> str:
    """The module holding `profile`'s surface: constraints.engines.<engine>.surfaces.<name>."""
    name = profile.name.replace("-", "_").replace(".", "_")
    return f"{__package__}.engines.{profile.engine}.surfaces.{name}"


@cache
def _surface(module: str) -> Mapping[str, Any]:
    return dict(importlib.import_module(module).SURFACE)


def load_surface(profile: Profile) -> Mapping[str, Any]:
    """`profile.surface` (read once per file). A profile built outside `PROFILES` (a
    dialect's line for a release and backend arbiter has no profile of) has the surface of
    the registered line of its engine and backend nearest its release (`surface_line`). A
    registered profile without its generated file is an error naming the file."""
    module = surface_module(surface_line(profile))
    try:
        return _surface(module)
    except ModuleNotFoundError:
        raise SchemaError(
            f"profile {profile.name!r} has no surface ({module}); run scripts/gen_surfaces.py"
        ) from None


def surface_line(profile: Profile) -> Profile:
    """The registered profile whose surface `profile` has: itself when registered, else
    the one of the same engine and backend with the newest release not after its own (or
    the oldest one, for a release older than all of them)."""
    same = PROFILES.get(profile.name)
    if same is not None and (same.engine, same.backend) == (profile.engine, profile.backend):
        return same
    lines = sorted(
        (
            p
            for p in PROFILES.values()
            if (p.engine, p.backend) == (profile.engine, profile.backend)
        ),
        key=lambda p: _release_key(p.release),
    )
    if not lines:
        raise SchemaError(
            f"profile {profile.name!r}: no registered {profile.engine} line with backend "
            f"{profile.backend!r} to take the surface from"
        )
    key = _release_key(profile.release)
    older = [p for p in lines if _release_key(p.release) <= key]
    return older[-1] if older else lines[0]


def _release_key(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split(".")) if release else ()
    except ValueError:
        return ()


# the engines and their backends: the profiles' (no other list of engine names)
ENGINES: tuple[str, ...] = tuple(dict.fromkeys(p.engine for p in PROFILES.values()))
BACKENDS: dict[str, tuple[str, ...]] = {
    engine: tuple(
        dict.fromkeys(p.backend for p in PROFILES.values() if p.engine == engine and p.backend)
    )
    for engine in ENGINES
}
# former names, still accepted
ALIASES: dict[str, str] = {"trtllm-current": "trtllm-1.2", "sglang-0.5": "sglang-0.5.23"}
DEFAULT_PROFILE = "trtllm-1.2"


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
    name = ALIASES.get(name, name) if isinstance(name, str) else name
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
    "ALIASES",
    "BACKENDS",
    "ENGINES",
    "DEFAULT_PROFILE",
    "engine_label",
    "MODES",
    "PROFILES",
    "Mode",
    "Profile",
    "UnknownProfile",
    "get_mode",
    "get_profile",
    "load_surface",
    "surface_line",
    "surface_module",
]
