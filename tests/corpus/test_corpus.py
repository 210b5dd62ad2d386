"""Arbiter's verdict against the engine's own, case by case (marker `corpus`)."""

from __future__ import annotations

import pytest

from .adapter import our_verdict
from .cases import load_cases

CASES = load_cases()

# case id -> why arbiter rightly (or knowingly) differs from the engine, with a source;
# the goal is an empty dict
KNOWN_DIFFERENCES: dict[str, str] = {}


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_arbiter_gives_the_engines_verdict(case):
    ours = our_verdict(case)
    if case.id in KNOWN_DIFFERENCES:
        assert ours.verdict != case.verdict, (
            f"{case.id} now agrees with the engine: remove it from KNOWN_DIFFERENCES"
        )
        return
    detail = "; ".join(ours.reasons) or "no reason given"
    assert ours.verdict == case.verdict, (
        f"engine: {case.verdict} ({case.reject or case.why}); "
        f"arbiter ({ours.via}): {ours.verdict}: {detail}"
    )


def test_known_differences_name_corpus_cases_and_give_a_reason():
    unknown = set(KNOWN_DIFFERENCES) - {c.id for c in CASES}
    unsourced = [k for k, reason in KNOWN_DIFFERENCES.items() if len(reason.strip()) < 20]
    assert not unknown, f"no such corpus cases: {sorted(unknown)}"
    assert not unsourced, f"give a sourced reason for: {unsourced}"
