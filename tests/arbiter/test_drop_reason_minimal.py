"""Drop reasons against a brute-force oracle: each reason is a minimal infeasible set.

A dropped perf claim's reason names held claims (functional claims and kept perf claims,
each by the alternative that holds) and rules; with the dropped claim's requirement they
must admit no assignment, and without any one of them they must admit one. The reasons
are searched on small models around the claim first (`ResolutionExplainer._local_mus`),
with deletion steps a witness configuration answers; this checks both against
enumeration over every assignment of the instance's options.
"""

from __future__ import annotations

from hypothesis import given, settings

from arbiter import ConflictError, arbitrate

from .test_properties import assignments, instances


def _feasible(paths, exprs) -> bool:
    return any(all(e.evaluate(values) for e in exprs) for values, _ in assignments(paths))


@given(instances(max_perf=6, max_options=6, funcs=(0, 2)))
@settings(max_examples=40)
def test_each_drop_reason_is_infeasible_and_minimal(inst):
    paths, rules, claims = inst
    try:
        r = arbitrate(claims, rules=rules)
    except ConflictError:
        return
    by_name = {c.name: c for c in claims}
    by_rule = {rule.id: rule for rule in rules}
    kept = {k.name: k for k in r.kept}

    def requirement(name):
        claim = by_name[name]
        if name in kept:
            alt = kept[name].alternative
            return claim.options()[0 if alt is None else alt + 1][0]
        return claim.expr

    for d in r.dropped:
        reason = d.reason
        assert reason.kind in ("conflict", "outranked", "outweighed")
        assert set(reason.winners) <= set(kept)
        items = [requirement(n) for n in reason.claims] + [by_rule[i].expr for i in reason.rules]
        primary = by_name[d.name].options()[0][0]
        assert not _feasible(paths, [primary, *items]), (d.name, reason)
        for i in range(len(items)):
            rest = items[:i] + items[i + 1 :]
            assert _feasible(paths, [primary, *rest]), (d.name, reason, i)
