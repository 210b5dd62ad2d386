"""TensorRT-LLM's verdict on its LLM-API arguments: accept, adjust (a default switched
off, a limit clamped, a value the engine rewrites) or reject (a refusal of the engine's
own validators, or a conflict: too few GPUs for the layout is the machine rule's), in the
engine's words."""

from __future__ import annotations

from typing import Any

from ...dialects.protocol import Arbitration, Reading, Written
from ...dialects.verdict import Verdict
from . import checks as trtllm_checks
from .map import WORLD, field_for
from .native import _DEFAULT_PATHS
from .runtime_warnings import builder_warnings, runtime_warnings


def refusals(given: dict[str, Any], release: str, backend: str) -> list[str]:
    """What the engine's own validators refuse before any solve (`trtllm_checks`). A
    layout of more ranks than GPUs is no refusal here: rule machine.parallel-fits-devices
    names it, with its fixes."""
    return list(trtllm_checks.refusals(given, release, backend))


def too_few_gpus(reading: Reading) -> str | None:
    """The engine's words for a layout of more ranks than the GPUs there are (the
    Mapping's world size, tensorrt_llm/mapping.py), or None."""
    world = 1
    for key in WORLD:
        value = reading.given.get(key)
        world *= value if isinstance(value, int) and value > 0 else 1
    device = reading.machine.device
    gpus = device.count * device.nodes if device is not None else reading.machine.gpus
    return f"tp x pp x cp = {world} ranks need {world} GPUs; {gpus} given" if world > gpus else None


def judge(reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
    """The verdict for `reading` given what arbitration gave."""
    if outcome.conflict is not None:
        verdict = Verdict.of_conflict(outcome.conflict, reading.carried)
        short = too_few_gpus(reading)  # said first; the conflict (its rules) follows
        if short is not None:
            verdict.reasons = (short, *verdict.reasons)
        return verdict
    resolution = outcome.resolution
    assert resolution is not None  # no conflict: a resolution
    parsed = reading.native
    # a value the input (or a prebuilt engine's build) fixes is no change the engine makes
    claimed = {
        p for c in parsed.claims if not c.name.startswith("default.") for p in c.expr.paths()
    }
    release, backend = parsed.native.release, parsed.native.backend
    given = reading.given
    changes = [
        *reading.notes,
        *trtllm_checks.rewrites(given, release, backend),
        *(
            f"{d.name} dropped"
            for d in resolution.dropped
            if any(field_for(p, release, backend) for p in _DEFAULT_PATHS.get(d.name, ()))
        ),
        *(
            f"{field_for(c.path, release, backend)}: {c.old} -> {c.new}"
            for c in resolution.changes
            if c.path not in claimed and field_for(c.path, release, backend)
        ),
    ]
    return Verdict(
        "adjust" if changes else "accept",
        changes=tuple(changes),
        warnings=(
            *parsed.native.reading.warnings,
            *runtime_warnings(resolution, given if backend == "pytorch" else None),
            *(builder_warnings(resolution) if backend == "tensorrt" else ()),
        ),
        not_arbitrated=dict(reading.carried),
        config=written.config if written is not None else None,
        resolution=resolution,
        notes=tuple(reading.notes),
    )
