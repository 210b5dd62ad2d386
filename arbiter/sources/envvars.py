"""Environment variables that change what an engine does with its arguments.

Only variables with a source are listed; each says which setting it changes. A manifest's
container `env` is matched against them so that a check can say what the engine will read
besides its arguments. An engine's own variables are listed in its pack
(`VARIABLES` in `arbiter/engines/<engine>/vocab.py`); CUDA's, which every engine reads,
here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineVariable:
    """One variable: the engine that reads it, what it changes, and where that is written."""

    name: str
    engine: str  # a dialect name, or "cuda" for the CUDA runtime every engine uses
    effect: str
    source: str
    truthy: tuple[str, ...] = ()  # the values that switch it on ("" : any value counts)


# what every engine reads; an engine's own variables are its pack's (`vocab.VARIABLES`)
SHARED = (
    EngineVariable(
        "CUDA_VISIBLE_DEVICES",
        "cuda",
        "the GPUs the process sees: their count bounds tensor x pipeline parallelism",
        "NVIDIA CUDA C++ Programming Guide, CUDA Environment Variables",
    ),
)


def variables(dialect: str) -> dict[str, EngineVariable]:
    """The variables `dialect` reads, by name: its pack's and CUDA's."""
    from ..dialects import DIALECTS  # the registry: only a manifest's env is matched

    own: tuple[EngineVariable, ...] = ()
    if dialect in DIALECTS.entries:
        own = tuple(getattr(DIALECTS.part(dialect, "vocab"), "VARIABLES", ()))
    return {v.name: v for v in (*own, *SHARED)}


def engine_variables(env: dict[str, str | None], dialect: str) -> dict[str, str]:
    """{name: what it changes} for the variables of `env` that `dialect` (or CUDA) reads;
    a variable given by reference (`valueFrom`, value None) is named as such."""
    out: dict[str, str] = {}
    known = variables(dialect)
    for name, value in env.items():
        var = known.get(name)
        if var is None or var.engine not in (dialect, "cuda"):
            continue
        if value is None:
            out[name] = f"{var.effect}; its value comes from a reference, not the manifest"
        elif var.truthy and value.strip().lower() not in var.truthy:
            out[name] = f"set to {value!r}, which leaves it off ({var.effect})"
        else:
            out[name] = f"{var.effect} [{var.source}]"
    return out


def visible_gpus(env: dict[str, str | None]) -> int | None:
    """The number of GPUs CUDA_VISIBLE_DEVICES lists, when the manifest sets it."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    ids = [part for part in value.split(",") if part.strip()]
    return len(ids)
