"""Explanations on top of the core: the lazy ConflictError `arbitrate()` raises, and
`explain()`, which arbitrates and explains the outcome in one call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from constraints.rules import Rule
from constraints.shared.rules.memory import MEMORY_RULE_IDS

from ..capacity import memory_numbers
from ..core import solve
from ..errors import ConflictError, MemoryConflictError
from ..oracle import Oracle
from ..problem import ArbitrationProblem
from .assembly import explain_infeasible, explain_resolution
from .data import DEFAULT_LIMITS, Explanation, Limits
from .resolved import resolve


def explain_conflict(problem: ArbitrationProblem, limits: Limits | None = None) -> Explanation:
    """Conflicts, corrections and notes for a problem whose hard part is infeasible."""
    explanation = explain_infeasible(
        problem.claims,
        problem.rules,
        problem.facts,
        problem.defaults,
        problem.fact_source,
        limits or DEFAULT_LIMITS,
        frozen=problem.frozen,
    )
    return explanation.for_profile(problem.profile)


def conflict_error(problem: ArbitrationProblem, limits: Limits | None = None) -> ConflictError:
    """The error for an infeasible problem; its conflicts are searched on first access.

    A MemoryConflictError when the memory rules take part in every conflict (one
    feasibility check without them finds a configuration), which adds the arithmetic."""

    explain = partial(explain_conflict, problem)
    limits = limits or DEFAULT_LIMITS
    memory = [r.id for r in problem.rules if r.id in MEMORY_RULE_IDS]
    if not memory:
        return ConflictError(explain=explain, limits=limits)
    oracle = Oracle(problem.bare().compile(soft=False, objective=False))
    cm = oracle.compiled
    hard = list(cm.claim_lit.values())
    others = [lit for rid, lit in cm.rule_lit.items() if rid not in memory]
    feasible, _ = oracle.check([*hard, *others])
    if not feasible:
        return ConflictError(explain=explain, limits=limits)
    numbers = partial(
        _numbers,
        claims=problem.claims,
        defaults=problem.defaults,
        facts=problem.facts,
        terms=problem.profile.memory_terms,
    )
    return MemoryConflictError(explain=explain, limits=limits, numbers=numbers)


def _numbers(err: ConflictError, **kwargs: Any) -> tuple[str, tuple[str, ...]] | None:
    return memory_numbers(
        err, kwargs["claims"], kwargs["defaults"], kwargs["facts"], kwargs["terms"]
    )


def explain(
    claims: Iterable[Any],
    *,
    rules: Iterable[Rule | str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    **options: Any,
) -> Explanation:
    """Arbitrate `claims` and explain the outcome: conflicts and corrections when the hard
    part is infeasible, the reason for every dropped perf claim otherwise. `options` go to
    `arbitrate()` as they are (a profile, a mode). Raises InvalidClaim for malformed input.
    As `arbitrate()` does, it runs the fallbacks of dropped claims."""
    problem = ArbitrationProblem.prepare(claims, rules=rules, defaults=defaults, **options)
    solved = solve(problem)
    if solved is None:
        return explain_conflict(problem, limits)
    return explain_resolution(resolve(problem, solved))


__all__ = ["conflict_error", "explain", "explain_conflict"]
