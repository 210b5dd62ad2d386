"""What the dialects share: their input record, their error, machine facts as claims."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import yaml

from constraints.edge import (
    EdgeError,
    check_value,
    parse_json,
    parse_yaml,
    read_text,
    show,
    syntax_message,
)
from constraints.specs import DeviceSpec, ModelSpec, SpecError, read_model

from ..claims import AnyClaim, FuncClaim, SetupClaim, setup
from ..errors import DialectError
from .verdict import Verdict

log = logging.getLogger("arbiter.dialects")
__all__ = [
    "DialectError",
    "DialectInput",
    "InputProblems",
    "KeyProblem",
    "Verdict",
    "machine_claims",
]

QUANT_ALGO = "quant_config.quant_algo"


N = TypeVar("N")


@dataclass
class DialectInput(Generic[N]):
    """Claims read from a foreign config, and how to arbitrate them; `native` is the
    engine's own typed record of what it read (each pack's `Native...` dataclass), which
    only that pack reads (to write back and to judge)."""

    claims: list[AnyClaim]
    native: N = field(kw_only=True)
    profile: str = "trtllm-current"
    mode: str | None = None
    source: str = "<input>"


def load_mapping(source: str | Path | dict[str, Any], what: str) -> tuple[dict[str, Any], str]:
    """A YAML/JSON object from a path, or a dict as is; errors name the file.

    Files go through the edge validator (`constraints.edge`): at most MAX_INPUT_BYTES,
    UTF-8, safe YAML with bounded aliases and depth, finite numbers, valid Unicode."""
    if isinstance(source, dict):
        try:
            check_value(source, f"<{what}>")
        except EdgeError as exc:
            raise DialectError(
                exc.reason + (f" (limit {exc.limit})" if exc.limit else ""),
                key=exc.where or None,
                file=f"<{what}>",
                value=exc.value,
            ) from None
        return dict(source), f"<{what}>"
    path = Path(source)
    try:
        text = read_text(path)
    except OSError as exc:
        raise DialectError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except EdgeError as exc:
        raise DialectError(str(exc).removeprefix(f"{path}: "), file=str(path)) from None
    try:
        data = parse_json(text) if path.suffix == ".json" else parse_yaml(text)
    except EdgeError as exc:
        raise DialectError(
            exc.reason + (f" (limit {exc.limit})" if exc.limit else ""),
            key=exc.where or None,
            file=str(path),
            value=exc.value,
        ) from None
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise DialectError(syntax_message(exc, kind), file=str(path)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DialectError(f"expected an object, got {type(data).__name__}", file=str(path))
    return data, str(path)


def machine_claims(
    model: str | Path | dict | ModelSpec | None = None,
    device: str | DeviceSpec | None = None,
    requested: Iterable[AnyClaim] = (),
) -> list[AnyClaim]:
    """Setup claims for a model config.json (or mlc-chat-config.json) and a catalog device
    (either may be None; "8xH100" names the GPU count too).

    The checkpoint's quantization is a fact no solve changes: a pre-quantized checkpoint
    pins its `quant_config` values; an unquantized one pins `quant_algo` None unless a func
    or setup claim of `requested` (the user's own configuration) asks for quantization,
    which the engine then applies when it loads the weights."""
    claims: list[AnyClaim] = []
    try:
        if isinstance(model, dict):
            check_value(model, "model")
        if model is not None:
            spec = model if isinstance(model, ModelSpec) else read_model(model)
            where = spec.source or "config.json"
            claims.append(setup("model", spec.facts(), source=where))
            pinned = spec.checkpoint_claims()
            asked = any(
                QUANT_ALGO in c.expr.paths()
                for c in requested
                if isinstance(c, (FuncClaim, SetupClaim))
            )
            if pinned:
                claims.append(
                    setup("checkpoint quantization", pinned, source=f"{where}: quantization")
                )
            elif not asked:
                claims.append(
                    setup(
                        "checkpoint quantization",
                        {QUANT_ALGO: None},
                        source=f"{where}: no quantization_config ({spec.dtype} weights)",
                    )
                )
        if device is not None:
            dev = device if isinstance(device, DeviceSpec) else DeviceSpec.named(device)
            claims.append(setup("device", dev.facts(), source=f"device {dev.name}"))
    except SpecError as exc:
        raise DialectError(exc.reason, key=exc.key, file=exc.source, value=exc.value) from None
    except EdgeError as exc:
        raise DialectError(exc.reason, key=exc.where or None, file="config.json") from None
    except (ArithmeticError, TypeError, ValueError, KeyError, AttributeError) as exc:
        # a shape the model facts cannot read (0 heads, a list where a number goes)
        raise DialectError(
            f"the model config cannot be read: {type(exc).__name__}: {show(str(exc), 120)}",
            file="config.json",
        ) from None
    return claims


def logging_fallback(name: str) -> Callable[[Any], None]:
    """A perf claim's fallback: log why the engine default gave way."""

    def fallback(reason: Any) -> None:
        log.warning("default %s switched off: %s", name, reason)

    return fallback


def with_count(device: Any, gpus: int) -> Any:
    """A catalog device name with the GPU count ("8xH200"), unless it names one already."""
    if isinstance(device, str) and gpus > 1 and not re.match(r"\d+x", device, re.I):
        return f"{gpus}x{device}"
    return device


@dataclass(frozen=True)
class KeyProblem:
    """One bad key or value of a serving-argument set: the key as the user spelled it (a
    flag, or a dotted path into the config), why, the value, and close matches. Every
    dialect's problems are these; `show_value` False leaves the value out of the message
    (TensorRT-LLM's problems name the key, the reason and close matches only)."""

    key: str
    reason: str
    value: Any = None
    suggestions: tuple[str, ...] = ()
    limit: str | None = None  # the limit of `constraints.limits` that refused it
    allowed: str | None = None  # the domain the value must be in
    show_value: bool = field(default=True, repr=False, compare=False)

    def __str__(self) -> str:
        text = f"{self.key}: {self.reason}"
        if self.show_value and self.value is not None and str(self.value) not in self.reason:
            text += f" (got {self.value!r})"
        if self.allowed is not None:
            text += f"; allowed: {self.allowed}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


class InputProblems(DialectError):
    """Every problem of one input named at once: the values the edge validator refused
    (`constraints.edge`: an integer past INT_LIMIT with its allowed domain, a key given
    twice) beside the dialect's own (unknown keys with their close matches, bad values).
    `problems` are `KeyProblem`s, in the order of the input's lines; the first one's key,
    value and suggestions are the error's own.

    Each dialect's error of a whole argument set is a subclass (`FieldErrors`,
    `ServeArgsError`, `VllmArgErrors`, `SglangArgsError`), which names its `reason`, the
    `headline` of its message, the `bullet` before each problem's line and the start of the
    reason of a key that is no field (`unknown`: those keys are `unknown_keys`)."""

    unknown: ClassVar[str | None] = None  # a reason starting so names an unknown key
    bullet: ClassVar[str] = "  - "  # what starts each problem's line of the message

    def __init__(
        self,
        problems: Sequence[KeyProblem],
        *,
        file: str | None = None,
        against: str = "",
        reason: str | None = None,
    ):
        self.problems = tuple(problems)
        first = self.problems[0]
        if reason is None:
            reason = f"{len(self.problems)} problem(s)" + (f" against {against}" if against else "")
        super().__init__(
            reason,
            key=first.key,
            file=file,
            value=first.value,
            suggestions=first.suggestions,
        )

    @property
    def unknown_keys(self) -> tuple[str, ...]:
        """The keys of the problems that say the key is no field (none unless `unknown`)."""
        if self.unknown is None:
            return ()
        return tuple(p.key for p in self.problems if p.reason.startswith(self.unknown))

    def headline(self) -> str:
        """The message's first line, less the colon that ends it."""
        return f"{self.file or '<input>'}: {self.reason}"

    def __str__(self) -> str:
        return "\n".join([f"{self.headline()}:", *(f"{self.bullet}{p}" for p in self.problems)])


def edge_problem(exc: EdgeError) -> KeyProblem:
    """A value the edge validator refused, as a problem of the config (its dotted key)."""
    return KeyProblem(
        exc.where or "<input>",
        exc.reason,
        value=exc.value,
        limit=exc.limit or None,
        allowed=getattr(exc, "allowed", None),
    )
