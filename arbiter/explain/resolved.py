"""A solved problem as a `Resolution`, with its explanations worked out when asked.

`resolve()` turns the core's answer into the resolution (kept and dropped claims, changes,
stats) and runs the fallbacks. The `ResolutionExplainer` it attaches answers drop reasons
and provenance lazily. A drop reason is searched first in the dropped claim's
neighbourhood (the rules and held claims around the options it reads, see `_local_mus`),
by trying values where its options allow (`arbiter.explain.refute`): a neighbourhood
shown feasible needs no model, and one shown to hold a single minimal reason gives it
with no model either; otherwise a small model's solver cores choose the reason, while
trying values answers the deletion steps that are feasible and confirms the first core;
provenance, and a drop no neighbourhood explains, use one feasibility oracle over the
whole problem (a copy of the cached rule base with the claims), built on the first
question that needs it and reused for every later one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import cached_property, partial
from typing import Any

from constraints.expr import Eq
from constraints.rules import Rule

from ..capacity import equalities
from ..claims import AnyClaim, FuncClaim, PerfClaim, SetupClaim
from ..compile import CompiledModel
from ..core import Solved
from ..errors import InternalError
from ..oracle import Oracle
from ..problem import ArbitrationProblem
from ..resolution import (
    Change,
    DroppedClaim,
    DropReason,
    KeptClaim,
    Provenance,
    Resolution,
    SolveStatus,
)
from .assembly import explain_resolution
from .refute import Item, satisfiable
from .repair import suggest
from .rule_reads import RuleReads, rule_reads

REPAIR_ROUNDS = 3  # rounds of repairs a witness tries before a solver call
LOCAL_STEPS = 4  # neighbourhoods tried for a drop reason before the whole problem
NARROW_STEPS = 2  # of which the first ones only take rules reading at most NARROW_RULE options
NARROW_RULE = 6


class ResolutionExplainer:
    """Drop reasons and provenance for one resolution, computed on demand."""

    def __init__(
        self, problem: ArbitrationProblem, kept: Sequence[KeptClaim], values: Mapping[str, Any]
    ):
        self.problem = problem
        self.claims = problem.claims
        self.rules = problem.rules
        self.facts = problem.facts
        self.defaults = problem.defaults
        self.fact_source = problem.fact_source
        self.kept = {k.name: k for k in kept}
        self.values = values
        self.by_name = {c.name: c for c in self.claims}
        # the whole problem's oracle, compiled when a question first needs it; its `calls`
        # count every feasibility check made for this resolution (a budget reads them)
        self._oracle = Oracle(partial(problem.compile, soft=False, objective=False))
        self.small_calls = 0  # models of a core built, and the checks run on them
        self.small_checks = 0
        self._local: dict[Any, Oracle] = {}  # neighbourhood models by their items
        self._items: dict[Any, Item] = {}  # what trying values needs, by key
        self._scratch: dict[str, Any] | None = None

    @property
    def oracle(self) -> Oracle:
        return self._oracle

    def explanation(self, resolution: Resolution) -> Any:
        return explain_resolution(resolution)

    def _held(self, cm: CompiledModel | None = None) -> list[tuple[str, Any]]:
        """(name, literal) of every hard claim and kept perf claim (its chosen alternative)
        in `cm` (default: the oracle's model), as far as `cm` holds them."""
        cm = cm or self.oracle.compiled
        out = [
            (n, lit) for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], FuncClaim)
        ]
        for name, k in self.kept.items():
            if name in cm.perf_sel:
                out.append(
                    (name, cm.perf_sel[name][0 if k.alternative is None else k.alternative + 1])
                )
        return out

    def _background(self) -> list[Any]:
        cm = self.oracle.compiled
        return [lit for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], SetupClaim)]

    def _candidates(self) -> list[tuple[Any, Any]]:
        """Held claims (kept perf claims first, higher tiers first) and then the rules: the
        deletion pass tests the ones listed first for removal first, so functional claims
        are blamed last among claims, and rules last of all."""
        held = self._held()
        held.sort(key=lambda item: (item[0] not in self.kept, -self._priority(item[0]), item[0]))
        rules = sorted(self.oracle.compiled.rule_lit.items())
        return held + [(("rule", rid), lit) for rid, lit in rules]

    def _mus(
        self, forced: Any, candidates: list[tuple[Any, Any]], forcing: str | None = None
    ) -> list[Any] | None:
        """A minimal subset of `candidates` infeasible with the literal `forced(model)`
        gives and the setups, or None (`forcing`: the claim that literal belongs to).

        One check on the whole model finds a core; the deletion pass then runs on a model
        of the core's claims and rules alone, which CP-SAT loads in a fraction of the time
        (a subset's feasibility does not depend on the claims and rules left out)."""
        feasible, core = self.oracle.check(
            [*self._background(), forced(self.oracle.compiled), *(lit for _, lit in candidates)]
        )
        if feasible:
            return None
        keys = [k for k, lit in candidates if lit.index in core]
        names = {k for k in keys if isinstance(k, str)}
        rule_ids = {k[1] for k in keys if isinstance(k, tuple)}
        claims = [
            c
            for c in self.claims
            if c.name in names or c.name == forcing or isinstance(c, SetupClaim)
        ]
        small = Oracle(
            CompiledModel(
                claims,
                [r for r in self.rules if r.id in rule_ids],
                self.facts,
                self.defaults,
                objective=False,
                cache=False,
                frozen=self.problem.frozen,
            )
        )
        self.small_calls += 1
        cm = small.compiled
        lits = dict(self._held(cm))
        sub = [(k, lits[k] if isinstance(k, str) else cm.rule_lit[k[1]]) for k in keys]
        background = [
            lit for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], SetupClaim)
        ]
        found = small.mus([*background, forced(cm)], sub)
        self.small_checks += small.calls
        self.oracle.calls += small.calls  # budgets count every feasibility check
        if found is None:  # the core did not verify: search the whole model
            return self.oracle.mus([*self._background(), forced(self.oracle.compiled)], candidates)
        return found

    @cached_property
    def _rules_known(self) -> RuleReads:
        return rule_reads(self.rules, self.facts)

    @cached_property
    def _reads(self) -> dict[Any, frozenset[str]]:
        """The options (not facts) each item of `_exprs` reads."""
        facts = self.facts
        out: dict[Any, frozenset[str]] = {
            key: frozenset(p for p in expr.paths() if p not in facts)
            for key, expr in self._claim_exprs.items()
        }
        out.update(self._rules_known.reads)
        return out

    @cached_property
    def _rule_reads(self) -> list[tuple[str, frozenset[str]]]:
        return self._rules_known.pairs

    @cached_property
    def _claim_reads(self) -> list[tuple[str, frozenset[str]]]:
        return [(k, paths) for k, paths in self._reads.items() if isinstance(k, str)]

    def _local_mus(self, claim: PerfClaim, steps: int = LOCAL_STEPS) -> list[Any] | None:
        """The drop reason's search on small models around the dropped claim first.

        The neighbourhood grows from the options the claim reads, a step at a time: the
        rules that read one of them, then the held claims that read one of those rules'
        options or the claim's; setup claims whenever they read an option inside. Rules
        that read many options (the memory budget: hundreds of constraints) join only
        after `NARROW_STEPS` steps without them. A model
        of the neighbourhood is a few dozen constraints, so its checks cost a fraction
        of the whole problem's. Exact: the neighbourhood's items (with the setups that
        read its options) share no variable with the items outside it, and those are
        satisfiable together (the solution satisfies every held item), so a subset of
        the neighbourhood is infeasible with the claim exactly when it is inside the
        whole problem; the deletion pass then gives a minimal one, as on the whole.
        Each neighbourhood is first decided by trying values (`_holds`): a feasible one
        needs no model; an infeasible one with a single minimal reason gives it directly
        (`_unique_mus`); otherwise it gets its model, whose cores choose the reason as
        before while trying values answers the feasible deletion steps (and confirms the
        first core); the witness below serves neighbourhoods whose options are too many
        or too wide to try.
        None when no neighbourhood up to `steps` is infeasible (the caller then searches
        the whole problem)."""
        primary = claim.options()[0][0]
        witness: Witness | None = None  # shared by the neighbourhoods: it learns from each
        made = False
        inside = {p for p in primary.paths() if p not in self.facts}
        rules: set[str] = set()
        names: set[str] = set()
        for step in range(steps):
            joining = [
                (rid, paths)
                for rid, paths in self._rule_reads
                if rid not in rules
                and not paths.isdisjoint(inside)
                and (step >= NARROW_STEPS or len(paths) <= NARROW_RULE)
            ]
            grown = bool(joining)
            for rid, paths in joining:
                rules.add(rid)
                inside |= paths
            changed = True
            while changed:  # held claims and setups reading an option inside
                changed = False
                for name, paths in self._claim_reads:
                    if name not in names and not paths.isdisjoint(inside):
                        names.add(name)
                        inside |= paths
                        changed = grown = True
            if not grown:
                return None
            if len(rules) == len(self.rules):
                return None  # the whole problem: searched there
            setups = [n for n in names if isinstance(self.by_name[n], SetupClaim)]
            held = [n for n in names if n not in setups]
            every = self._holds(claim, setups, [*held, *(("rule", rid) for rid in rules)])
            if every:
                continue  # a configuration holds the claim and all of them: no reason here
            if every is False:
                found = self._unique_mus(claim, setups, held, rules)
                if found is None:  # the model's cores choose among several, as before;
                    # trying values answers the feasible deletion steps and the core's check
                    found = self._mus_on(claim, names, rules, tried=True)
                if found is not None:
                    return found
                continue
            if not made:
                witness, made = self._witness(claim), True
            if witness is not None and witness([*names, *(("rule", rid) for rid in rules)]):
                continue  # a configuration holds the claim and all of them: no reason here
            found = self._mus_on(claim, names, rules, witness)
            if found is not None:
                return found
        return None

    def _witness(self, claim: PerfClaim) -> Witness | None:
        """A feasibility witness for the deletion pass of `claim`'s reason, starting from
        the solution with the options the claim's requirement sets by equality set so;
        None when the requirement is not a conjunction of equalities."""
        primary = claim.options()[0][0]
        sets = equalities(primary)
        if not sets or not all(p not in self.facts for p in sets):
            return None
        witness = Witness(self, primary)
        witness.add(sets)
        return witness

    @cached_property
    def _claim_exprs(self) -> dict[str, Any]:
        """What each held claim (a kept perf claim: its alternative that holds) and each
        setup claim requires, by name."""
        out: dict[str, Any] = {}
        for c in self.claims:
            if isinstance(c, PerfClaim):
                k = self.kept.get(c.name)
                if k is not None:
                    out[c.name] = c.options()[0 if k.alternative is None else k.alternative + 1][0]
            else:
                out[c.name] = c.expr
        return out

    @cached_property
    def _exprs(self) -> dict[Any, Any]:
        """`_claim_exprs`, and what each hard rule requires, by the keys `_candidates`
        uses."""
        return {**self._claim_exprs, **self._rules_known.exprs}

    def _mus_on(
        self,
        claim: PerfClaim,
        names: set[str],
        rule_ids: set[str],
        witness: Witness | None = None,
        tried: bool = False,
    ) -> list[Any] | None:
        """A minimal subset of the named held claims and rules (in `_candidates` order)
        that the dropped claim cannot join, on a model of them alone; None if they admit
        it."""
        key = (frozenset(names), frozenset(rule_ids))
        small = self._local.get(key)
        if small is None:  # dropped claims with the same neighbourhood share its model
            small = Oracle(
                CompiledModel(
                    [c for c in self.claims if c.name in names],
                    [r for r in self.rules if r.id in rule_ids],
                    self.facts,
                    self.defaults,
                    objective=False,
                    cache=False,
                    frozen=self.problem.frozen,
                )
            )
            self._local[key] = small
            self.small_calls += 1
        cm = small.compiled
        if claim.name not in cm.perf_sel:  # its literal: free unless assumed
            cm.add_claim(claim)
        before = small.calls
        held = self._held(cm)
        held.sort(key=lambda item: (item[0] not in self.kept, -self._priority(item[0]), item[0]))
        candidates = held + [(("rule", rid), lit) for rid, lit in sorted(cm.rule_lit.items())]
        background = [
            lit for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], SetupClaim)
        ]
        setups = [n for n in cm.claim_lit if isinstance(self.by_name[n], SetupClaim)]
        found = small.mus(
            [*background, cm.perf_sel[claim.name][0]],
            candidates,
            partial(self._proves, claim, setups) if tried else witness,
            None if witness is None or tried else witness.learn,
            partial(self._refutes, claim, setups),
        )
        self.small_checks += small.calls - before
        self.oracle.calls += small.calls - before  # budgets count every feasibility check
        return found

    def _unique_mus(
        self, claim: PerfClaim, setups: list[str], held: list[str], rule_ids: set[str]
    ) -> list[Any] | None:
        """The neighbourhood's one minimal reason, when trying values shows it has only
        one: the items without which the rest is feasible belong to every infeasible
        subset, so when they alone are infeasible they are the only minimal one, which
        any deletion pass returns (the model's included). None when that is not shown
        (several minimal reasons, or options too many to try)."""
        order = sorted(held, key=lambda n: (n not in self.kept, -self._priority(n), n))
        keys: list[Any] = [*order, *(("rule", rid) for rid in sorted(rule_ids))]
        necessary = []
        for i, key in enumerate(keys):
            answer = self._holds(claim, setups, keys[:i] + keys[i + 1 :])
            if answer is None:
                return None
            if answer:
                necessary.append(key)
        return necessary if self._holds(claim, setups, necessary) is False else None

    def _holds(self, claim: PerfClaim, setups: list[str], keys: list[Any]) -> bool | None:
        """Whether `claim`'s requirement, the `setups` and the items `keys` name can hold
        together, decided by trying values (`refute`); None when it cannot tell."""
        items = [self._primary_item(claim), *(self._item(k) for k in (*setups, *keys))]
        if self._scratch is None:  # one copy of the values to try values in
            self._scratch = dict(self.values)
        return satisfiable(items, self.values, self._scratch)

    def _proves(self, claim: PerfClaim, setups: list[str], keys: list[Any]) -> bool:
        """A deletion step's feasibility witness: True only when trying values finds a
        configuration holding them all."""
        return self._holds(claim, setups, keys) is True

    def _refutes(self, claim: PerfClaim, setups: list[str], keys: list[Any]) -> bool:
        """True when `claim`'s requirement, the `setups` and the items `keys` name are
        proven infeasible by trying every value of the options they read (`refute`)."""
        return self._holds(claim, setups, keys) is False

    def _item(self, key: Any) -> Item:
        """The `refute.Item` of a held claim, setup or rule (by `_candidates` keys); a
        rule's is kept with the rule set's reads."""
        found = self._items.get(key)
        if found is None:
            if isinstance(key, tuple):
                found = self._rules_known.item(key)
            else:
                found = Item(self._exprs[key], self._reads[key])
            self._items[key] = found
        return found

    def _primary_item(self, claim: PerfClaim) -> Item:
        key = ("drop", claim.name)
        found = self._items.get(key)
        if found is None:
            primary = claim.options()[0][0]
            found = Item(primary, frozenset(p for p in primary.paths() if p not in self.facts))
            self._items[key] = found
        return found

    def drop_reason(self, claim: PerfClaim, optimal: bool) -> DropReason:
        """One minimal set of held claims and rules that the dropped claim cannot join."""
        found = self._local_mus(claim)
        if found is None:
            found = self._mus(lambda cm: cm.perf_sel[claim.name][0], self._candidates(), claim.name)
        if found is None:
            # cannot happen at a proven optimum; after a time-limited search it can
            return DropReason("unproven", claim.name)
        names = tuple(sorted(k for k in found if isinstance(k, str)))
        rules = tuple(sorted(k[1] for k in found if isinstance(k, tuple)))
        winners = tuple(n for n in names if n in self.kept)
        if not winners:
            kind = "conflict"
        elif any(self.kept[n].priority > claim.priority for n in winners):
            kind = "outranked"
        else:
            kind = "outweighed"
        return DropReason(kind, claim.name, names, rules, winners)

    def _setups(self) -> list[str]:
        return [c.name for c in self.claims if isinstance(c, SetupClaim)]

    def _priority(self, name: str) -> int:
        claim = self.by_name[name]
        return claim.priority if isinstance(claim, PerfClaim) else 1 << 30

    def provenance(self, path: str) -> Provenance:
        value = self.values[path]
        if path in self.facts:
            if path in self.fact_source:
                return Provenance(path, value, "setup", (self.fact_source[path],))
            return Provenance(path, value, "fact")
        setters = tuple(
            sorted(
                c.name
                for c in self.claims
                if path in c.expr.paths()
                and (isinstance(c, (FuncClaim, SetupClaim)) or c.name in self.kept)
            )
        )
        setups = tuple(n for n in setters if isinstance(self.by_name[n], SetupClaim))
        if setups:
            return Provenance(path, value, "setup", setups)
        if setters:
            return Provenance(path, value, "claim", setters)
        default = self.defaults[path]
        if value == default:
            return Provenance(path, value, "default")
        cm = self.oracle.compiled
        candidates = self._held() + [
            (("rule", rid), lit) for rid, lit in sorted(cm.rule_lit.items())
        ]
        found = self._mus(lambda model: model.lit_for(Eq(path, default)), candidates)
        if found is None:
            return Provenance(path, value, "tradeoff")
        claims = tuple(sorted(k for k in found if isinstance(k, str)))
        rules = tuple(sorted(k[1] for k in found if isinstance(k, tuple)))
        return Provenance(path, value, "rule", claims, rules)


def resolve(
    problem: ArbitrationProblem, solved: Solved, started: float | None = None
) -> Resolution:
    """The resolution of a solved problem; the fallbacks of dropped claims run once, after
    solving, in (priority desc, name) order, each with its reason."""
    values = solved.values
    verify(problem.claims, problem.rules, values)
    perf = problem.perf_claims
    kept, dropped_claims = split_perf(perf, values)
    explainer = ResolutionExplainer(problem, kept, values)
    optimal = solved.status is SolveStatus.OPTIMAL
    dropped = tuple(
        DroppedClaim(c.name, c.weight, c.priority, partial(explainer.drop_reason, c, optimal))
        for c in sorted(dropped_claims, key=lambda c: (-c.priority, c.name))
    )
    defaults = problem.defaults
    changes = tuple(
        Change(path, defaults[path], values[path])
        for path in defaults
        if values[path] != defaults[path]
    )
    model = solved.compiled.model.proto
    stats = {
        "variables": len(model.variables),
        "constraints": len(model.constraints),
        "build_ms": round(solved.build_ms, 3),
        "solve_ms": round(solved.solve_ms, 3),
        "solves": solved.solves,
        "total_ms": round((time.perf_counter() - (started or time.perf_counter())) * 1000, 3),
        "profile": problem.profile.name,
        "mode": problem.mode_name,
        "memory_terms": problem.profile.memory_terms,
        "engine": problem.profile.engine,
    }
    resolution = Resolution(
        status=solved.status,
        kept=tuple(kept),
        dropped=dropped,
        changes=changes,
        stats=stats,
        values=values,
        _provenance=explainer.provenance,
        _context=explainer,
        overridden_defaults=tuple(r.id for r in problem.soft_rules if not r.expr.evaluate(values)),
    )
    by_name = {c.name: c for c in perf}
    for d in dropped:
        fallback = by_name[d.name].fallback
        if fallback is not None:
            fallback(d.reason)
    return resolution


def split_perf(
    perf_claims: Sequence[PerfClaim], values: Mapping[str, Any]
) -> tuple[list[KeptClaim], list[PerfClaim]]:
    """Kept claims (with the alternative that holds) and dropped claims."""
    kept: list[KeptClaim] = []
    dropped: list[PerfClaim] = []
    for c in perf_claims:
        for i, (expr, w) in enumerate(c.options()):
            if expr.evaluate(values):
                kept.append(KeptClaim(c.name, w, c.priority, None if i == 0 else i - 1))
                break
        else:
            dropped.append(c)
    return kept, dropped


def verify(claims: Sequence[AnyClaim], rules: Sequence[Rule], values: Mapping[str, Any]) -> None:
    """Re-check the solution in Python: every hard claim and rule must hold."""
    for c in claims:
        if isinstance(c, (FuncClaim, SetupClaim)) and not c.expr.evaluate(values):
            raise InternalError(f"internal error: solved config violates claim {c.name!r}")
    for r in rules:
        if not r.expr.evaluate(values):
            raise InternalError(f"internal error: solved config violates rule {r.id!r}")


class Witness:
    """Configurations that prove a set of items feasible with a dropped claim, without a
    solver call (`Oracle.mus`'s `witness`): the resolution's values with some options
    changed. Every held item, hard rule and setup holds in the resolution's values, so a
    configuration satisfies a set of items when the ones reading a changed option hold in
    it. It starts with the claim's own equalities set, and learns every solution the
    neighbourhood checks find (a configuration that holds the claim and the items it was
    checked with), which later deletion steps of the same reason can reuse."""

    def __init__(self, explainer: ResolutionExplainer, primary: Any):
        self.explainer = explainer
        self.primary = primary  # the claim's requirement: every configuration holds it
        self.configs: list[tuple[dict[str, Any], frozenset[str]]] = []

    def add(self, changes: Mapping[str, Any]) -> None:
        """Add the resolution's values with `changes`, when the claim and the setups
        reading a changed option hold there."""
        ex = self.explainer
        values = {**ex.values, **changes}
        touched = frozenset(p for p, v in changes.items() if ex.values[p] != v)
        if not self.primary.evaluate(values):
            return
        reads, exprs = ex._reads, ex._exprs
        if all(exprs[n].evaluate(values) for n in ex._setups() if reads[n] & touched):
            self.configs.append((values, touched))

    def learn(self, oracle: Oracle) -> None:
        """Add the solution `oracle`'s last check found (the options its model declares)."""
        self.add(oracle.compiled.declared_values(oracle.solver.response_proto.solution))

    def __call__(self, keys: list[Any]) -> bool:
        ex = self.explainer
        reads, exprs = ex._reads, ex._exprs
        if any(
            all(exprs[k].evaluate(values) for k in keys if reads[k] & touched)
            for values, touched in self.configs
        ):
            return True
        return bool(self.configs) and self._repair(keys)

    def _repair(self, keys: list[Any]) -> bool:
        """Repair the first configuration (`arbiter.explain.repair`) for `keys`, a few
        rounds of the items it breaks; True, and the result kept, when every item, setup
        and the claim then hold in it (evaluated again, so a repair proves nothing wrong)."""
        ex = self.explainer
        reads, exprs = ex._reads, ex._exprs
        items = [*keys, *ex._setups()]
        keep = self.primary.paths()
        values = dict(self.configs[0][0])
        changed = set(self.configs[0][1])  # the options where `values` differs from ex.values
        for _ in range(REPAIR_ROUNDS):
            touched = frozenset(changed)
            broken = [k for k in items if reads[k] & touched and not exprs[k].evaluate(values)]
            if not broken:
                if not self.primary.evaluate(values):
                    return False
                self.configs.append((values, touched))
                return True
            changes: dict[str, Any] = {}
            for k in broken:
                found = suggest(exprs[k], {**values, **changes}, keep)
                if found is None:
                    return False
                changes.update(found)
            values.update(changes)
            for p, v in changes.items():
                if ex.values[p] != v:
                    changed.add(p)
                else:
                    changed.discard(p)
        return False
