"""Kconfig-style numbers for comparisons over sums and products in a conflict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from constraints.expr import And, Cmp, Eq, Expr, Implies, Lin, Prod, Term
from constraints.shared.rules.memory import excess, memory_check_terms, shortfall

from ..cpsat import cp_model
from ..oracle import Oracle
from .chains import _partial
from .data import NumericNote, show_value


# ---------------------------------------------------------------------------- numbers
def _cmps(
    expr: Expr,
    out: list[Cmp],
    known: Mapping[str, Any],
    layouts: dict[Cmp, dict[str, int]] | None = None,
    under: Mapping[str, int] | None = None,
) -> list[Cmp]:
    """Comparisons that must hold whenever the expression does (not under or/not), leaving
    out those under an implication whose condition the known values make false. With
    `layouts`, each comparison's layout (`LAYOUT_PATHS`) as the conditions above it fix
    it (the low end of a range) is recorded there."""
    if isinstance(expr, Cmp):
        if expr not in out:
            out.append(expr)
            if layouts is not None and under:
                layouts[expr] = dict(under)
    elif isinstance(expr, And):
        for item in expr.items:
            _cmps(item, out, known, layouts, under)
    elif isinstance(expr, Implies) and _partial(expr.condition, known) is not False:
        below = {**(under or {}), **_layout_of(expr.condition)}
        _cmps(expr.then, out, known, layouts, below)
    return out


def _layout_of(condition: Expr) -> dict[str, int]:
    """The layout sizes a case condition fixes: `path == n`, or the low end of `path >= n`
    (alone or in a range)."""
    if isinstance(condition, Eq) and condition.path in LAYOUT_PATHS:
        return {condition.path: int(condition.value)}
    if isinstance(condition, Cmp) and condition.op == ">=" and isinstance(condition.lhs, Lin):
        terms = condition.lhs.terms
        if len(terms) == 1 and terms[0][1] in LAYOUT_PATHS and isinstance(condition.rhs, Lin):
            if not condition.rhs.terms:
                return {terms[0][1]: int(condition.rhs.const)}
    if isinstance(condition, And):
        out: dict[str, int] = {}
        for item in condition.items:
            for path, n in _layout_of(item).items():
                out.setdefault(path, n)
        return out
    return {}


def _is_sum(cmp: Cmp) -> bool:
    def size(t: Term) -> int:
        return 2 if isinstance(t, Prod) else len(t.terms)  # type: ignore[attr-defined]

    return size(cmp.lhs) + size(cmp.rhs) >= 2


def _annotate(term: Term, values: Mapping[str, Any]) -> str:
    if isinstance(term, Prod):

        def wrap(t: Lin) -> str:
            text = _annotate(t, values)
            return text if len(t.terms) + (1 if t.const else 0) <= 1 else f"({text})"

        return term.decorate(f"{wrap(term.a)} * {wrap(term.b)}")
    assert isinstance(term, Lin)
    parts: list[str] = []
    for coef, path in term.terms:
        sign = "-" if coef < 0 else "+"
        body = f"{path} [={show_value(values.get(path))}]"
        parts.append(f"{sign} {body if abs(coef) == 1 else f'{abs(coef)} * {body}'}")
    if term.const or not parts:
        parts.append(f"{'-' if term.const < 0 else '+'} {abs(term.const)}")
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


_OPPOSITE = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "==": "!=", "!=": "=="}


def numeric_notes(
    oracle: Oracle,
    items: Sequence[tuple[str, Expr]],
    assumptions: Mapping[str, Any],
    fixed: Mapping[str, Any],
    others: Sequence[Any] = (),
) -> tuple[NumericNote, ...]:
    """Kconfig-style numbers for each comparison over a sum or product in `items`
    ((rule id or claim name, expression)).

    "Current" values: an option the conflict's claims, setups or facts fix shows that
    value. When a comparison also reads options nothing fixes, the values come from a
    witness: the configuration that, under everything else in the conflict (`assumptions`
    maps each member to its literal; the member holding the comparison is left out; the
    literals in `others`, the rules outside the conflict, are added when that stays
    feasible), comes
    closest to satisfying the comparison (CP-SAT maximises its slack). So a comparison shown
    failing fails even at its best. A comparison under an implication is shown only when
    its condition holds for the fixed values, the other options at their defaults.
    """
    notes: list[NumericNote] = []
    # a memory rule's cases (layouts, precisions) each get a witness; its note is the one
    # closest to fitting (the least excess), so a layout the conflict leaves open is shown
    # at its best, not at whichever case came first (Kimi-K2 under vLLM DP: all experts on
    # one GPU at dp 1 instead of an eighth of them at dp 8)
    best: dict[str, tuple[float, int]] = {}
    # which implications are in play: decided by the fixed values, and where those leave
    # it open, by the defaults (options nothing mentions keep their default)
    cm = oracle.compiled
    guards = {**cm.defaults, **cm.facts, **fixed}
    for where, expr in items:
        known = guards
        if where in MEMORY_IN_GIB:
            # a replica layout the conflict leaves open is no default: every case of it is
            # in play, and the one closest to fitting is shown (`best`)
            known = {p: v for p, v in guards.items() if p not in LAYOUT_PATHS or p in fixed}
        layouts: dict[Cmp, dict[str, int]] = {}
        for cmp in _cmps(expr, [], known, layouts):
            if not _is_sum(cmp):
                continue
            values = {p: fixed[p] for p in cmp.paths() if p in fixed}
            witness = None
            if len(values) < len(cmp.paths()):
                rest = [lit for k, lit in assumptions.items() if k != where]
                # under every other rule when that is feasible, else the conflict alone
                witness = _best_witness(oracle, cmp, rest + list(others)) or _best_witness(
                    oracle, cmp, rest
                )
                if witness is None:
                    continue
                values = {p: witness[p] for p in cmp.paths()}
            lhs, rhs = cmp.lhs.value(values), cmp.rhs.value(values)
            if lhs is None or rhs is None:  # it reads an unset option: it is not in play
                continue
            holds = cmp.evaluate(values)
            text = f"{_annotate(cmp.lhs, values)} must be {cmp.op} {_annotate(cmp.rhs, values)}"
            if not isinstance(cmp.rhs, Lin) or len(cmp.rhs.terms) + (1 if cmp.rhs.const else 0) > 1:
                text += f" = {show_value(rhs)}"
            if holds is False:
                text += f", but {lhs} {_OPPOSITE[cmp.op]} {rhs}"
            margin = None
            if where in MEMORY_IN_GIB:
                # The memory rule's integers are bytes scaled for exact arithmetic; say it
                # in GiB, for the same configuration (the witness, or the fixed values on
                # top of the defaults).
                # at the layout of the comparison's case (the witness may leave it open)
                full = {**cm.defaults, **cm.facts, **fixed, **(witness or {})}
                full.update({p: n for p, n in layouts.get(cmp, {}).items() if p not in fixed})
                terms = memory_check_terms(expr)
                shown = _memory_in_gib(full, where, terms)
                margin = _excess(full, where, terms) if shown else None
                text = shown or text
            note = NumericNote(where, text, lhs, cmp.op, rhs, holds, tuple(sorted(values.items())))
            if margin is None:
                notes.append(note)
            elif where not in best or margin < best[where][0]:
                if where in best:
                    notes[best[where][1]] = note
                else:
                    notes.append(note)
                best[where] = (margin, notes.index(note))
    return tuple(notes)


def _excess(values: Mapping[str, Any], rule_id: str, terms: str | None) -> float | None:
    """How far the memory rule's arithmetic misses for `values` (bytes), else None."""
    try:
        block = (
            values["kv_cache_config.tokens_per_block"] if rule_id.endswith("weights-fit") else None
        )
        return excess(values, terms or values.get("memory.terms") or "arbiter", block)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # a needed value is unset
        return None


MEMORY_IN_GIB = ("memory.fits-one-sequence", "memory.weights-fit")
# the options whose layout cases the memory rules split on (facts/memory.py MemoryTerms
# layout_path: vLLM's data-parallel replicas, SGLang's attention-DP groups)
LAYOUT_PATHS = ("vllm_config.data_parallel_size", "sglang_config.attn_dp_size")


def _memory_in_gib(values: Mapping[str, Any], rule_id: str, terms: str | None) -> str | None:
    """The memory rule's arithmetic in GiB for `values`, with the memory terms the rule's
    expression was built with (`terms`, read off the bound expression: the compiled
    model's facts do not carry the profile), so that the printed sum is the solver's."""
    try:
        block = (
            values["kv_cache_config.tokens_per_block"] if rule_id.endswith("weights-fit") else None
        )
        terms = terms or values.get("memory.terms") or "arbiter"
        return shortfall(values, terms, block) + " (per GPU)"
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # a needed value is unset
        return None


# The witness search: first the oracle's own search (no presolve) under a small
# deterministic budget, which proves nearly every witness of the test suite's conflicts
# (all but one under 0.007 deterministic seconds); one it cannot prove is solved again
# with presolve, which proves it in a few ms: the memory budget of a small GPU (0.035
# there; the same witness either way, tests/arbiter/golden/memory_overflow.txt), and a
# slack over a product of wide domains, which the plain search raises a step at a time
# (SGLang's per-rank chunk: a million branches and 20 s of CPU, never proved, under the
# old budget of 0.5). Both searches are deterministic: a conflict always shows the same
# numbers.
WITNESS_QUICK = 0.01  # deterministic seconds of the first search
WITNESS_FULL = 0.5  # and of the presolved one


def _best_witness(oracle: Oracle, cmp: Cmp, assumptions: list[Any]) -> dict[str, Any] | None:
    cm = oracle.compiled
    model = cm.model
    lhs, _, _ = cm.linear(cmp.lhs)
    rhs, _, _ = cm.linear(cmp.rhs)
    slack = {">=": lhs - rhs, ">": lhs - rhs, "<=": rhs - lhs, "<": rhs - lhs}.get(cmp.op)
    model.clear_assumptions()
    model.add_assumptions(assumptions)
    if slack is not None:
        model.maximize(slack)
    solver = oracle.solver
    params = solver.parameters
    checks = (params.linearization_level, params.cp_model_presolve)
    params.linearization_level = 1  # an optimisation, unlike the oracle's feasibility checks
    found = None
    try:
        for presolve, budget in ((False, WITNESS_QUICK), (True, WITNESS_FULL)):
            params.cp_model_presolve = presolve
            params.max_deterministic_time = budget
            status = solver.solve(model)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                found = cm.values(solver)
            if status in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
                break
    finally:
        params.max_deterministic_time = float("inf")
        params.linearization_level, params.cp_model_presolve = checks
        model.clear_objective()
        model.clear_assumptions()
    return found
