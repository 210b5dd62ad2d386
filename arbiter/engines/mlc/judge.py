"""MLC's verdict on its `EngineConfig`: accept, adjust (an MLC default gave way, e.g.
hybrid prefill under speculative decoding) or reject (a refusal of MLC's engine, or a
conflict with its rules)."""

from __future__ import annotations

from ...dialects.protocol import Arbitration, Reading, Written
from ...dialects.verdict import Verdict


def judge(reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
    """The verdict for `reading` given what arbitration gave."""
    if outcome.conflict is not None:
        return Verdict.of_conflict(outcome.conflict, reading.carried)
    resolution = outcome.resolution
    assert resolution is not None  # no conflict: a resolution
    changes = [f"{d.name} dropped: {d.reason}" for d in resolution.dropped]
    changes += [f"default rule {r} overridden" for r in resolution.overridden_defaults]
    return Verdict(
        "adjust" if changes else "accept",
        changes=tuple(changes),
        config=written.config if written is not None else None,
        resolution=resolution,
    )
