"""The conflict search: MUS, MARCO enumeration and corrections on one feasibility oracle."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from constraints.rules import Rule

from ..claims import AnyClaim, FuncClaim, SetupClaim
from ..compile import CompiledModel
from ..cpsat import cp_model
from ..oracle import Oracle
from .data import DEFAULT_LIMITS, Limits


# ---------------------------------------------------------------------------- MUS / MCS
class Explainer:
    """Conflict and correction search over the functional claims of one input.

    Background (always assumed): setup claims and, for the claim-level search, every rule.
    Candidates: the functional claims, in name order.
    """

    def __init__(
        self,
        claims: Sequence[AnyClaim],
        rules: Sequence[Rule],
        facts: Mapping[str, Any],
        defaults: Mapping[str, Any],
        fact_source: Mapping[str, str] | None = None,
        *,
        oracle: Oracle | None = None,
        frozen: Mapping[str, Any] | None = None,
    ):
        self.claims = sorted(claims, key=lambda c: c.name)
        self.rules = sorted(rules, key=lambda r: r.id)
        self.facts = dict(facts)
        self.defaults = dict(defaults)
        self.fact_source = dict(fact_source or {})
        self.frozen = dict(frozen or {})
        self.oracle = oracle or Oracle(
            CompiledModel(
                self.claims,
                self.rules,
                self.facts,
                self.defaults,
                objective=False,
                frozen=frozen,
            )
        )
        cm = self.oracle.compiled
        self.by_name = {c.name: c for c in self.claims}
        self.by_rule = {r.id: r for r in self.rules}
        self.setup_lits = [
            lit for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], SetupClaim)
        ]
        self.rule_items = sorted(cm.rule_lit.items())
        self.items = sorted(
            (n, lit) for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], FuncClaim)
        )
        self.names = [n for n, _ in self.items]
        self.background = [*self.setup_lits, *(lit for _, lit in self.rule_items)]
        self._rules_memo: dict[tuple[str, ...], list[str]] = {}

    # -- single answers
    def feasible(self, names: Iterable[str]) -> bool:
        lits = dict(self.items)
        ok, _ = self.oracle.check([*self.background, *(lits[n] for n in names)])
        return ok

    def shrink(self, names: Sequence[str]) -> list[str] | None:
        """A MUS inside `names` (deletion with core refinement), or None if feasible."""
        lits = dict(self.items)
        return self.oracle.mus(self.background, [(n, lits[n]) for n in names])  # type: ignore[return-value]

    def first_conflict(self) -> list[str] | None:
        return self.shrink(self.names)

    def rules_for(self, names: Sequence[str]) -> list[str]:
        """A minimal set of rules that, with the setups, makes `names` infeasible."""
        key = tuple(sorted(names))
        if key not in self._rules_memo:
            lits = dict(self.items)
            background = [*self.setup_lits, *(lits[n] for n in key)]
            found = self.oracle.mus(background, self.rule_items)
            self._rules_memo[key] = self._weakest(background, list(found or []))  # type: ignore[arg-type]
        return list(self._rules_memo[key])

    def _weakest(self, background: list[Any], found: list[str]) -> list[str]:
        """`found` with each rule swapped for a weaker form of the same check (its
        `weaker`) that is in conflict with the same claims and rules as well: the solver's
        core picks either, the explanation names the more basic one."""
        rule_lits = dict(self.rule_items)
        for rid in list(found):
            for weak in self.by_rule[rid].weaker:
                if weak not in rule_lits or weak in found:
                    continue
                others = [rule_lits[r] for r in found if r != rid]
                ok, _ = self.oracle.check([*background, *others, rule_lits[weak]])
                if not ok:  # still minimal: shrunk again over the swapped set
                    swapped = sorted(weak if r == rid else r for r in found)
                    again = self.oracle.mus(background, [(r, rule_lits[r]) for r in swapped])
                    found = [str(r) for r in again or swapped]
                    break
        return found

    def grow(self, names: Iterable[str], order: Sequence[str] | None = None) -> list[str]:
        """A maximal satisfiable superset of the feasible set `names`, adding claims in
        `order` (first the ones the witness already satisfies, at no oracle call)."""
        kept = set(names)
        kept |= self._witness_satisfied()
        for name in order or self.names:
            if name in kept:
                continue
            if self.feasible([*kept, name]):
                kept.add(name)
                kept |= self._witness_satisfied()
        return sorted(kept)

    def _witness_satisfied(self) -> set[str]:
        values = self.oracle.compiled.values(self.oracle.solver)
        return {n for n in self.names if self.by_name[n].expr.evaluate(values)}

    def preferred_correction(self, order: Sequence[str] | None = None) -> list[str]:
        """The correction that drops claims late in `order` (default: name order): grows a
        satisfiable set from nothing, claim by claim in `order`; its complement is minimal."""
        order = list(order or self.names)
        if not self.feasible([]):
            return []
        kept = set()
        for name in order:
            if self.feasible([*kept, name]):
                kept.add(name)
        return [n for n in self.names if n not in kept]

    # -- enumeration
    def enumerate(
        self, limits: Limits = DEFAULT_LIMITS
    ) -> tuple[list[list[str]], list[list[str]], bool, str | None]:
        """(conflicts, corrections, complete, cut_by): up to one more of each than the
        limits ask for, so a caller can tell "exactly N" from "N and more"."""
        start = time.perf_counter()
        if not self.feasible([]):  # setups and rules alone are infeasible
            return [[]], [], True, None
        # conflicts may use 60% of the time budget; corrections always get at least 40%
        muses, muses_done = self.marco(limits.max_conflicts + 1, start + 0.6 * limits.time_budget_s)
        for mus in muses:  # before the correction search adds its blocking constraints
            self.rules_for(mus)
        deadline = max(
            start + limits.time_budget_s, time.perf_counter() + 0.4 * limits.time_budget_s
        )
        mcses, mcses_done = self.minimal_corrections(limits.max_corrections + 1, deadline)
        complete = muses_done and mcses_done
        if complete:
            return muses, mcses, True, None
        return muses, mcses, False, "time" if time.perf_counter() > deadline else "count"

    def marco(self, limit: int, deadline: float) -> tuple[list[list[str]], bool]:
        """MARCO over the functional claims: (conflicts in discovery order, exhausted).

        The map proposes the largest unexplored subset, so conflicts come early; a feasible
        seed is grown to a maximal satisfiable subset and its complement blocked."""
        n = len(self.names)
        index = {name: i for i, name in enumerate(self.names)}
        grid = cp_model.CpModel()
        x = [grid.new_bool_var(f"m{i}") for i in range(n)]
        grid.maximize(sum(x))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        muses: list[list[str]] = []
        while len(muses) < limit:
            if time.perf_counter() > deadline:
                return muses, False
            status = solver.solve(grid)
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                return muses, True
            seed = [self.names[i] for i in range(n) if solver.boolean_value(x[i])]
            if self.feasible(seed):
                mss = set(self.grow(seed))
                mcs = [name for name in self.names if name not in mss]
                if not mcs:  # the functional claims are consistent after all
                    return muses, True
                grid.add_bool_or([x[index[name]] for name in mcs])
            else:
                mus = self.shrink(seed) or []
                muses.append(mus)
                grid.add_bool_or([~x[index[name]] for name in mus])
        return muses, False

    def minimal_corrections(self, limit: int, deadline: float) -> tuple[list[list[str]], bool]:
        """Corrections smallest first: (list, exhausted).

        Each step maximises the number of functional claims that hold (one CP-SAT solve on
        the oracle's model, the claims free); the claims left out form a correction, which
        is minimal because dropping any proper subset would have kept more claims. A
        blocking clause ("keep at least one of them"), switched on by an assumption so the
        feasibility checks never see it, excludes it and its supersets from later steps."""
        cm = self.oracle.compiled
        model = cm.model
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        # the oracle's model holds the memory products CP-SAT 9.15's presolve mis-solves
        # (see arbiter.solve): a wrong optimum here would make a correction non-minimal
        solver.parameters.cp_model_presolve = False
        lits = dict(self.items)
        blocks: list[Any] = []
        found: list[list[str]] = []
        while len(found) < limit:
            left = deadline - time.perf_counter()
            if left <= 0:
                return found, False
            solver.parameters.max_time_in_seconds = left
            model.clear_assumptions()
            model.add_assumptions([*self.background, *blocks])
            model.maximize(sum(lits.values()))
            try:
                status = solver.solve(model)
            finally:
                model.clear_objective()
                model.clear_assumptions()
            if status == cp_model.INFEASIBLE:
                return found, True
            if status != cp_model.OPTIMAL:
                return found, False
            drop = [n for n in self.names if not solver.boolean_value(lits[n])]
            if not drop:
                return found, True
            found.append(drop)
            block = model.new_bool_var(f"block:{len(found)}")
            model.add_bool_or([lits[n] for n in drop]).only_enforce_if(block)
            blocks.append(block)
        return found, False
