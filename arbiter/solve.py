"""`arbitrate()`: feasibility, tiered optimisation, extraction, drop reasons, fallbacks.

Semantics (DESIGN.md section 5):
1. setup + func claims + rules are hard; infeasible -> ConflictError with a minimal
   conflict (claims, then the rules linking them, both minimised).
2. perf claims: lexicographic over priority (higher tiers strictly dominate), weighted sum
   inside a tier; a claim with alternatives earns the weight of the one that holds.
3. then fewest options changed from their defaults, then (a tie-break) numeric options as
   close to their defaults as possible.
4. claims are compiled in name order, with one worker and a fixed seed: the same claims in
   any order give the same resolution.
5. a dropped perf claim's requirement is not enforced at all, so nothing of it remains;
   its fallback runs once, after solving, in (priority desc, name) order, with its reason.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ortools.sat.python import cp_model

from constraints.errors import SchemaError, UnknownPath
from constraints.expr import Eq
from constraints.profiles import get_mode, get_profile
from constraints.rules import Rule, bind_rule, get_rule, rules_for
from constraints.schema import EngineConfig, lookup, options

from .capacity import memory_numbers, mode_stages, mode_targets
from .claims import AnyClaim, FuncClaim, PerfClaim, SetupClaim, claim_from_dict
from .compile import CompiledModel
from .errors import (
    Conflict,
    ConflictError,
    InternalError,
    InvalidClaim,
    SolverModelInvalid,
    SolveTimeout,
)
from .oracle import Oracle
from .resolution import Change, DroppedClaim, DropReason, KeptClaim, Provenance, Resolution

SEED = 0
_SAFE_OBJECTIVE = 1 << 50  # keep big-M objectives far from int64 overflow
TIE_BREAK_BUDGET = 0.25  # deterministic seconds for the numeric tie-break stage


# ---------------------------------------------------------------------------- preparation
def prepare_claims(claims: Iterable[Any]) -> list[AnyClaim]:
    """Validate claims (dicts are read as JSON claims) and check names are unique."""
    out: list[AnyClaim] = []
    for i, claim in enumerate(claims):
        if isinstance(claim, Mapping):
            claim = claim_from_dict(claim, i)
        if not isinstance(claim, (FuncClaim, PerfClaim, SetupClaim)):
            raise InvalidClaim(f"claim {i} is a {type(claim).__name__}, not a claim", value=claim)
        out.append(claim)
    seen: dict[str, int] = {}
    for claim in out:
        if claim.name in seen:
            raise InvalidClaim("duplicate claim name", claim=claim.name)
        seen[claim.name] = 1
    return sorted(out, key=lambda c: c.name)


def prepare_rules(rules: Iterable[Rule | str] | None, profile: str | None = None) -> list[Rule]:
    """`rules` as Rule objects (ids looked up), or for None the shipped hard rules in
    scope of `profile` (default trtllm-1.2)."""
    if rules is None:
        return list(rules_for(get_profile(profile), kind="hard"))
    out = []
    for rule in rules:
        if isinstance(rule, str):
            try:
                rule = get_rule(rule)
            except SchemaError as exc:
                raise InvalidClaim(str(exc), value=rule) from None
        if not isinstance(rule, Rule):
            raise InvalidClaim(f"rules must be Rule objects or rule ids, got {type(rule).__name__}")
        out.append(rule)
    return sorted({r.id: r for r in out}.values(), key=lambda r: r.id)


def resolve_facts(claims: Sequence[AnyClaim]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fact values (defaults overridden by setup claims) and which setup fixed each."""
    facts = {s.path: s.default for s in options() if s.fact}
    source: dict[str, str] = {}
    for claim in claims:
        if not isinstance(claim, SetupClaim):
            continue
        for path, value in claim.fixes.items():
            if path not in facts:
                continue
            if path in source and facts[path] != value:
                raise InvalidClaim(
                    f"setup claims disagree on a fact: {source[path]!r} says {facts[path]!r}",
                    claim=claim.name,
                    path=path,
                    value=value,
                )
            facts[path] = value
            source[path] = claim.name
    return facts, source


def resolve_defaults(
    facts: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    defaults = {s.path: s.default_for(facts) for s in options() if not s.fact}
    for path, value in (overrides or {}).items():
        try:
            spec = lookup(path)
            if spec.fact:
                raise InvalidClaim(
                    "facts take their values from setup claims, not defaults", path=path
                )
            defaults[path] = spec.check(value)
        except UnknownPath as exc:
            raise InvalidClaim(
                "unknown option path in defaults", path=path, suggestions=exc.suggestions
            ) from None
        except SchemaError as exc:
            raise InvalidClaim(str(exc), path=path, value=value) from None
    return defaults


# ---------------------------------------------------------------------------- solving
class _Stages:
    """Runs the lexicographic objective as few CP-SAT solves as overflow allows."""

    def __init__(self, compiled: CompiledModel, time_limit_s: float | None):
        self.cm = compiled
        self.model = compiled.model
        self.solver = cp_model.CpSolver()
        self.solver.parameters.num_workers = 1
        self.solver.parameters.random_seed = SEED
        # the full LP relaxation makes weighted claim sets (a MaxSAT) tractable: 200
        # generated perf claims solved in 67 ms with it against 29 s without
        self.solver.parameters.linearization_level = 2
        # small arbitration models gain nothing from probing or symmetry detection, which
        # cost a few ms per solve (realistic scenario p50 24 -> 20 ms)
        self.solver.parameters.cp_model_probing_level = 0
        self.solver.parameters.symmetry_level = 0
        # CP-SAT 9.15's presolve mis-solves the memory model (TP x budget products with
        # enforced linear checks): it called a feasible model infeasible and reported
        # configurations with needless changes as optimal (or-tools#5274 is the same kind).
        # Without presolve the answers are exact; the realistic scenario costs ~25 ms
        # instead of ~19 (tests/arbiter/test_solver_regressions.py).
        self.solver.parameters.cp_model_presolve = False
        self.deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
        self.time_limit_s = time_limit_s
        self.optimal = True
        self.values: dict[str, Any] = {}
        self.solves = 0
        self.solve_ms = 0.0

    def run(self, expr: Any, sense: int, *, tie_break: bool = False) -> int | None:
        """Optimise `sense * expr` (1 maximise, -1 minimise), then pin it; None if infeasible.

        A `tie_break` stage only chooses among configurations that are already optimal for
        the contract (tiers, then changes); it runs under a fixed deterministic-time budget,
        so its answer is reproducible, and an unproven tie-break does not make the
        resolution "feasible"."""
        self.model.clear_objective()
        self.solver.parameters.max_deterministic_time = (
            TIE_BREAK_BUDGET if tie_break else float("inf")
        )
        if sense > 0:
            self.model.maximize(expr)
        else:
            self.model.minimize(expr)
        if self.deadline is not None:
            self.solver.parameters.max_time_in_seconds = max(
                0.001, self.deadline - time.perf_counter()
            )
        status = self.solver.solve(self.model)
        self.solves += 1
        self.solve_ms += self.solver.wall_time * 1000
        if status == cp_model.INFEASIBLE and self.solver.parameters.linearization_level == 2:
            # the full-LP search once reported a feasible memory-model instance infeasible
            # (with presolve on, which is now off; the regression tests pass without this
            # guard too): confirm with the default relaxation before believing it, and
            # keep that relaxation for the later stages
            self.solver.parameters.linearization_level = 1
            status = self.solver.solve(self.model)
            self.solves += 1
            self.solve_ms += self.solver.wall_time * 1000
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
        self.model.add(expr == best)
        self.values = self.cm.values(self.solver)
        self._hint()
        return best

    def _hint(self) -> None:
        self.model.clear_hints()
        for ov in self.cm.vars.values():
            self.model.add_hint(ov.var, self.solver.value(ov.var))
            if ov.present is not None:
                self.model.add_hint(ov.present, self.solver.boolean_value(ov.present))


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
    t0 = time.perf_counter()
    ordered = prepare_claims(claims)
    rule_list = prepare_rules(rules)
    try:
        prof, mode_spec = get_profile(profile), get_mode(mode)
    except SchemaError as exc:
        raise InvalidClaim(str(exc), value=profile if mode is None else mode) from None
    if time_limit_s is not None and not (
        isinstance(time_limit_s, (int, float))
        and not isinstance(time_limit_s, bool)
        and 0 < time_limit_s < math.inf
    ):
        raise InvalidClaim("time_limit_s must be a positive, finite number", value=time_limit_s)
    facts, fact_source = resolve_facts(ordered)
    base_defaults = resolve_defaults(facts, {**prof.defaults, **(defaults or {})})
    bind_facts = {**facts, "memory.terms": prof.memory_terms}
    if rules is None:  # the shipped knowledge in the profile's scope, hard and default
        rule_list = list(rules_for(prof))
    rule_list = [bind_rule(r, bind_facts) for r in rule_list]
    soft_rules = [r for r in rule_list if r.kind == "default"]
    rule_list = [r for r in rule_list if r.kind != "default"]

    cm = CompiledModel(ordered, [*rule_list, *soft_rules], facts, base_defaults)
    soft_lits = [cm.rule_lit.pop(r.id) for r in soft_rules]
    hard = [*cm.claim_lit.values(), *cm.rule_lit.values()]
    if hard:
        cm.model.add_bool_and(hard)
    build_ms = (time.perf_counter() - t0) * 1000

    perf_claims = [c for c in ordered if isinstance(c, PerfClaim)]
    stages = _Stages(cm, time_limit_s)
    tiers = sorted({c.priority for c in perf_claims}, reverse=True)
    tier_exprs = []
    for tier in tiers:
        terms = []
        ranges = 0
        for c in perf_claims:
            if c.priority != tier:
                continue
            for sel, (_, w) in zip(cm.perf_sel[c.name], c.options(), strict=True):
                terms.append(w * sel)
            ranges += c.weight
        tier_exprs.append((sum(terms), ranges))
    # maximise tiers in order, then the default rules kept, then (modes) capacity stages,
    # then minimise changes; fold into one big-M solve when safe
    objective_parts = [(e, r, 1) for e, r in tier_exprs]
    if soft_lits:
        objective_parts.append((sum(soft_lits), len(soft_lits), 1))
    targets = mode_targets(ordered) if mode_spec is not None else ()
    # with a mode, the options it infers are left out of "fewest changes", which runs
    # first, so the capacity stages move only them
    change_lits = cm.change_literals()
    kept_lits = [lit for path, lit in change_lits.items() if path not in targets]
    objective_parts.append((sum(kept_lits), len(kept_lits), -1))
    scale, combined, fits = 1, 0, True
    for expr, rng, sense in reversed(objective_parts):
        combined += sense * scale * expr
        scale *= rng + 1
        if scale > _SAFE_OBJECTIVE:
            fits = False
            break
    if not objective_parts:  # a mode with nothing to rank before it: feasibility only
        feasible = stages.run(cm.model.new_int_var(0, 0, "nothing"), 1) is not None
    elif fits:
        result = stages.run(combined, 1)
        feasible = result is not None
    else:
        feasible = True
        for expr, _, sense in objective_parts:
            if stages.run(expr, sense) is None:
                feasible = False
                break
    if not feasible:
        raise memory_numbers(
            _conflict_error(ordered, rule_list, facts, base_defaults, fact_source, prof),
            ordered,
            base_defaults,
            facts,
            prof.memory_terms,
        )
    if mode_spec is not None:
        mode_stages(stages, cm, mode_spec, targets, base_defaults, bind_facts)
    stages.run(sum(cm.distance_terms()), -1, tie_break=True)

    values = stages.values
    _verify(ordered, rule_list, values)
    config = EngineConfig.from_flat(values)
    kept, dropped_specs = _split_perf(perf_claims, values)
    context = _Context(ordered, rule_list, facts, base_defaults, fact_source, kept, values)
    dropped = tuple(
        DroppedClaim(c.name, c.weight, c.priority, partial(context.drop_reason, c, stages.optimal))
        for c in sorted(dropped_specs, key=lambda c: (-c.priority, c.name))
    )
    changes = tuple(
        Change(path, base_defaults[path], values[path])
        for path in base_defaults
        if values[path] != base_defaults[path]
    )
    stats = {
        "variables": len(cm.model.proto.variables),
        "constraints": len(cm.model.proto.constraints),
        "build_ms": round(build_ms, 3),
        "solve_ms": round(stages.solve_ms, 3),
        "solves": stages.solves,
        "total_ms": round((time.perf_counter() - t0) * 1000, 3),
        "profile": prof.name,
        "mode": mode,
        "memory_terms": prof.memory_terms,
    }
    resolution = Resolution(
        config=config,
        status="optimal" if stages.optimal else "feasible",
        kept=tuple(kept),
        dropped=dropped,
        changes=changes,
        stats=stats,
        values=values,
        _provenance=context.provenance,
        _context=context,
        overridden_defaults=tuple(r.id for r in soft_rules if not r.expr.evaluate(values)),
    )
    by_name = {c.name: c for c in perf_claims}
    for d in dropped:  # fallbacks run once, after solving, in a stable order
        fallback = by_name[d.name].fallback
        if fallback is not None:
            fallback(d.reason)
    return resolution


def _split_perf(perf_claims: Sequence[PerfClaim], values: Mapping[str, Any]):
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


def _verify(claims: Sequence[AnyClaim], rules: Sequence[Rule], values: Mapping[str, Any]) -> None:
    """Re-check the solution in Python: every hard claim and rule must hold."""
    for c in claims:
        if isinstance(c, (FuncClaim, SetupClaim)) and not c.expr.evaluate(values):
            raise InternalError(f"internal error: solved config violates claim {c.name!r}")
    for r in rules:
        if not r.expr.evaluate(values):
            raise InternalError(f"internal error: solved config violates rule {r.id!r}")


# ---------------------------------------------------------------------------- explanations
class _Context:
    """Lazily built explanation model for drop reasons and provenance."""

    def __init__(self, claims, rules, facts, defaults, fact_source, kept, values):
        self.claims = claims
        self.rules = rules
        self.facts = facts
        self.defaults = defaults
        self.fact_source = fact_source
        self.kept = {k.name: k for k in kept}
        self.values = values
        self.by_name = {c.name: c for c in claims}
        self._oracle: Oracle | None = None

    @property
    def oracle(self) -> Oracle:
        if self._oracle is None:
            self._oracle = Oracle(CompiledModel(self.claims, self.rules, self.facts, self.defaults))
        return self._oracle

    def _held(self) -> list[tuple[str, Any]]:
        """(name, literal) of every hard claim and kept perf claim (its chosen alternative)."""
        cm = self.oracle.compiled
        out = [
            (n, lit) for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], FuncClaim)
        ]
        for name, k in self.kept.items():
            out.append((name, cm.perf_sel[name][0 if k.alternative is None else k.alternative + 1]))
        return out

    def _background(self) -> list[Any]:
        cm = self.oracle.compiled
        return [lit for n, lit in cm.claim_lit.items() if isinstance(self.by_name[n], SetupClaim)]

    def drop_reason(self, claim: PerfClaim, optimal: bool) -> DropReason:
        """One minimal set of held claims and rules that the dropped claim cannot join.

        Claims and rules are minimised together in one deletion pass (kept perf claims
        are tested for removal first, so functional claims are blamed last, and rules
        last of all)."""
        cm = self.oracle.compiled
        forced = cm.perf_sel[claim.name][0]
        held = self._held()
        held.sort(key=lambda item: (item[0] not in self.kept, -self._priority(item[0]), item[0]))
        candidates = held + [(("rule", rid), lit) for rid, lit in sorted(cm.rule_lit.items())]
        found = self.oracle.mus([*self._background(), forced], candidates)
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
        at_default = cm.lit_for(Eq(path, default))
        held = self._held()
        candidates = held + [(("rule", rid), lit) for rid, lit in sorted(cm.rule_lit.items())]
        found = self.oracle.mus([*self._background(), at_default], candidates)
        if found is None:
            return Provenance(path, value, "tradeoff")
        claims = tuple(sorted(k for k in found if isinstance(k, str)))
        rules = tuple(sorted(k[1] for k in found if isinstance(k, tuple)))
        return Provenance(path, value, "rule", claims, rules)


def _conflict_error(claims, rules, facts, defaults, fact_source, profile) -> ConflictError:
    # import cycle: the explainer solves (issue 13 move 2 unties it)
    from .explain import explain_infeasible

    explanation = explain_infeasible(claims, rules, facts, defaults, fact_source)
    explanation = explanation.for_profile(profile)
    return ConflictError(
        [c.conflict for c in explanation.conflicts],
        corrections=[fix.drop for fix in explanation.corrections],
        explanation=explanation,
    )


def find_conflict(claims, rules, facts, defaults, fact_source) -> Conflict:
    """One minimal conflict among the functional claims (setup claims in the background)."""
    oracle = Oracle(CompiledModel(claims, rules, facts, defaults))
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
