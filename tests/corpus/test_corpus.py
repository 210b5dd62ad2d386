"""Arbiter's verdict against the engine's own, case by case (marker `corpus`)."""

from __future__ import annotations

from functools import cache

import pytest

from .adapter import our_verdict
from .cases import load_cases
from .differences import AWAITING_FACTS, KNOWN_DIFFERENCES
from .report import by_accident

CASES = load_cases()
BY_ID = {c.id: c for c in CASES}


@cache
def _ours(case_id: str):
    """Arbiter's verdict on a case, computed once per test session."""
    return our_verdict(BY_ID[case_id])


def _param(case):
    if case.id not in AWAITING_FACTS:
        return pytest.param(case, id=case.id)
    # strict: once the facts land and the case agrees, it fails until its entry goes
    mark = pytest.mark.xfail(reason=f"waits for the facts: {AWAITING_FACTS[case.id]}", strict=True)
    return pytest.param(case, id=case.id, marks=mark)


@pytest.mark.corpus
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_arbiter_gives_the_engines_verdict(case):
    ours = _ours(case.id)
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


def test_no_agreeing_refusal_is_an_accident():
    """An agreeing refusal of an unknown key is right only where the engine's own verdict
    is that refusal (the case says so: extra=forbid, a renamed or removed key)."""
    accidents = [c.id for c in CASES if by_accident(c, _ours(c.id))]
    assert not accidents, f"agreeing for another reason than the engine's: {accidents}"


@pytest.mark.parametrize("case", [c for c in CASES if c.upstream_main], ids=lambda c: c.id)
def test_a_release_refuses_the_main_only_key_arbiter_names(case):
    """A case keeping upstream main's verdict: arbiter refuses the very key the release
    refuses (named in the case's `reject`), and names no other."""
    ours = _ours(case.id)
    assert ours.verdict == "reject" and case.profile == "trtllm-1.2"
    key = ours.reasons[0].split(":", 1)[0]
    assert f"refuses {key}," in (case.reject or ""), (key, case.reject)
    assert len(ours.reasons) == 1 or all("unknown field" in r for r in ours.reasons)
