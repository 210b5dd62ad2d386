"""SGLang's verdict on its `ServerArgs`: accept, adjust (an explicit value SGLang rewrites,
each change with the rule behind it) or reject (a conflict with its rules), in SGLang's
words; what SGLang derives for the fields left unset is among the warnings."""

from __future__ import annotations

from ...dialects.protocol import Arbitration, Reading, Written
from ...dialects.verdict import Verdict
from .report import adjustments, derivations
from .serve import Arguments


def judge(reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
    """The verdict for `reading` given what arbitration gave."""
    if outcome.conflict is not None:
        return Verdict.of_conflict(outcome.conflict, reading.carried)
    resolution = outcome.resolution
    assert resolution is not None  # no conflict: a resolution
    parsed = reading.native
    args: Arguments = parsed.native.arguments
    adjusted = [*args.rewrites, *adjustments(resolution, args)]
    derived = tuple(derivations(resolution, args))
    # what the reports of the old path read off the reading
    parsed.native.adjustments = adjusted
    parsed.native.derivations = list(derived)
    parsed.native.notes = [*args.notes, *adjusted]
    return Verdict(
        "adjust" if adjusted else "accept",
        changes=(*args.notes, *adjusted),
        warnings=(*args.warnings, *derived),
        not_arbitrated=dict(reading.carried),
        config=written.config if written is not None else None,
        resolution=resolution,
        engine_changes=derived,
        notes=tuple(args.notes),
        derivations=derived,
    )
