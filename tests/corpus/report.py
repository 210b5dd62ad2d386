"""Print today's agreement between arbiter and the engines on the corpus.

    PYTHONPATH=$PWD python -m tests.corpus.report [--all]

One line per disagreement (every case with --all), then the counts per engine and per
engine verdict, and how many agreeing refusals came for another reason: arbiter refused a
key it does not know, where the engine refuses for something else (an agreement by
accident); then how many cases keep upstream main's verdict on fields no release has yet.
The exit status is 0: this measures, the `corpus` tests judge.
"""

from __future__ import annotations

import sys
from collections import Counter

from .adapter import Outcome, our_verdict
from .cases import Case, load_cases

# how arbiter words a refusal of a key it does not know
UNKNOWN_KEY = (
    "unknown argument",
    "not an option arbiter models",
    "unknown speculative option",
    "decoding_type must be one of",
    "unknown EngineConfig field",
    "unknown field of",  # the TensorRT-LLM field lists' wording (trtllm_fields.FieldErrors)
)
# how a case words the engine refusing an unknown or misplaced key
ENGINE_UNKNOWN_KEY = ("extra=forbid", "no such option", "renamed", "deprecated and no")


def by_accident(case: Case, ours: Outcome) -> bool:
    """An agreeing refusal of a key arbiter does not know, where the engine refuses for
    another reason."""
    if case.verdict != "reject" or ours.verdict != "reject" or not ours.reasons:
        return False
    ours_unknown = any(s in ours.reasons[0] for s in UNKNOWN_KEY)
    return ours_unknown and not any(s in (case.reject or "") for s in ENGINE_UNKNOWN_KEY)


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    total: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    accidents: list[str] = []
    for case in load_cases():
        ours = our_verdict(case)
        ok = ours.verdict == case.verdict
        for key in (case.engine, f"{case.engine} {case.verdict}", "all"):
            total[key] += 1
            agreed[key] += ok
        if ok and by_accident(case, ours):
            accidents.append(case.id)
        if show_all or not ok:
            reason = ours.reasons[0] if ours.reasons else ""
            mark = "ok " if ok else "DIFF"
            print(f"{mark} {case.id}: engine {case.verdict}, arbiter {ours.verdict}  {reason}")
    print()
    for key in sorted(total, key=lambda k: (k != "all", k)):
        pct = 100 * agreed[key] / total[key]
        print(f"{key:16} {agreed[key]:3}/{total[key]:<3} agree ({pct:.0f}%)")
    print(
        f"agreeing refusals for another reason (arbiter refused a key it does not know): "
        f"{len(accidents)}"
    )
    for case_id in accidents:
        print(f"  {case_id}")
    waiting = [c.id for c in load_cases() if c.upstream_main]
    print(
        "verdicts of upstream main on fields no release has yet (the case carries the "
        f"release's own refusal of the key; main's verdict waits in upstream_main): {len(waiting)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
