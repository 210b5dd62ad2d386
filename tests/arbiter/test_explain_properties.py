"""Property tests of explanations against brute force on generated instances.

An instance: 2-5 Boolean options, up to 10 functional claims, up to 4 rules and at most
one setup claim that fixes an option. Brute force enumerates every assignment of the
options (claims and rules read nothing else) and derives the exact sets of minimal
conflicts (MUS) and minimal corrections (MCS) from the sets of claims each assignment
satisfies.
"""

from __future__ import annotations

import itertools

from hypothesis import event, given, settings
from hypothesis import strategies as st

from arbiter import func, setup
from arbiter.explain import Limits, explain
from constraints.expr import all_of, any_of, eq, implies, not_
from constraints.rules import Rule, Source
from constraints.schema import options

BOOL_PATHS = [s.path for s in options() if s.domain.kind == "bool" and not s.fact]
SRC = Source("test", "generated")
EVERYTHING = Limits(max_conflicts=1000, max_corrections=1000, time_budget_s=60)


@st.composite
def instances(draw):
    paths = draw(st.permutations(BOOL_PATHS))[: draw(st.integers(2, 5))]

    def literal():
        return eq(draw(st.sampled_from(paths)), draw(st.booleans()))

    def requirement():
        shape = draw(st.integers(0, 4))
        if shape <= 1:
            return literal()
        if shape == 2:
            return all_of(literal(), literal())
        if shape == 3:
            return any_of(literal(), literal())
        return implies(literal(), literal())

    rules = []
    for i in range(draw(st.integers(0, 4))):
        a, b = literal(), literal()
        expr = implies(a, b) if draw(st.booleans()) else not_(all_of(a, b))
        if expr.paths():
            rules.append(Rule(f"gen.r{i}", f"generated rule {i}", SRC, expr))
    claims = [func(f"c{i}", requirement()) for i in range(draw(st.integers(2, 10)))]
    setups = []
    if draw(st.booleans()):
        setups.append(setup("fixed", {draw(st.sampled_from(paths)): draw(st.booleans())}))
    return paths, rules, setups, claims


def satisfied_sets(paths, rules, setups, claims):
    """For each assignment that satisfies rules and setups, the set of claims it satisfies."""
    out = set()
    for bits in itertools.product([False, True], repeat=len(paths)):
        values = dict(zip(paths, bits, strict=True))
        if all(r.expr.evaluate(values) for r in rules) and all(
            s.expr.evaluate(values) for s in setups
        ):
            out.add(frozenset(c.name for c in claims if c.expr.evaluate(values)))
    return out


def brute_force(paths, rules, setups, claims):
    sat = satisfied_sets(paths, rules, setups, claims)
    names = [c.name for c in claims]

    def feasible(subset):
        return any(subset <= s for s in sat)

    muses = set()
    for k in range(len(names) + 1):
        for combo in itertools.combinations(names, k):
            s = frozenset(combo)
            if not feasible(s) and all(feasible(s - {x}) for x in s):
                muses.add(tuple(sorted(s)))
    maximal = [s for s in sat if not any(s < t for t in sat)]
    mcses = {tuple(sorted(set(names) - s)) for s in maximal}
    return muses, mcses, feasible


@given(instances())
@settings(max_examples=30)
def test_conflicts_and_corrections_equal_brute_force(inst):
    paths, rules, setups, claims = inst
    muses, mcses, feasible = brute_force(paths, rules, setups, claims)
    explanation = explain([*setups, *claims], rules=rules, limits=EVERYTHING)
    if feasible(frozenset(c.name for c in claims)):
        event("feasible")
        assert explanation.status == "resolved"
        return
    event("infeasible")
    assert explanation.status == "conflict"
    assert explanation.search.complete
    found = {tuple(sorted(c.conflict.claims)) for c in explanation.conflicts}
    assert found == muses
    fixes = {fix.drop for fix in explanation.corrections}
    assert fixes == ({m for m in mcses if m} if muses != {()} else set())
    setup_names = {s.name for s in setups}
    for fix in explanation.corrections:
        assert fix.verified
        assert not setup_names & set(fix.drop)  # a fact is never offered as a fix
        rest = frozenset(c.name for c in claims) - set(fix.drop)
        assert feasible(rest)  # the correction fixes it
        for name in fix.drop:  # and is minimal
            assert not feasible(rest | {name})
    if explanation.menus:  # independent conflicts: every pick of one per conflict is a fix
        picks = {tuple(sorted(p)) for p in itertools.product(*explanation.menus)}
        assert picks == fixes
    by_rule = {r.id: r for r in rules}
    for report in explanation.conflicts:
        members = [c for c in claims if c.name in report.conflict.claims]
        used = [by_rule[r] for r in report.conflict.rules]
        assert not setup_names & set(report.conflict.claims)
        # the claims with only the reported rules are infeasible, and no rule is spare
        _, _, with_rules = brute_force(paths, used, setups, members)
        assert not with_rules(frozenset(c.name for c in members))
        for spare in used:
            rest_rules = [r for r in used if r is not spare]
            _, _, without = brute_force(paths, rest_rules, setups, members)
            assert without(frozenset(c.name for c in members))
    # determinism: a second run renders byte-identical reports
    again = explain([*reversed(claims), *setups], rules=list(reversed(rules)), limits=EVERYTHING)
    for fmt in ("text", "markdown", "json"):
        assert explanation.render(fmt) == again.render(fmt)


@given(instances())
@settings(max_examples=20)
def test_default_budget_conflicts_are_infeasible_and_minimal(inst):
    paths, rules, setups, claims = inst
    _, _, feasible = brute_force(paths, rules, setups, claims)
    if feasible(frozenset(c.name for c in claims)):
        return
    explanation = explain([*setups, *claims], rules=rules, limits=Limits(2, 2, 5.0))
    assert 1 <= len(explanation.conflicts) <= 2 and len(explanation.corrections) <= 2
    for report in explanation.conflicts:
        s = frozenset(report.conflict.claims)
        assert not feasible(s) and all(feasible(s - {x}) for x in s)
    if not explanation.search.complete:
        assert explanation.search.cut_by == "count"
        assert "CFG003" in explanation.render("text")
