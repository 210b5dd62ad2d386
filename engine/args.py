"""TensorRT-LLM style ``llm_args`` and the facts of the machine and model, as claims.

- A value the user set explicitly becomes a **func** claim named ``llm_args.<argument>``
  (``llm_args.kv_cache_config.tokens_per_block``), so a conflict report names the argument.
  The claims are made by the TensorRT-LLM dialect (``arbiter.engines.trtllm.native.read``), the
  one reader of LLM-API arguments, so the runtime and ``arbiter check`` name and check an
  argument the same way; an argument on an option this runtime does not implement
  (``RUNTIME_OPTIONS``) is refused. Only ``streamingllm`` is the runtime's own argument.
- Features the engine turns on by default (the dialect's ``DEFAULT_FEATURES`` plus copy on
  partial reuse; a sequence limit equal to the model's) become **perf** claims named
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

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arbiter import InvalidClaim, func, le, perf, setup
from arbiter.claims import FuncClaim, PerfClaim, SetupClaim
from arbiter.dialects._base import DialectError
from arbiter.dialects.protocol import Machine
from arbiter.engines.trtllm import native as trtllm
from arbiter.engines.trtllm.map import NESTED, TOP
from constraints.expr import implies, ne
from constraints.facts.devices import DeviceSpec
from constraints.facts.model import ModelSpec
from constraints.schema import options
from constraints.shared.rules.memory import MAX_TOKENS, SEQ_NEED_CAP
from engine.model import ModelArgs

from .errors import EngineError

log = logging.getLogger("engine.llm")

CPU_SM = 90  # a CPU runs the reference kernels, which support every feature

# Arguments that choose where and how the engine runs rather than what it is configured
# to: the device, ``enforce_eager`` (vLLM's name, EngineArgs.enforce_eager: True turns
# the CUDA graphs of decode steps off; see engine.cuda_graphs) and ``num_scheduler_steps``
# (vLLM 0.6-0.9's multi-step decoding, EngineArgs.num_scheduler_steps: decode steps per
# scheduler call; here they replay the CUDA graphs, see Runtime._window).
RUNTIME_ONLY = ("device", "enforce_eager", "num_scheduler_steps")
# Arguments of this runtime that are no LLM-API field: (name, option path). Every other
# argument becomes a claim through the TensorRT-LLM dialect, so both name and check it
# the same way.
ENGINE_ONLY = {"streamingllm": "plugin_config.streamingllm"}
# What this runtime implements. An argument the dialect reads onto any other option (or
# carries through untouched) is refused, never silently ignored.
RUNTIME_OPTIONS = frozenset(
    {
        *(f"build_config.{k}" for k in ("max_batch_size", "max_num_tokens", "max_seq_len")),
        *(f"build_config.{k}" for k in ("max_input_len", "max_beam_width", "dtype")),
        "parallel_config.tensor_parallel_size",
        "parallel_config.pipeline_parallel_size",
        *(
            s.path
            for s in options()
            if s.path.startswith(("kv_cache_config.", "scheduler_config."))
            and s.path != "kv_cache_config.cross_kv_cache_fraction"  # the decoder has none
        ),
    }
)
# The runtime, like vLLM, runs only sequences its pool can hold: a pool capped by
# max_tokens holds one whole sequence, each of its beams (memory.max-tokens-holds-a-sequence).
POOL_HOLDS_A_SEQUENCE = implies(ne(MAX_TOKENS, None), SEQ_NEED_CAP)
# Engine defaults that are worth keeping but give way to rules: (name, requirement, weight).
DEFAULT_FEATURES = (
    *trtllm.DEFAULT_FEATURES,  # the engine's defaults, named once, by the dialect
    ("copy_on_partial_reuse", {"kv_cache_config.copy_on_partial_reuse": True}, 1),
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


def runtime_machine(model: ModelArgs, facts: DeviceFacts) -> Machine:
    """The machine this runtime runs on, in the record `arbiter check` reads once at its
    front door (`arbiter.dialects.protocol.Machine`): the checkpoint's model facts, read
    here once from the project's one reader, and this device (compute capability,
    memory, the ranks it can start)."""
    device = DeviceSpec(
        name="runtime device",
        memory_mib=facts.memory_mib,
        sm=facts.sm,
        count=facts.count,
        source="engine.args.device_facts",
    )
    return Machine(model=model.spec, device=device, gpus=facts.count)


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


def _normalized(llm_args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the dialect reads them: plain values (enum members and torch
    dtypes), sections as dicts, one attention window as the per-layer list 1.x takes."""
    out: dict[str, Any] = {}
    for name, value in llm_args.items():
        if name in RUNTIME_ONLY or name in ENGINE_ONLY or value is None:
            continue
        if name in ("kv_cache_config", "scheduler_config") or hasattr(value, "model_dump"):
            section = {k: _plain(v) for k, v in _section(name, value).items() if v is not None}
            window = section.get("max_attention_window")
            if isinstance(window, (list, tuple)) and len(set(window)) > 1:
                raise InvalidLlmArg(
                    f"{name}.max_attention_window",
                    window,
                    "per-layer windows must all be equal here",
                )
            if window is not None and not isinstance(window, (list, tuple)):
                section["max_attention_window"] = [window]
            out[name] = section
        else:
            out[name] = _plain(value)
    return out


def _option_path(argument: str) -> str | None:
    """The option an LLM-API argument sets, from the dialect's own map."""
    head, _, tail = argument.partition(".")
    return NESTED.get(head, {}).get(tail) if tail else TOP.get(head)


def _invalid(exc: DialectError) -> InvalidLlmArg:
    """A dialect error as the runtime's error, naming every culprit at once."""
    argument = exc.key or "?"
    problems = getattr(exc, "problems", ())
    reason = "; ".join(f"{p.key}: {p.reason}" for p in problems) if problems else exc.reason
    err = InvalidLlmArg(argument, exc.value, reason, tuple(exc.suggestions))
    err.path = _option_path(argument)
    return err


def dialect_claims(llm_args: Mapping[str, Any]) -> list[FuncClaim]:
    """Func claims for the configuration arguments given, made by the TensorRT-LLM dialect
    (the same names, `llm_args.<argument>`, and the same checks as `arbiter check`), plus
    the runtime's own arguments (`ENGINE_ONLY`). Unknown arguments are named with close
    matches; an argument this runtime does not implement is refused."""
    try:
        parsed = trtllm.read(_normalized(llm_args), defaults=False)
    except DialectError as exc:
        raise _invalid(exc) from None
    reading = parsed.native.reading
    for key, (path, value) in sorted(reading.values.items()):
        if path not in RUNTIME_OPTIONS:
            raise InvalidLlmArg(key, value, f"sets {path}, which this runtime does not implement")
    if reading.carried:
        key = min(reading.carried)
        head, _, tail = key.partition(".")
        given = llm_args.get(head)
        value = given.get(tail) if tail and isinstance(given, Mapping) else given
        raise InvalidLlmArg(key, value, f"not implemented by this runtime ({reading.carried[key]})")
    claims = [c for c in parsed.claims if isinstance(c, FuncClaim)]
    for name, path in ENGINE_ONLY.items():
        if llm_args.get(name) is not None:
            claims.append(func(f"llm_args.{name}", {path: _plain(llm_args[name])}))
    return claims


def _log_fallback(name: str) -> Callable[[Any], None]:
    def fallback(reason: Any) -> None:
        log.info("engine default %s is off: %s", name, reason)

    return fallback


def build_claims(
    llm_args: Mapping[str, Any], model: ModelArgs, facts: DeviceFacts | Machine
) -> list[FuncClaim | PerfClaim | SetupClaim]:
    """The claims for one engine: explicit arguments, engine defaults, machine and model.
    `facts`: the machine as read once at the front door (`runtime_machine`; `engine.LLM`
    passes it), or this device's facts, read into one here."""
    machine = facts if isinstance(facts, Machine) else runtime_machine(model, facts)
    assert machine.model is not None and machine.device is not None  # the runtime's own
    claims: list[FuncClaim | PerfClaim | SetupClaim] = [
        *dialect_claims(llm_args),
        func("runtime.pool-holds-a-sequence", POOL_HOLDS_A_SEQUENCE, source="engine.runtime"),
    ]
    set_paths = {p for c in claims if c.name.startswith("llm_args.") for p in c.expr.paths()}
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
    device = machine.device
    claims.append(
        setup(
            "device",
            {
                "device.sm": device.sm,
                "device.memory_mib": device.memory_mib,
                "device.count": device.count,
            },
        )
    )
    claims.append(setup("model", model_facts(machine.model)))
    return claims


def model_facts(model: ModelArgs | ModelSpec) -> dict[str, Any]:
    """The ``model.*`` facts of a checkpoint's config, from the project's one reader of
    model facts (``constraints.facts``), exactly as ``arbiter check --model`` reads them."""
    spec = model if isinstance(model, ModelSpec) else model.spec
    facts = spec.facts()
    if facts["model.dtype"] not in DTYPE_NAMES.values():  # pragma: no cover - reader checks
        facts["model.dtype"] = "float32"
    return facts
