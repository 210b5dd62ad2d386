"""TensorRT-LLM style ``llm_args`` and the facts of the machine and model, as claims.

- A value the user set explicitly becomes a **func** claim named ``llm_args.<argument>``
  (``llm_args.kv_cache_config.tokens_per_block``), so a conflict report names the argument.
- Features the engine turns on by default (block reuse, partial reuse, paged and fused
  context attention, a sequence limit equal to the model's) become **perf** claims named
  ``default.<feature>``; when rules drop one, its fallback logs the reason. Full attention
  (no sliding window unless the user asks for one) is a perf claim a tier above them, so
  a small KV pool lowers ``max_seq_len`` rather than silently windowing attention.
- The model's ``config.json`` and the device become **setup** claims (``model``,
  ``device``).

CPU facts: rules keyed on compute capability describe GPU kernels, which the CPU never
runs; the torch reference backend supports every feature on CPU, so a CPU counts as
``device.sm = 90`` (Hopper-equivalent) and nothing is switched off on its account.
``device.memory_mib`` is the machine's ``MemTotal`` from ``/proc/meminfo``.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arbiter import InvalidClaim, func, le, perf, setup
from arbiter.claims import FuncClaim, PerfClaim, SetupClaim
from arbiter.dialects import trtllm
from arbiter.dialects._base import DialectError
from arbiter.dialects.trtllm_map import NESTED
from constraints.expr import implies, ne
from constraints.rules.memory import MAX_TOKENS, SEQ_NEED_CAP
from engine.model import ModelArgs

from .errors import EngineError

log = logging.getLogger("engine.llm")

CPU_SM = 90  # a CPU runs the reference kernels, which support every feature

# llm_args name -> option path (top-level arguments).
TOP_LEVEL = {
    "enable_chunked_prefill": "scheduler_config.enable_chunked_context",
    "max_batch_size": "build_config.max_batch_size",
    "max_num_tokens": "build_config.max_num_tokens",
    "max_seq_len": "build_config.max_seq_len",
    "max_input_len": "build_config.max_input_len",
    "max_beam_width": "build_config.max_beam_width",
    "streamingllm": "plugin_config.streamingllm",
    "dtype": "build_config.dtype",
    "tensor_parallel_size": "parallel_config.tensor_parallel_size",
    "pipeline_parallel_size": "parallel_config.pipeline_parallel_size",
}
# the dialect's kv_cache_config options, less cross attention (the decoder has none)
KV_CACHE_KEYS = tuple(k for k in NESTED["kv_cache_config"] if k != "cross_kv_cache_fraction")
SCHEDULER_KEYS = {
    "capacity_scheduler_policy": "scheduler_config.capacity_scheduler_policy",
    "context_chunking_policy": "scheduler_config.context_chunking_policy",
}
# Arguments that choose where the engine runs rather than how it is configured.
RUNTIME_ONLY = ("device",)
# Arguments of this runtime that the TensorRT-LLM dialect does not read (the others become
# claims through the dialect, so both name and check them the same way).
ENGINE_ONLY = ("streamingllm",)
# The runtime, like vLLM, runs only sequences its pool can hold: a pool capped by
# max_tokens holds one whole sequence, each of its beams (memory.max-tokens-holds-a-sequence).
POOL_HOLDS_A_SEQUENCE = implies(ne(MAX_TOKENS, None), SEQ_NEED_CAP)
# Engine defaults that are worth keeping but give way to rules: (name, requirement, weight).
DEFAULT_FEATURES = (
    ("enable_block_reuse", {"kv_cache_config.enable_block_reuse": True}, 4),
    ("enable_partial_reuse", {"kv_cache_config.enable_partial_reuse": True}, 1),
    ("copy_on_partial_reuse", {"kv_cache_config.copy_on_partial_reuse": True}, 1),
    ("use_paged_context_fmha", {"plugin_config.use_paged_context_fmha": True}, 2),
    ("context_fmha", {"plugin_config.context_fmha": True}, 2),
)
DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


class InvalidLlmArg(InvalidClaim, EngineError):
    """An ``llm_args`` entry that cannot become a claim; ``argument`` names it."""

    def __init__(self, argument: str, value: Any, reason: str, suggestions: tuple = ()) -> None:
        super().__init__(reason, claim=f"llm_args.{argument}", value=value, suggestions=suggestions)
        self.argument = argument

    def __str__(self) -> str:
        text = f"invalid llm_args {self.argument}={self.value!r}: {self.reason}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


@dataclass(frozen=True)
class DeviceFacts:
    sm: int
    memory_mib: int
    count: int = 1  # devices (CPU: the ranks torch.distributed may start here)


def meminfo_mib(key: str, path: str = "/proc/meminfo") -> int:
    """A ``/proc/meminfo`` entry (``MemTotal``, ``MemAvailable``) in MiB."""
    for line in Path(path).read_text().splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            return int(rest.split()[0]) // 1024  # the file counts kB
    raise KeyError(f"{key} not in {path}")


MAX_CPU_RANKS = 8  # gloo ranks on CPU: our own limit, beyond the cores the OS reports


def available_ranks(device: torch.device) -> int:
    """Tensor-parallel ranks this machine can start: its GPUs, or CPU processes."""
    if device.type == "cuda":
        return torch.cuda.device_count()
    return max(MAX_CPU_RANKS, os.cpu_count() or 1)


def device_facts(device: torch.device) -> DeviceFacts:
    """Compute capability and memory of ``device`` (see the module docstring for CPU)."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        total = torch.cuda.get_device_properties(device).total_memory
        return DeviceFacts(major * 10 + minor, total // (1 << 20), available_ranks(device))
    return DeviceFacts(CPU_SM, meminfo_mib("MemTotal"), available_ranks(device))


def _plain(value: Any) -> Any:
    """Enum members and torch dtypes as the plain values the schema holds."""
    if isinstance(value, torch.dtype):
        return DTYPE_NAMES.get(value, str(value))
    if hasattr(value, "value") and type(value).__module__ != "builtins":
        return value.value
    return value


def _section(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_unset=True)
    if not isinstance(value, Mapping):
        raise InvalidLlmArg(name, value, "must be a mapping of its fields")
    return dict(value)


def _unknown(name: str, known: list[str]) -> InvalidLlmArg:
    close = tuple(difflib.get_close_matches(name, known, n=2))
    return InvalidLlmArg(name, None, f"unknown argument (known: {', '.join(sorted(known))})", close)


def explicit_settings(llm_args: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """``{argument name: (option path, value)}`` for every configuration argument given."""
    out: dict[str, tuple[str, Any]] = {}
    known = [*TOP_LEVEL, "kv_cache_config", "scheduler_config", *RUNTIME_ONLY]
    for name, value in llm_args.items():
        if name in RUNTIME_ONLY:
            continue
        if name in TOP_LEVEL:
            if value is not None:
                out[name] = (TOP_LEVEL[name], _plain(value))
        elif name == "kv_cache_config":
            for key, item in _section(name, value).items():
                if key not in KV_CACHE_KEYS:
                    raise _unknown(f"kv_cache_config.{key}", list(KV_CACHE_KEYS))
                if key == "max_attention_window" and isinstance(item, (list, tuple)):
                    if len(set(item)) != 1:
                        raise InvalidLlmArg(
                            f"{name}.{key}", item, "per-layer windows must all be equal here"
                        )
                    item = item[0]
                if item is not None:
                    out[f"{name}.{key}"] = (f"kv_cache_config.{key}", _plain(item))
        elif name == "scheduler_config":
            for key, item in _section(name, value).items():
                if key not in SCHEDULER_KEYS:
                    raise _unknown(f"scheduler_config.{key}", list(SCHEDULER_KEYS))
                if item is not None:
                    out[f"{name}.{key}"] = (SCHEDULER_KEYS[key], _plain(item))
        else:
            raise _unknown(name, known)
    return out


def dialect_claims(explicit: Mapping[str, tuple[str, Any]]) -> list[FuncClaim]:
    """Func claims for the explicit arguments, made by the TensorRT-LLM dialect (the same
    names, `llm_args.<argument>`, and the same checks as `arbiter check`)."""
    nested: dict[str, Any] = {}
    for name, (_, value) in explicit.items():
        if name in ENGINE_ONLY:
            continue
        head, _, tail = name.partition(".")
        if name == "kv_cache_config.max_attention_window" and not isinstance(value, list):
            value = [value]  # 1.x takes one window per layer group; the engine keeps one
        if tail:
            nested.setdefault(head, {})[tail] = value
        else:
            nested[name] = value
    try:
        parsed = trtllm.read(nested, defaults=False)
    except DialectError as exc:
        argument = exc.key or "?"
        err = InvalidLlmArg(argument, exc.value, exc.reason)
        err.path = explicit.get(argument, (None, None))[0]
        raise err from None
    return [c for c in parsed.claims if isinstance(c, FuncClaim)]


def _log_fallback(name: str) -> Callable[[Any], None]:
    def fallback(reason: Any) -> None:
        log.info("engine default %s is off: %s", name, reason)

    return fallback


def build_claims(
    llm_args: Mapping[str, Any], model: ModelArgs, facts: DeviceFacts
) -> list[FuncClaim | PerfClaim | SetupClaim]:
    """The claims for one engine: explicit arguments, engine defaults, machine and model."""
    explicit = explicit_settings(llm_args)
    claims: list[FuncClaim | PerfClaim | SetupClaim] = [
        *dialect_claims(explicit),
        *(
            func(f"llm_args.{name}", {path: value})
            for name, (path, value) in explicit.items()
            if name in ENGINE_ONLY
        ),
        func("runtime.pool-holds-a-sequence", POOL_HOLDS_A_SEQUENCE, source="engine.runtime"),
    ]
    set_paths = {path for path, _ in explicit.values()}
    for feature, requires, weight in DEFAULT_FEATURES:
        if not set_paths.intersection(requires):
            claims.append(
                perf(
                    f"default.{feature}",
                    requires,
                    weight=weight,
                    fallback=_log_fallback(feature),
                )
            )
    window_paths = {
        "kv_cache_config.max_attention_window",
        "kv_cache_config.sink_token_length",
        "plugin_config.streamingllm",
    }
    if not set_paths & window_paths:
        # A sliding window changes what the model computes: never pick one on the user's
        # behalf to make room (a shorter max_seq_len gives way first, in the tier below).
        claims.append(
            perf(
                "default.full_attention",
                {"kv_cache_config.max_attention_window": None},
                priority=1,
                fallback=_log_fallback("full_attention"),
            )
        )
    limit = model.max_position_embeddings
    if "build_config.max_seq_len" not in set_paths:
        requires: dict[str, Any] = {"build_config.max_seq_len": limit}
        if "build_config.max_input_len" not in set_paths:
            requires["build_config.max_input_len"] = le(limit)
        claims.append(
            perf("default.max_seq_len", requires, weight=1, fallback=_log_fallback("max_seq_len"))
        )
    claims.append(
        setup(
            "device",
            {
                "device.sm": facts.sm,
                "device.memory_mib": facts.memory_mib,
                "device.count": facts.count,
            },
        )
    )
    claims.append(setup("model", model_facts(model)))
    return claims


def model_facts(model: ModelArgs) -> dict[str, Any]:
    """The ``model.*`` facts of a checkpoint's config, from the project's one reader of
    model facts (``constraints.facts``), exactly as ``arbiter check --model`` reads them."""
    facts = model.spec.facts()
    if facts["model.dtype"] not in DTYPE_NAMES.values():  # pragma: no cover - reader checks
        facts["model.dtype"] = "float32"
    return facts
