"""What `arbiter check` checks against, said out loud: the model, the device and the GPU
count, each from the user (`--model`, `--device`, `--gpus`), else from the configuration
itself (its model key, the GPUs its parallel layout needs), else a clear exit-2 error
(the model) or a named assumption (the default device) -- never a silent default.

`layout_gpus(dialect, config, serve_args)` is the GPU count a configuration's layout
needs (tensor x pipeline x data parallel, in each engine's spellings) and the words
that say where it came from; `check_setup(...)` resolves the three facts into a
`CheckSetup` with the `Assumptions` the report prints first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..dialects import DIALECTS
from ..errors import DialectError
from ..report.schema import Assumptions, assumptions

DEFAULT_DEVICE = "H100-80GB"  # the rule bases' own device defaults describe this GPU

_DP_INSIDE_TP = ("enable_dp_attention",)  # SGLang: DP attention splits the tp GPUs


def _norm(key: str) -> str:
    return key.lstrip("-").replace("-", "_").lower()


def _flags(serve_args: str | None) -> dict[str, tuple[str, Any]]:
    """`--name value`, `--name=value` and bare `--flag` of a command line, by normal name."""
    if not serve_args:
        return {}
    from ..sources.command import split_command_line  # only a command line is split

    words = split_command_line(serve_args) or []
    out: dict[str, tuple[str, Any]] = {}
    for i, word in enumerate(words):
        if not word.startswith("-") or re.match(r"^-\d", word):
            continue
        name, eq, value = word.partition("=")
        if not eq:
            nxt = words[i + 1] if i + 1 < len(words) else None
            value = nxt if nxt is not None and not nxt.startswith("--") else "true"
        out[_norm(name)] = (name, value)
    return out


def _size(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        size = int(str(value))
    except ValueError:
        return None
    return size if size >= 1 else None


def _parallel_spellings(dialect: str) -> Mapping[str, tuple[str, ...]]:
    """The engine's parallel sizes ("tp", "pp", "dp") in the spellings it accepts: its
    pack's `vocab.PARALLEL` (none for a name the registry lacks)."""
    if dialect not in DIALECTS.entries:
        return {}
    return DIALECTS.part(dialect, "vocab").PARALLEL


def layout_gpus(
    dialect: str, config: Mapping[str, Any] | None, serve_args: str | None
) -> tuple[int, str]:
    """The GPUs the layout needs and what says so ("tensor-parallel-size 2"; the command
    line wins over the file key by key, as the engines merge them)."""
    given: dict[str, tuple[str, Any]] = {}
    for key, value in (config or {}).items():
        if isinstance(key, str):
            given[_norm(key)] = (key, value)
    given.update(_flags(serve_args))
    total, said = 1, []
    dp_inside = any(str(given.get(k, ("", ""))[1]).lower() == "true" for k in _DP_INSIDE_TP)
    for role, names in _parallel_spellings(dialect).items():
        for name in names:
            if name in given and (size := _size(given[name][1])) is not None:
                if role == "dp" and dp_inside:
                    break
                total *= size
                if size > 1:
                    said.append(f"{given[name][0].lstrip('-')} {size}")
                break
    return total, " x ".join(said) if said else "no parallel layout, one GPU; pass --gpus"


@dataclass(frozen=True)
class CheckSetup:
    """The machine a check runs on and how each fact was found."""

    model: Any  # a ModelSpec, or None for a prebuilt engine that carries its model
    device: str
    gpus: int
    assumed: Assumptions


def _model(
    ref: str | None, named: str | None, dialect: str, *, command: bool = False
) -> tuple[Any, tuple[str, str]]:
    from constraints.facts.errors import SpecError  # the model's own reading error
    from constraints.facts.sources import resolve_model  # the catalog loads on a check only

    if ref is not None:
        chosen, why = ref, "--model"
    elif named is not None:
        key = DIALECTS.entries[dialect].model_key
        chosen, why = named, f"the command line's {key}" if command else f"the config's {key}"
    else:
        raise DialectError(
            "the configuration names no model and none was given: pass --model (a "
            "config.json, its folder, a Hugging Face id or a catalog name); a check "
            "never assumes one",
            key="model",
        )
    resolved = resolve_model(chosen)
    try:
        spec = resolved.read()
    except SpecError as exc:
        raise DialectError(exc.reason, key=exc.key, file=exc.source, value=exc.value) from None
    return spec, (resolved.label, f"{why}, {resolved.how}")


def check_setup(
    dialect: str,
    *,
    model: str | None,
    named_model: str | None,
    device: str | None,
    gpus: int | None,
    config: Mapping[str, Any] | None,
    serve_args: str | None,
    manifest_gpus: int | None = None,
    profile: str | None = None,
    model_optional: bool = False,
    chosen_line: tuple[str, str] | None = None,
) -> CheckSetup:
    """The model, device and GPU count of a check, each given or found, with the
    assumptions line (`chosen_line`: the profile picked without --profile and why,
    arbiter.dialects.release). Raises an ArbiterError (exit 2) when no model is known."""
    if model is None and named_model is None and model_optional:
        spec, model_fact = None, None
    else:
        spec, model_fact = _model(model, named_model, dialect, command=config is None)
    name = device or DEFAULT_DEVICE
    in_name = re.match(r"^(\d+)\s*x\s*(.+)$", name, re.I)
    base = in_name.group(2) if in_name else name
    if gpus is not None:
        count, gpus_why = gpus, "--gpus"
    elif in_name:
        count, gpus_why = int(in_name.group(1)), "--device"
    elif manifest_gpus is not None:
        count, gpus_why = manifest_gpus, "the manifest's GPU limits"
    else:
        count, words = layout_gpus(dialect, config, serve_args)
        gpus_why = f"assumed from {words}; pass --gpus" if count > 1 else f"assumed: {words}"
    device_why = "--device" if device else "assumed, the default device; pass --device"
    assumed = assumptions(
        dialect=(dialect, "detected or --dialect"),
        profile=(profile, "--profile") if profile else chosen_line,
        model=model_fact,
        device=(base, device_why),
        gpus=(count, gpus_why),
    )
    return CheckSetup(spec, base, count, assumed)
