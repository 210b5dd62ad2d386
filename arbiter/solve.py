"""`arbitrate()`: claims in, a resolution (or a ConflictError explained on demand) out.

Semantics (DESIGN.md section 5):
1. setup + func claims + rules are hard; infeasible -> ConflictError, whose conflicts
   (claims, then the rules linking them, both minimised) are searched when first read.
2. perf claims: lexicographic over priority (higher tiers strictly dominate), weighted sum
   inside a tier; a claim with alternatives earns the weight of the one that holds.
3. then fewest options changed from their defaults, then (a tie-break) numeric options as
   close to their defaults as possible.
4. claims are compiled in name order, with one worker and a fixed seed: the same claims in
   any order give the same resolution.
5. a dropped perf claim's requirement is not enforced at all, so nothing of it remains;
   its fallback runs once, after solving, in (priority desc, name) order, with its reason.

The steps live apart: `problem` validates the input, `core` solves (and never explains),
`explain` turns the answer into a resolution or a conflict with lazy explanations.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from constraints.rules import Rule

from .claims import FuncClaim, SetupClaim
from .compile import CompiledModel
from .core import SolveTimeout, solve
from .errors import Conflict
from .explain.entry import conflict_error
from .explain.resolved import resolve
from .oracle import Oracle
from .problem import (
    ArbitrationProblem,
    prepare_claims,
    prepare_rules,
    resolve_defaults,
    resolve_facts,
)
from .resolution import Resolution, SolveStatus


def arbitrate(
    claims: Iterable[Any],
    *,
    rules: Iterable[Rule | str] | None = None,
    time_limit_s: float | None = None,
    defaults: Mapping[str, Any] | None = None,
    profile: str | None = None,
    mode: str | None = None,
) -> Resolution:
    """Pick the best configuration for `claims` under `rules` (None: every shipped rule).

    Raises InvalidClaim for malformed input (before solving), ConflictError when the
    functional claims cannot all hold, SolveTimeout when the time limit found nothing.
    `defaults` overrides option defaults (for example a config the user already has), so
    that "fewest changes" counts from it. `profile` names the release whose defaults
    those are (constraints.profiles; default "trtllm-1.2"), the shipped rules compiled
    (those whose scope admits the profile) and the memory terms;
    `mode` ("local", "interactive", "server") infers batch, prefill chunk and KV capacity
    as MLC does. Rules of kind "default" are kept where they can be, in a tier below the
    perf claims and above "fewest changes"; the resolution lists the ones overridden.
    """
    started = time.perf_counter()
    problem = ArbitrationProblem.prepare(
        claims,
        rules=rules,
        time_limit_s=time_limit_s,
        defaults=defaults,
        profile=profile,
        mode=mode,
    )
    solved = solve(problem)
    if solved is None:
        raise conflict_error(problem)
    return resolve(problem, solved, started)


def find_conflict(claims, rules, facts, defaults, fact_source) -> Conflict:
    """One minimal conflict among the functional claims (setup claims in the background)."""
    oracle = Oracle(CompiledModel(claims, rules, facts, defaults, objective=False))
    cm = oracle.compiled
    by_name = {c.name: c for c in claims}
    setups = [lit for n, lit in cm.claim_lit.items() if isinstance(by_name[n], SetupClaim)]
    funcs = [(n, lit) for n, lit in cm.claim_lit.items() if isinstance(by_name[n], FuncClaim)]
    rule_items = sorted(cm.rule_lit.items())
    found = oracle.mus([*setups, *(lit for _, lit in rule_items)], funcs)
    if found is None:  # the setup facts themselves contradict the rules
        found = []
    lits = dict(funcs)
    rule_ids = oracle.mus([*setups, *(lits[n] for n in found)], rule_items) or []
    return _conflict_record(found, rule_ids, claims, rules, facts, fact_source)


def _conflict_record(found, rule_ids, claims, rules, facts, fact_source) -> Conflict:
    by_name = {c.name: c for c in claims}
    by_rule = {r.id: r for r in rules}
    paths: set[str] = set()
    for n in found:
        paths |= by_name[n].expr.paths()
    for rid in rule_ids:
        paths |= by_rule[rid].expr.paths()
    used_facts = {p: facts[p] for p in sorted(paths) if p in facts}
    setups = tuple(sorted({fact_source[p] for p in used_facts if p in fact_source}))
    setups += tuple(
        sorted(
            c.name
            for c in claims
            if isinstance(c, SetupClaim) and c.name not in setups and set(c.fixes) & paths
        )
    )
    return Conflict(tuple(found), tuple(rule_ids), setups, used_facts)


__all__ = [
    "SolveStatus",
    "SolveTimeout",
    "arbitrate",
    "find_conflict",
    "prepare_claims",
    "prepare_rules",
    "resolve_defaults",
    "resolve_facts",
]
