"""Arbiter's verdict against the engine's own, case by case (marker `corpus`)."""

from __future__ import annotations

import pytest

from .adapter import our_verdict
from .cases import load_cases
from .differences import AWAITING_FACTS, KNOWN_DIFFERENCES

CASES = load_cases()


def _param(case):
    if case.id not in AWAITING_FACTS:
        return pytest.param(case, id=case.id)
    # strict: once the facts land and the case agrees, it fails until its entry goes
    mark = pytest.mark.xfail(reason=f"waits for the facts: {AWAITING_FACTS[case.id]}", strict=True)
    return pytest.param(case, id=case.id, marks=mark)


@pytest.mark.corpus
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
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
    assert not set(KNOWN_DIFFERENCES) & set(AWAITING_FACTS)
    unknown = (set(KNOWN_DIFFERENCES) | set(AWAITING_FACTS)) - {c.id for c in CASES}
    unsourced = [k for k, reason in KNOWN_DIFFERENCES.items() if len(reason.strip()) < 20]
    assert not unknown, f"no such corpus cases: {sorted(unknown)}"
    assert not unsourced, f"give a sourced reason for: {unsourced}"
