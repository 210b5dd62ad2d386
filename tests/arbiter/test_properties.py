"""Property tests against a brute-force oracle over generated instances.

Instances: up to 12 boolean options, up to 10 perf claims (random priorities, weights and
alternatives), a few func claims and random rules. The oracle enumerates every assignment
of the chosen options (the rest stay at their defaults, as no claim or rule mentions them)
and ranks them lexicographically: perf tiers (higher first), then fewest changes.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from arbiter import ConflictError, arbitrate, func, perf
from constraints.expr import all_of, any_of, eq, implies, not_
from constraints.rules import Rule, Source
from constraints.schema import lookup, options

BOOL_PATHS = [s.path for s in options() if s.domain.kind == "bool" and not s.fact]
SRC = Source("test", "generated")


@st.composite
def instances(draw, max_perf=10, max_options=12, funcs=(0, 3)):
    n_opts = draw(st.integers(2, max_options))
    paths = draw(st.permutations(BOOL_PATHS))[:n_opts]

    def literal():
        return eq(draw(st.sampled_from(paths)), draw(st.booleans()))

    def requirement():
        shape = draw(st.integers(0, 3))
        if shape == 0:
            return literal()
        if shape == 1:
            return all_of(literal(), literal())
        if shape == 2:
            return any_of(literal(), literal())
        return implies(literal(), literal())

    rules = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 1))
        expr = implies(literal(), literal()) if kind == 0 else not_(all_of(literal(), literal()))
        if expr.paths():
            rules.append(Rule(f"gen.r{i}", f"generated rule {i}", SRC, expr))
    claims = []
    for i in range(draw(st.integers(*funcs))):
        claims.append(func(f"f{i}", requirement()))
    for i in range(draw(st.integers(1, max_perf))):
        weight = draw(st.integers(2, 6))
        alts = []
        if draw(st.booleans()):
            alts.append((requirement(), draw(st.integers(1, weight - 1))))
        claims.append(
            perf(
                f"p{i}",
                requirement(),
                weight=weight,
                priority=draw(st.integers(0, 2)),
                alternatives=alts,
            )
        )
    return paths, rules, claims


def assignments(paths):
    defaults = {
        s.path: s.default_for({"model.max_position_embeddings": 8192})
        for s in options()
        if not s.fact
    }
    facts = {s.path: s.default for s in options() if s.fact}
    base = {**defaults, **facts}
    base["build_config.max_seq_len"] = 8192
    for bits in itertools.product([False, True], repeat=len(paths)):
        values = dict(base)
        values.update(zip(paths, bits, strict=True))
        yield values, sum(values[p] != defaults[p] for p in paths)


def hard_ok(values, claims, rules, skip=()):
    return all(r.expr.evaluate(values) for r in rules) and all(
        c.expr.evaluate(values) for c in claims if c.kind == "func" and c.name not in skip
    )


def score(values, claims):
    tiers = sorted({c.priority for c in claims if c.kind == "perf"}, reverse=True)
    vector = []
    for t in tiers:
        total = 0
        for c in claims:
            if c.kind == "perf" and c.priority == t:
                total += next((w for e, w in c.options() if e.evaluate(values)), 0)
        vector.append(total)
    return tuple(vector)


def brute_force(paths, rules, claims):
    best = None
    for values, changes in assignments(paths):
        if not hard_ok(values, claims, rules):
            continue
        key = (score(values, claims), -changes)
        if best is None or key > best:
            best = key
    return best


def tier_vector(resolution, claims):
    return score(resolution.values, claims)


@given(instances())
@settings(max_examples=40)
def test_optimum_hard_claims_maximality_and_order(inst):
    paths, rules, claims = inst
    best = brute_force(paths, rules, claims)
    event("infeasible" if best is None else "feasible")
    if best is None:
        with pytest.raises(ConflictError):
            arbitrate(claims, rules=rules)
        return
    r = arbitrate(claims, rules=rules)
    assert r.status == "optimal"
    # equal optimum value (tiers, then changes)
    changes = sum(r.values[p] != lookup(p).default for p in paths)
    assert (tier_vector(r, claims), -changes) == best
    assert len(r.changes) == changes  # no option outside the instance moved
    # every hard claim and rule holds in the solved config
    flat = r.config.flat()
    assert hard_ok(flat, claims, rules)
    # kept set is maximal: no dropped claim fits beside the hard and kept claims
    by_name = {c.name: c for c in claims}
    kept_exprs = [
        by_name[k.name].options()[0 if k.alternative is None else k.alternative + 1][0]
        for k in r.kept
    ]
    for d in r.dropped:
        for values, _ in assignments(paths):
            if hard_ok(values, claims, rules) and all(e.evaluate(values) for e in kept_exprs):
                assert not any(e.evaluate(values) for e, _ in by_name[d.name].options())
        assert d.reason.kind in ("conflict", "outranked", "outweighed")
    # the same resolution for a shuffled claim list
    shuffled = list(claims)
    random.Random(len(claims)).shuffle(shuffled)
    again = arbitrate(shuffled, rules=list(reversed(rules)))
    assert again.values == r.values and again.kept == r.kept and again.dropped == r.dropped


@given(instances(max_perf=2, max_options=4, funcs=(2, 6)))
@settings(max_examples=40)
def test_reported_conflicts_are_infeasible_and_minimal(inst):
    paths, rules, claims = inst
    funcs = [c for c in claims if c.kind == "func"]
    feasible = brute_force(paths, rules, funcs) is not None
    event("feasible" if feasible else "infeasible")
    if feasible:
        return
    with pytest.raises(ConflictError) as err:
        arbitrate(claims, rules=rules)
    for conflict in err.value.conflicts:
        members = [c for c in funcs if c.name in conflict.claims]
        used_rules = [r for r in rules if r.id in conflict.rules]
        assert brute_force(paths, used_rules, members) is None  # infeasible
        for drop in members:  # every proper subset is feasible
            rest = [c for c in members if c is not drop]
            assert brute_force(paths, used_rules, rest) is not None
        for drop in used_rules:
            rest = [r for r in used_rules if r is not drop]
            assert brute_force(paths, rest, members) is not None
