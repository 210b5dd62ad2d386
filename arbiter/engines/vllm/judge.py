"""vLLM's verdict on its arguments: accept, adjust (a value vLLM rewrites) or reject (a
conflict, or a default vLLM derives once and then refuses to move), in vLLM's words."""

from __future__ import annotations

from ...dialects.protocol import Arbitration, Reading, Written
from ...dialects.verdict import Verdict
from .native import KEPT_DEFAULTS, _adjustments, _gave_way, _kept_defaults, _warnings


def judge(reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
    """The verdict for `reading` given what arbitration gave."""
    parsed = reading.native
    if outcome.conflict is not None:
        return Verdict.of_conflict(outcome.conflict, reading.carried)
    resolution = outcome.resolution
    assert resolution is not None  # no conflict: a resolution
    kept = _kept_defaults(parsed, resolution)
    if kept:
        rules = tuple(
            dict.fromkeys(
                r
                for d in resolution.dropped
                if d.name in KEPT_DEFAULTS
                for r in getattr(d.reason, "rules", ())
            )
        )
        return Verdict(
            "reject",
            tuple(kept),
            rules=rules,
            not_arbitrated=dict(reading.carried),
            resolution=resolution,
        )
    changes = [
        f"{key}: {f.before} -> {f.after}, because {f.why}"
        for key, f in sorted(parsed.native.forced.items())
    ]
    changes += _adjustments(parsed, resolution, outcome.claims)
    engine_changes = tuple(f"vLLM would set {note}" for note in reading.derived_defaults)
    warnings = [
        *reading.notes,
        *engine_changes,
        *_gave_way(parsed, resolution),
        *_warnings(resolution),
    ]
    return Verdict(
        "adjust" if changes else "accept",
        changes=tuple(changes),
        warnings=tuple(warnings),
        not_arbitrated=dict(reading.carried),
        config=written.config if written is not None else None,
        resolution=resolution,
        engine_changes=engine_changes,
        notes=tuple(reading.notes),
    )
