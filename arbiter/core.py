"""The core: solve a `ArbitrationProblem`, never explain it.

`solve()` compiles the problem on a copy of the cached rule base, fixes the hard literals
and runs the lexicographic objective (DESIGN.md section 5) as few CP-SAT solves as
overflow allows: perf tiers (higher first), then default rules kept, then (modes) the
capacity stages, then fewest changes, then a budgeted numeric tie-break. It returns the
solved values, or None when the hard part is infeasible; explaining why is
`arbiter.explain`'s job, on demand.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .capacity import mode_stages, mode_targets
from .compile import CompiledModel
from .cpsat import cp_model
from .errors import SolverModelInvalid, SolveTimeout
from .problem import ArbitrationProblem
from .resolution import SolveStatus

SEED = 0
_SAFE_OBJECTIVE = 1 << 50  # keep big-M objectives far from int64 overflow
# and exact in the double CP-SAT reports the objective in (2^53); `one_solve` reads no
# objective value (it pins nothing), so it only keeps far from int64 (2^63)
ONE_SOLVE_LIMIT = 1 << 60
SKIP_QUICK_AFTER_ATTEMPT = True
TIE_BREAK_BUDGET = 0.25  # deterministic seconds for the numeric tie-break stage
QUICK_BUDGET = 0.01  # deterministic seconds for a stage's cheap first search
QUICK_CONFLICTS = 2000  # and its conflict budget
PRESOLVE = True  # presolve in the full search (see Stages._search)


@dataclass
class Solved:
    """The core's answer: every option's value, the status and what it cost."""

    values: dict[str, Any]
    status: SolveStatus
    compiled: CompiledModel
    solves: int
    build_ms: float
    solve_ms: float
    solution: list[int] = field(default_factory=list)  # every variable's value, by index


class Objective:
    """A linear sum over CP-SAT literals and integer variables kept as {variable index:
    coefficient} plus a constant, so that it goes into the model's proto directly (as an
    objective, or as the pin of its optimum) without building CP-SAT expressions. A
    negated literal `~x` counts as `1 - x`. Terms go into the proto in variable order, as
    CP-SAT's own flattening writes them (the same proto, so the same search)."""

    __slots__ = ("coeffs", "offset")

    def __init__(self, coeffs: dict[int, int] | None = None, offset: int = 0):
        self.coeffs = coeffs if coeffs is not None else {}
        self.offset = offset

    @classmethod
    def of(cls, terms: Iterable[tuple[Any, int]]) -> Objective:
        """The sum of `coefficient * variable` over (variable, coefficient) pairs."""
        out = cls()
        for var, coef in terms:
            out.add(var, coef)
        return out

    def add(self, var: Any, coef: int) -> None:
        index = var.index
        if index < 0:  # the negation of Boolean variable -index - 1
            self.offset += coef
            index, coef = -index - 1, -coef
        self.coeffs[index] = self.coeffs.get(index, 0) + coef

    def plus(self, other: Objective, scale: int) -> Objective:
        """self + scale * other."""
        coeffs = dict(self.coeffs)
        for index, coef in other.coeffs.items():
            coeffs[index] = coeffs.get(index, 0) + scale * coef
        return Objective(coeffs, self.offset + scale * other.offset)

    def magnitude(self) -> int:
        """The sum of |coefficient| plus |offset|: the sum's largest possible magnitude over
        0/1 variables (what CP-SAT's overflow check adds up for literal terms)."""
        return sum(abs(c) for c in self.coeffs.values()) + abs(self.offset)

    def value(self, solution: Sequence[int]) -> int:
        """The sum's value in a solution vector (indexed by variable)."""
        return self.offset + sum(c * solution[i] for i, c in self.coeffs.items())

    def _items(self) -> list[tuple[int, int]]:
        return sorted((i, c) for i, c in self.coeffs.items() if c)

    def set_on(self, model: cp_model.CpModel, sense: int) -> None:
        """Make `sense * self` the model's objective to maximise (as CP-SAT's `maximize`
        and `minimize` write it: minimise with a scaling factor of -1 to maximise)."""
        model.clear_objective()
        proto = model.proto.objective
        items = self._items()
        proto.vars.extend(i for i, _ in items)
        if sense > 0:
            proto.scaling_factor = -1.0
            proto.offset = -self.offset
            proto.coeffs.extend(-c for _, c in items)
        else:
            proto.scaling_factor = 1.0
            proto.offset = self.offset
            proto.coeffs.extend(c for _, c in items)

    def pin(self, model: cp_model.CpModel, value: int) -> None:
        """Add `self == value`."""
        items = self._items()
        constraint = model.proto.constraints.add()  # held: its sub-message lives in it
        linear = constraint.linear
        linear.vars.extend(i for i, _ in items)
        linear.coeffs.extend(c for _, c in items)
        linear.domain.extend([value - self.offset, value - self.offset])


class Stages:
    """Runs the lexicographic objective as a series of CP-SAT solves, each pinning its
    optimum before the next.

    Each stage first tries a cheap search (no presolve, no LP relaxation, no clause
    inprocessing) under a small deterministic-time budget, which proves small instances
    such as the realistic scenario in a few ms; a stage it cannot prove is solved again
    with presolve and the full LP relaxation, which make weighted claim sets (a MaxSAT)
    tractable (the numeric tie-break: with the full LP, under its own budget). Each stage
    after the first is hinted with the previous stage's whole solution. Both are
    deterministic (one worker, fixed seed, deterministic budgets), so the same input
    always takes the same path to the same answer."""

    def __init__(self, compiled: CompiledModel, time_limit_s: float | None):
        self.cm = compiled
        self.model = compiled.model
        self.solver = cp_model.CpSolver()
        params = self.solver.parameters
        params.num_workers = 1
        params.random_seed = SEED
        # small arbitration models gain nothing from probing or symmetry detection
        params.cp_model_probing_level = 0
        params.symmetry_level = 0
        self.deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
        self.time_limit_s = time_limit_s
        self.optimal = True
        # the cheap first search suits the claim and change stages (Boolean objectives);
        # the capacity stages of a mode range over large integers, where its clock runs
        # slow, so they go straight to the full search
        self.quick = True
        # set when a cheap search of the whole objective could not prove it: the next
        # stage (the same claims) goes straight to the full search
        self.skip_quick = False
        self._solution: list[int] = []  # of the last stage that found one
        self.solves = 0
        self.solve_ms = 0.0

    def _search(self, how: str) -> None:
        """Set the search: "quick" (no presolve, no LP, no SAT inprocessing, small
        deterministic budgets), "full" (presolve and the full LP relaxation) or "tie"
        (the full LP without presolve, under the tie-break's deterministic budget)."""
        params = self.solver.parameters
        # clause inprocessing (vivification, subsumption) pays off on long searches; the
        # quick search proves the realistic scenario's stages in half the branches without
        params.use_sat_inprocessing = how != "quick"
        # or-tools#5274 (presolve mis-solving products under enforcement) was the reason to
        # keep presolve off; on the installed release the brute-force property tests and
        # tests/arbiter/test_solver_regressions.py pass with it in the full search
        params.cp_model_presolve = how == "full" and PRESOLVE
        params.linearization_level = 0 if how == "quick" else 2
        params.max_deterministic_time = {"quick": QUICK_BUDGET, "tie": TIE_BREAK_BUDGET}.get(
            how, float("inf")
        )
        # deterministic too: the LP-free search can spend CPU that its clock does not count
        params.max_number_of_conflicts = QUICK_CONFLICTS if how == "quick" else (1 << 62)
        if self.deadline is not None:
            params.max_time_in_seconds = max(0.001, self.deadline - time.perf_counter())

    def run(self, expr: Any, sense: int, *, tie_break: bool = False) -> int | None:
        """Optimise `sense * expr` (1 maximise, -1 minimise), then pin it; None if infeasible.

        A `tie_break` stage only chooses among configurations that are already optimal for
        the contract (tiers, then changes); it runs under a fixed deterministic-time budget,
        so its answer is reproducible, and an unproven tie-break does not make the
        resolution "feasible"."""
        self.model.clear_objective()
        if self._solution:  # start from the previous stage's configuration
            self._hint()
        if isinstance(expr, Objective):
            expr.set_on(self.model, sense)
        elif sense > 0:
            self.model.maximize(expr)
        else:
            self.model.minimize(expr)
        status = None
        if self.quick and not self.skip_quick:
            self._search("quick")
            status = self._solve()
        if status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
            self._search("tie" if tie_break else "full")
            status = self._solve()
        if status == cp_model.INFEASIBLE and self.solver.parameters.linearization_level == 2:
            # the full-LP search once called a feasible memory-model instance infeasible:
            # confirm with the default relaxation before believing it
            self.solver.parameters.linearization_level = 1
            status = self._solve()
        self.skip_quick = False
        if status == cp_model.INFEASIBLE:
            return None
        if status == cp_model.MODEL_INVALID:
            raise SolverModelInvalid(self.model.validate() or "no detail given")
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            if tie_break:  # keep the previous stage's configuration
                return None
            raise SolveTimeout(self.time_limit_s or 0.0)
        if status == cp_model.FEASIBLE and not tie_break:
            self.optimal = False
        best = int(round(self.solver.objective_value))
        if isinstance(expr, Objective):
            expr.pin(self.model, best)
        else:
            self.model.add(expr == best)
        self._solution = list(self.solver.response_proto.solution)
        return best

    def attempt(self, expr: Objective) -> bool | None:
        """Maximise `expr` in one cheap search (the first stage: no hint from an earlier
        one): True when it proves the optimum, False when it proves the model infeasible,
        None otherwise (nothing is pinned, the caller goes on with the stages)."""
        self.model.clear_objective()
        expr.set_on(self.model, 1)
        self._search("quick")
        status = self._solve()
        if status == cp_model.INFEASIBLE:
            return False
        if status == cp_model.MODEL_INVALID:
            raise SolverModelInvalid(self.model.validate() or "no detail given")
        if status != cp_model.OPTIMAL:
            self.skip_quick = SKIP_QUICK_AFTER_ATTEMPT
            return None
        self._solution = list(self.solver.response_proto.solution)
        return True

    @property
    def solution(self) -> list[int]:
        """The last configuration found, every variable's value by index."""
        return list(self._solution)

    @property
    def values(self) -> dict[str, Any]:
        """Every option and fact in the last configuration found."""
        return self.cm.values_from(self._solution)

    def _solve(self) -> Any:
        status = self.solver.solve(self.model)
        self.solves += 1
        self.solve_ms += self.solver.wall_time * 1000
        return status

    def _hint(self) -> None:
        """Hint the previous stage's whole solution (every variable it had), which is
        feasible for this stage too: the stages only ever add the pin of an optimum that
        solution reaches."""
        self.model.clear_hints()
        hint = self.model.proto.solution_hint
        hint.vars.extend(range(len(self._solution)))
        hint.values.extend(self._solution)


def objective_parts(
    problem: ArbitrationProblem, cm: CompiledModel
) -> list[tuple[Objective, int, int]]:
    """(expression, range, sense) per stage, most important first: each perf tier, the
    default rules kept, then fewest changes (with a mode, the options it infers are left
    out, so the capacity stages after it move only them)."""
    perf = problem.perf_claims
    parts: list[tuple[Objective, int, int]] = []
    for tier in sorted({c.priority for c in perf}, reverse=True):
        in_tier = [c for c in perf if c.priority == tier]
        terms = Objective()
        for c in in_tier:
            for sel, (_, w) in zip(cm.perf_sel[c.name], c.options(), strict=True):
                terms.add(sel, w)
        parts.append((terms, sum(c.weight for c in in_tier), 1))
    soft = [cm.rule_lit[r.id] for r in problem.soft_rules]
    if soft:
        parts.append((Objective.of((lit, 1) for lit in soft), len(soft), 1))
    targets = mode_targets(problem.claims) if problem.mode is not None else ()
    kept = [lit for path, lit in cm.change_literals().items() if path not in targets]
    parts.append((Objective.of((lit, 1) for lit in kept), len(kept), -1))
    return parts


def optimise(stages: Stages, parts: list[tuple[Objective, int, int]]) -> bool:
    """Run the stages, folded into one big-M solve when the ranges allow; False when the
    hard part is infeasible."""
    combined = fold(parts, _SAFE_OBJECTIVE)
    if combined is None:
        return all(stages.run(expr, sense) is not None for expr, _, sense in parts)
    return stages.run(combined, 1) is not None


def one_solve(
    stages: Stages, parts: list[tuple[Objective, int, int]], tie: Objective, cm: CompiledModel
) -> bool | None:
    """Every stage and the numeric tie-break as one objective, in one cheap search: True
    when that search proves its optimum (the lexicographic optimum, tie-break included),
    False when it proves the hard part infeasible, None when it cannot tell or the
    weights would not stay exact (then the stages run one by one, as `optimise` does).

    Exact: each part's weight exceeds the largest difference all the parts after it can
    make (their ranges: a distance term of the tie-break at most its variable's upper
    bound), so one optimum of the sum is optimal for each part in turn; the objective's
    magnitude stays below `ONE_SOLVE_LIMIT`, far inside CP-SAT's int64."""
    bounds = cm.model.proto.variables
    # the upper bound of each distance term (its domain's last value; the proto's
    # repeated field does not take negative indices)
    tie_range = sum(bounds[i].domain[len(bounds[i].domain) - 1] * c for i, c in tie.coeffs.items())
    combined = fold([*parts, (tie, tie_range, -1)], ONE_SOLVE_LIMIT)
    if combined is None:
        return None
    return stages.attempt(combined)


def fold(parts: list[tuple[Objective, int, int]], limit: int) -> Objective | None:
    """The parts (expression, range, sense), most important first, as one objective to
    maximise, or None when its weights, or the sum of its terms' magnitudes, would pass
    `limit`. A part's range is what it can change (a perf claim's requirement and its
    alternatives exclude each other), but CP-SAT's overflow check adds up every term: 5,000
    alternatives under a large scale overflowed int64 with a range that fit."""
    scale, combined, magnitude = 1, Objective(), 0
    for expr, rng, sense in reversed(parts):
        combined = combined.plus(expr, sense * scale)
        magnitude += scale * max(rng, expr.magnitude())
        scale *= rng + 1
        if scale > limit or magnitude > limit:
            return None
    return combined


def solve(problem: ArbitrationProblem) -> Solved | None:
    """The best configuration for `problem`, or None when its hard part is infeasible.
    Raises SolveTimeout when the time limit found nothing."""
    t0 = time.perf_counter()
    cm = problem.compile(fixed=True)  # its hard claims hold: what they fix is constant
    soft = {cm.rule_lit[r.id].index for r in problem.soft_rules}
    hard = [*cm.claim_lit.values(), *(lit for lit in cm.rule_lit.values() if lit.index not in soft)]
    if hard:
        cm.model.add_bool_and(hard)
    build_ms = (time.perf_counter() - t0) * 1000
    stages = Stages(cm, problem.time_limit_s)
    parts = objective_parts(problem, cm)
    tie = Objective.of((d, 1) for d in cm.distance_terms())
    done = one_solve(stages, parts, tie, cm) if problem.mode is None else None
    if done is False:
        return None
    if done is None:
        if not optimise(stages, parts):
            return None
        if problem.mode is not None:
            targets = mode_targets(problem.claims)
            facts = {**problem.facts, "memory.terms": problem.profile.memory_terms}
            stages.quick = False
            mode_stages(stages, cm, problem.mode, targets, problem.defaults, facts)
        stages.run(tie, -1, tie_break=True)
    status = SolveStatus.OPTIMAL if stages.optimal else SolveStatus.FEASIBLE
    return Solved(
        stages.values, status, cm, stages.solves, build_ms, stages.solve_ms, stages.solution
    )
