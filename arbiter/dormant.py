"""Dormant rules: guarded rules a model can leave out until something reads their guard.

A rule `if G then B` whose guard G is false at the defaults, and whose guard options no
other rule reads, constrains nothing that matters as long as no claim reads those options
either: any configuration with G true can set the guard options back to their defaults,
which makes G false (so the rule holds), leaves every other rule and every claim as it
was (none reads them) and changes fewer options. So the feasible claim sets, the minimal
conflicts and corrections (the rule never belongs to one) and the optimum are the same
with the rule's body B left out. `arbiter.compile` gives such a rule its literal but no
body, and compiles the body as soon as anything declares one of the guard options (a
claim added later, an explanation's forced literal), so a model is never looser than
its rules.

The memory rule `memory.fail-fast-needs-one-sequence` is the case that pays: its body is
thousands of constraints, guarded by a flag almost no configuration sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from constraints.expr import Implies
from constraints.rules import Rule

from .claims import AnyClaim, PerfClaim

Guards = Mapping[str, frozenset[str]]  # rule id -> the options its guard reads


def guarded_rules(
    rules: Sequence[Rule], facts: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, frozenset[str]]:
    """The rules of `rules` that may sleep, with their guard options: an `if G then B`
    rule whose guard reads at least one option (not only facts), is false at the defaults,
    and reads no option that another rule of `rules` reads."""
    candidates: dict[str, frozenset[str]] = {}
    for rule in rules:
        expr = rule.expr
        if not isinstance(expr, Implies):
            continue
        guard = frozenset(p for p in expr.condition.paths() if p not in facts)
        if not guard:
            continue
        try:
            holds = expr.condition.evaluate({**defaults, **facts})
        except (KeyError, TypeError, ValueError):  # cannot tell: keep the rule awake
            continue
        if holds is False:
            candidates[rule.id] = guard
    if not candidates:
        return {}
    readers: dict[str, int] = {}
    for rule in rules:
        for path in rule.expr.paths():
            readers[path] = readers.get(path, 0) + 1
    # a guard option read by this rule alone (the rule may read it in its body too, but
    # counts once: paths() is a set)
    return {rid: guard for rid, guard in candidates.items() if all(readers[p] == 1 for p in guard)}


def claim_reads(claims: Iterable[AnyClaim]) -> frozenset[str]:
    """Every option and fact the claims read (a perf claim: with its alternatives)."""
    out: set[str] = set()
    for claim in claims:
        if isinstance(claim, PerfClaim):
            for expr, _ in claim.options():
                out |= expr.paths()
        else:
            out |= claim.expr.paths()
    return frozenset(out)


def asleep(guards: Guards, claims: Iterable[AnyClaim]) -> dict[str, frozenset[str]]:
    """The rules of `guards` that stay dormant with these claims (none reads a guard),
    with their guard options."""
    if not guards:
        return {}
    read = claim_reads(claims)
    return {rid: guard for rid, guard in guards.items() if read.isdisjoint(guard)}
