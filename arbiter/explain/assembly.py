"""Assembling explanations: infeasible claims, dropped perf claims, whole resolutions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from constraints.expr import Expr
from constraints.profiles import get_profile
from constraints.rules import Rule

from ..claims import AnyClaim, PerfClaim, SetupClaim
from ..core import SolveTimeout, solve
from ..errors import Conflict
from ..oracle import Oracle
from ..problem import ArbitrationProblem
from .chains import ChainBuilder, _assignments
from .data import (
    DEFAULT_LIMITS,
    DISAGREEMENT,
    DROP_CODES,
    ConflictReport,
    Correction,
    DroppedReport,
    Explanation,
    Limits,
    Member,
    NumericNote,
    Search,
    claim_member,
    rule_ref,
    show_value,
)
from .numbers import numeric_notes
from .search import Explainer


# ---------------------------------------------------------------------------- assembly
def _fixed_values(members: Sequence[Expr], setups: Sequence[SetupClaim], facts: Mapping[str, Any]):
    fixed = dict(facts)
    for s in setups:
        fixed.update(s.fixes)
    for expr in members:
        for p, v in _assignments(expr):
            fixed.setdefault(p, v)
    return fixed


def _describe(
    oracle: Oracle,
    members: Sequence[tuple[str, str, Expr, Any]],  # name, kind, expr, literal
    rules: Sequence[Rule],
    setups: Sequence[SetupClaim],
    facts: Mapping[str, Any],
) -> tuple[str, tuple[NumericNote, ...], tuple[tuple[str, str, str], ...]]:
    builder = ChainBuilder([(n, k, e) for n, k, e, _ in members], rules, setups, facts)
    chain = builder.sentence()
    cm = oracle.compiled
    assumptions: dict[str, Any] = {n: lit for n, _, _, lit in members}
    for r in rules:
        assumptions[r.id] = cm.rule_lit[r.id]
    setup_lits = [cm.claim_lit[s.name] for s in setups if s.name in cm.claim_lit]
    for i, lit in enumerate(setup_lits):
        assumptions[f"\0setup{i}"] = lit
    used_facts = {p: v for p, v in facts.items() if p in builder.graph}
    fixed = _fixed_values([e for _, _, e, _ in members], setups, used_facts)
    items = [(r.id, r.expr) for r in rules] + [(n, e) for n, _, e, _ in members]
    inside = {r.id for r in rules}
    others = [lit for rid, lit in sorted(cm.rule_lit.items()) if rid not in inside]
    numbers = numeric_notes(oracle, items, assumptions, fixed, others)
    return chain, numbers, builder.edges()


def _setups_for(paths: set[str], claims: Sequence[AnyClaim], fact_source: Mapping[str, str]):
    names = {fact_source[p] for p in paths if p in fact_source}
    names |= {c.name for c in claims if isinstance(c, SetupClaim) and set(c.fixes) & paths}
    return sorted((c for c in claims if c.name in names), key=lambda c: c.name)


def explain_infeasible(
    claims: Sequence[AnyClaim],
    rules: Sequence[Rule],
    facts: Mapping[str, Any],
    defaults: Mapping[str, Any],
    fact_source: Mapping[str, str],
    limits: Limits | None = None,
    *,
    explainer: Explainer | None = None,
    frozen: Mapping[str, Any] | None = None,
) -> Explanation:
    """The full explanation of an infeasible hard part: conflicts (MUS + rules), verified
    corrections (MCS) and setup notes, within `limits` (default `DEFAULT_LIMITS`);
    `frozen`: the options outside the profile's surface, constants at their defaults."""
    limits = limits or DEFAULT_LIMITS
    ex = explainer or Explainer(claims, rules, facts, defaults, fact_source, frozen=frozen)
    muses, mcses, complete, cut_by = ex.enumerate(limits)
    if not muses:  # at least the first conflict, whatever the budget
        first = ex.first_conflict()
        if first is None:  # the feasibility check finds a configuration after all
            notes = (
                DISAGREEMENT,
                *(_setup_note(c) for c in ex.claims if isinstance(c, SetupClaim)),
            )
            return Explanation("conflict", notes=notes, search=Search(True, None, 0, 0, limits))
        muses = [first]
    muses = sorted({tuple(m) for m in muses}, key=lambda m: (len(m), m))
    shown = muses[: limits.max_conflicts]
    if len(muses) > limits.max_conflicts:
        complete, cut_by = False, cut_by or "count"
    lits = dict(ex.items)
    reports = []
    for mus in shown:
        rule_ids = ex.rules_for(list(mus))
        rule_objs = [ex.by_rule[r] for r in rule_ids]
        paths: set[str] = set()
        for n in mus:
            paths |= ex.by_name[n].expr.paths()
        for r in rule_objs:
            paths |= r.expr.paths()
        used_facts = {p: facts[p] for p in sorted(paths) if p in facts}
        setups = _setups_for(paths, ex.claims, fact_source)
        conflict = Conflict(tuple(mus), tuple(rule_ids), tuple(s.name for s in setups), used_facts)
        members = [(n, "func", ex.by_name[n].expr, lits[n]) for n in mus]
        chain, numbers, edges = _describe(ex.oracle, members, rule_objs, setups, used_facts)
        reports.append(
            ConflictReport(
                "CFG001" if mus else "CFG002",
                conflict,
                tuple(claim_member(ex.by_name[n]) for n in mus),
                tuple(rule_ref(r) for r in rule_objs),
                tuple(claim_member(s) for s in setups),
                chain,
                numbers,
                edges,
                _parts(ex, list(mus), rule_objs),
            )
        )
    corrections = _corrections(ex, [list(m) for m in shown], mcses, limits)
    if len(mcses) > limits.max_corrections:
        complete, cut_by = False, cut_by or "count"
    notes = tuple(_setup_note(c) for c in ex.claims if isinstance(c, SetupClaim))
    search = Search(complete, cut_by, len(muses), len(mcses), limits)
    menus: tuple[tuple[str, ...], ...] = ()
    members = [set(m) for m in shown]
    if (
        complete
        and len(shown) > 1
        and all(members)
        and sum(map(len, members)) == len(set().union(*members))
    ):
        menus = tuple(tuple(m) for m in shown)
    return Explanation("conflict", tuple(reports), corrections, (), notes, search, menus)


def _parts(
    ex: Explainer, mus: Sequence[str], rules: Sequence[Rule]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For each claim of `mus` that pins several options at once (an engine's defaults of
    the fields left open, one claim), a minimal set of its pins that, with the other
    claims, the setups and `rules`, still cannot hold: the pins that take part. Each pin
    becomes a claim of its own in a model of this conflict alone, shrunk by deletion."""
    from constraints.expr import And, Eq  # the pins of a conjunction

    from ..claims import func  # one claim a pin
    from ..compile import CompiledModel  # the model of this conflict alone

    out = []
    for name in mus:
        expr = ex.by_name[name].expr
        items = list(expr.items) if isinstance(expr, And) else []
        pins = [(e.path, e.value) for e in items if isinstance(e, Eq)]
        if len(pins) < 2 or len(pins) != len(items):
            continue
        pinned = [func(f"\0pin {path}", {path: value}) for path, value in pins]
        others = [ex.by_name[n] for n in mus if n != name]
        setups = [c for c in ex.claims if isinstance(c, SetupClaim)]
        oracle = Oracle(
            CompiledModel(
                [*setups, *others, *pinned],
                list(rules),
                ex.facts,
                ex.defaults,
                objective=False,
                frozen=ex.frozen or None,
            )
        )
        cm = oracle.compiled
        background = [cm.claim_lit[c.name] for c in (*setups, *others) if c.name in cm.claim_lit]
        background += [cm.rule_lit[r.id] for r in rules]
        found = oracle.mus(
            background,
            [(path, cm.claim_lit[c.name]) for (path, _), c in zip(pins, pinned, strict=True)],
        )
        if found is not None:
            out.append((name, tuple(sorted(str(p) for p in found))))
    return tuple(out)


def _setup_note(claim: SetupClaim) -> str:
    fixes = ", ".join(f"{p} = {show_value(v)}" for p, v in sorted(claim.fixes.items()))
    return f"setup `{claim.name}` fixes {fixes} (a fact: never blamed, never dropped)"


def _corrections(
    ex: Explainer, conflicts: list[list[str]], mcses: list[list[str]], limits: Limits
) -> tuple[Correction, ...]:
    if conflicts == [[]]:
        return ()
    found = {tuple(m) for m in mcses}
    hits = {
        fix: tuple(i + 1 for i, c in enumerate(conflicts) if set(c) & set(fix)) for fix in found
    }
    ranked = sorted(found, key=lambda fix: (len(fix), -len(hits[fix]), fix))
    out = []
    for fix in ranked[: limits.max_corrections]:
        verified, allows = _verify(ex, fix, [conflicts[i - 1] for i in hits[fix]])
        out.append(Correction(fix, verified, allows, hits[fix]))
    return tuple(out)


def _verify(ex: Explainer, fix: Sequence[str], hit: list[list[str]]):
    """Re-solve without `fix`: (feasible, option values the new configuration takes near
    the conflicts it breaks, as (path, value) sorted by path)."""
    rest = [n for n in ex.names if n not in fix]
    if not ex.feasible(rest):
        return False, ()
    problem = ArbitrationProblem(
        claims=tuple(c for c in ex.claims if c.name not in fix),
        rules=tuple(ex.rules),
        soft_rules=(),
        facts=ex.facts,
        fact_source=ex.fact_source,
        defaults=ex.defaults,
        profile=get_profile(None),
    )
    try:
        solved = solve(problem)
    except SolveTimeout:  # feasibility is proven, the allowed values are not
        return True, ()
    if solved is None:  # the full solve disagrees with the oracle: not verified
        return False, ()
    values = solved.values
    near: set[str] = set()
    for mus in hit:
        for n in mus:
            near |= ex.by_name[n].expr.paths()
        for rid in ex.rules_for(mus):
            near |= ex.by_rule[rid].expr.paths()
    around = set(near)
    for rule in ex.rules:
        paths = rule.expr.paths()
        if paths & near:
            around |= paths
    # the conflict's options (but those only the dropped claims name), plus every change
    # from the defaults around the conflict
    own: set[str] = set()
    for n in fix:
        own |= ex.by_name[n].expr.paths()
    shown = {p for p in near - own if p not in ex.facts}
    shown |= {p for p in around if p in ex.defaults and values[p] != ex.defaults[p]}
    allows = tuple((p, values[p]) for p in sorted(shown))
    return True, allows


def explain_dropped(context: Any, dropped: Sequence[Any]) -> tuple[DroppedReport, ...]:
    """A report per dropped perf claim, from the solver's explanation context (the one
    `arbitrate()` keeps for drop reasons and provenance)."""
    out = []
    oracle = context.oracle
    cm = oracle.compiled
    by_name = context.by_name
    for d in dropped:
        reason = d.reason
        code = DROP_CODES.get(reason.kind, "PERF013")
        chain, numbers, rules, shown, edges = "", (), (), (), ()
        if reason.claims or reason.rules:
            rule_objs = [r for r in context.rules if r.id in reason.rules]
            members = [(d.name, "perf", by_name[d.name].expr, cm.perf_sel[d.name][0])]
            for n in reason.claims:
                claim = by_name[n]
                if isinstance(claim, PerfClaim):
                    k = context.kept[n]
                    i = 0 if k.alternative is None else k.alternative + 1
                    members.append((n, "perf", claim.options()[i][0], cm.perf_sel[n][i]))
                else:
                    members.append((n, claim.kind, claim.expr, cm.claim_lit[n]))
            paths: set[str] = set()
            for _, _, e, _ in members:
                paths |= e.paths()
            for r in rule_objs:
                paths |= r.expr.paths()
            setups = _setups_for(paths, context.claims, context.fact_source)
            used = {p: context.facts[p] for p in sorted(paths) if p in context.facts}
            chain, numbers, edges = _describe(oracle, members, rule_objs, setups, used)
            rules = tuple(rule_ref(r) for r in rule_objs)
            shown = tuple(Member(n, k, str(e), by_name[n].source) for n, k, e, _ in members)
        out.append(
            DroppedReport(
                code,
                d.name,
                reason.kind,
                d.weight,
                d.priority,
                str(reason),
                reason.claims,
                rules,
                reason.winners,
                chain,
                numbers,
                shown,
                edges,
            )
        )
    return tuple(out)


def _changes(resolution: Any) -> tuple[tuple[str, Any, Any], ...]:
    """The solved configuration as the options it takes off their defaults."""
    return tuple((c.path, c.old, c.new) for c in getattr(resolution, "changes", ()) or ())


def explain_resolution(resolution: Any) -> Explanation:
    """The explanation of a solved configuration: why each dropped perf claim was dropped."""
    context = getattr(resolution, "_context", None)
    if context is None:
        dropped = tuple(
            DroppedReport(
                DROP_CODES.get(d.reason.kind, "PERF013"),
                d.name,
                d.reason.kind,
                d.weight,
                d.priority,
                str(d.reason),
                d.reason.claims,
                (),
                d.reason.winners,
            )
            for d in resolution.dropped
        )
        return Explanation("resolved", dropped=dropped, changes=_changes(resolution))
    notes = tuple(_setup_note(c) for c in context.claims if isinstance(c, SetupClaim))
    explanation = Explanation(
        "resolved",
        dropped=explain_dropped(context, resolution.dropped),
        notes=notes,
        changes=_changes(resolution),
    )
    name = resolution.stats.get("profile") if resolution.stats else None
    return explanation.for_profile(get_profile(name)) if name else explanation
