"""Explanations: every conflict, every fix, every dropped claim, as data a renderer can print.

Vocabulary (DESIGN.md section 2): a **conflict** is a minimal unsatisfiable set (MUS) of
functional claims, with the rules that take part (a second minimisation over the rules with
the claims fixed); a **correction** is a minimal set of functional claims whose removal makes
the rest feasible (MCS). Setup claims are background: never blamed, never a correction, shown
as notes.

Algorithms, all on one feasibility oracle (`Oracle`: assumptions, no objective, 1 worker):

- the first conflict is a core-seeded deletion MUS (a few oracle calls);
- `Explainer.marco()` enumerates conflicts MARCO-style: a small CP-SAT "map" model over one
  Boolean per claim proposes the largest unexplored subset; an infeasible one is shrunk to
  a MUS and blocked upwards, a feasible one is grown (first from the witness the oracle
  found, then claim by claim) to a maximal satisfiable subset whose complement is blocked
  downwards;
- `Explainer.minimal_corrections()` enumerates corrections smallest first: each step keeps
  as many claims as possible in one CP-SAT optimisation, and a blocking clause rules the
  correction (and its supersets) out of the next step;
- `Explainer.preferred_correction()` grows a satisfiable set claim by claim in a
  preference order, so its complement is the correction FastDiag returns for that order
  (the least valuable claims are dropped first);
- the search stops when both enumerations are exhausted (the lists are complete) or at its
  budget: a count of conflicts and corrections, or a time limit (60% of it for conflicts,
  at least 40% for corrections). `Search.cut_by` says which one cut it;
- every reported correction is verified by re-solving the rest with `arbitrate()`, and says
  which option values the fix then allows.

A derivation **chain** walks a networkx graph of the conflict (claims, options and rules as
nodes) and propagates the values the claims fix through the rules until two of them clash;
it is rendered as one sentence. Comparisons over sums and products get Kconfig-style numbers
(`path [=value]`), see `numeric_notes`.

Stable codes (a renderer prints them; they never change meaning):

- CFG001  error: a set of functional claims cannot all hold (one per conflict)
- CFG002  error: the setup facts contradict the rules on their own (no claim to blame)
- CFG003  warning: the conflict search stopped at its budget; more conflicts or corrections
          may exist
- CFG004  error: the optimising solve reported no configuration while a feasibility check
          finds one (a solver disagreement: no claim is blamed)
- PERF010 warning: a performance claim was dropped because it conflicts with the functional
          claims and rules
- PERF011 warning: a performance claim was dropped: outranked by a higher priority tier
- PERF012 warning: a performance claim was dropped: outweighed inside its own tier
- PERF013 warning: a performance claim was dropped before optimality was proven (time limit)

The JSON form (`Explanation.to_json()`) is versioned: `{"schema": "arbiter.explanation",
"version": 1, ...}`; see `arbiter/report/json.py` for the field list.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from ortools.sat.python import cp_model

from constraints.domains import EnumDomain
from constraints.expr import And, Cmp, Const, Eq, Expr, Implies, Lin, Not, OneOf, Or, Prod, Term
from constraints.rules import Rule
from constraints.schema import lookup

from .claims import AnyClaim, FuncClaim, PerfClaim, SetupClaim
from .compile import CompiledModel
from .errors import ArbiterError, Conflict, ConflictError
from .oracle import Oracle

SCHEMA = "arbiter.explanation"
SCHEMA_VERSION = 1

CODES = {
    "CFG001": "a set of functional claims cannot all hold",
    "CFG002": "the setup facts contradict the rules on their own",
    "CFG003": "the conflict search stopped at its budget; more may exist",
    "CFG004": "the solver reported no configuration, but the claims are consistent",
    "PERF010": "a performance claim was dropped: it conflicts with the functional claims",
    "PERF011": "a performance claim was dropped: outranked by a higher priority tier",
    "PERF012": "a performance claim was dropped: outweighed inside its own tier",
    "PERF013": "a performance claim was dropped before optimality was proven",
}
# set while a correction is being verified, so a failing re-solve explains itself cheaply
_VERIFYING: ContextVar[bool] = ContextVar("arbiter_explain_verifying", default=False)
DISAGREEMENT = (
    "CFG004: the optimising solve found no configuration, but a feasibility check with "
    "every functional claim finds one; this is a solver disagreement, not a conflict "
    "among the claims"
)
DROP_CODES = {"conflict": "PERF010", "outranked": "PERF011", "outweighed": "PERF012"}


@dataclass(frozen=True)
class Limits:
    """The budget of the conflict search: counts are deterministic, the time limit is a
    safety net (when it cuts the search the lists depend on machine speed, and the report
    says so)."""

    max_conflicts: int = 8
    max_corrections: int = 8
    time_budget_s: float = 5.0


# the budget explain() asks for, seen by the explanation arbitrate() builds on a conflict
_LIMITS: ContextVar[Limits | None] = ContextVar("arbiter_explain_limits", default=None)


# ---------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Member:
    """A claim as a report shows it: name, kind, requirement text and source."""

    name: str
    kind: str
    requires: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "requires": self.requires,
            "source": self.source,
        }


@dataclass(frozen=True)
class RuleRef:
    id: str
    text: str
    source: str
    expr: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "source": self.source, "expr": self.expr}


@dataclass(frozen=True)
class NumericNote:
    """A comparison over sums or products with the values it reads (see `numeric_notes`)."""

    where: str  # a rule id or a claim name
    text: str
    lhs: int | None
    op: str
    rhs: int | None
    holds: bool | None
    values: tuple[tuple[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "text": self.text,
            "lhs": self.lhs,
            "op": self.op,
            "rhs": self.rhs,
            "holds": self.holds,
            "values": {p: v for p, v in self.values},
        }


@dataclass(frozen=True)
class ConflictReport:
    code: str
    conflict: Conflict
    claims: tuple[Member, ...]
    rules: tuple[RuleRef, ...]
    setups: tuple[Member, ...]
    chain: str
    numbers: tuple[NumericNote, ...] = ()
    edges: tuple[tuple[str, str, str], ...] = ()  # (claim, rule, shared option path)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "claims": [m.to_json() for m in self.claims],
            "rules": [r.to_json() for r in self.rules],
            "setups": [m.to_json() for m in self.setups],
            "facts": dict(sorted(self.conflict.facts.items())),
            "chain": self.chain,
            "numbers": [n.to_json() for n in self.numbers],
            "edges": [list(e) for e in self.edges],
        }


@dataclass(frozen=True)
class Correction:
    """A minimal set of claims to drop; `allows` lists option values the re-solved
    configuration then takes around the conflicts it fixes."""

    drop: tuple[str, ...]
    verified: bool
    allows: tuple[tuple[str, Any], ...] = ()
    hits: tuple[int, ...] = ()  # 1-based indices of the reported conflicts it breaks

    def to_json(self) -> dict[str, Any]:
        return {
            "drop": list(self.drop),
            "verified": self.verified,
            "allows": [{"path": p, "value": v} for p, v in self.allows],
            "hits": list(self.hits),
        }


@dataclass(frozen=True)
class DroppedReport:
    code: str
    claim: str
    kind: str
    weight: int
    priority: int
    message: str
    against: tuple[str, ...] = ()
    rules: tuple[RuleRef, ...] = ()
    winners: tuple[str, ...] = ()
    chain: str = ""
    numbers: tuple[NumericNote, ...] = ()
    members: tuple[Member, ...] = ()  # the dropped claim first, then what it conflicts with
    edges: tuple[tuple[str, str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "claim": self.claim,
            "kind": self.kind,
            "weight": self.weight,
            "priority": self.priority,
            "message": self.message,
            "against": list(self.against),
            "rules": [r.to_json() for r in self.rules],
            "winners": list(self.winners),
            "chain": self.chain,
            "numbers": [n.to_json() for n in self.numbers],
            "members": [m.to_json() for m in self.members],
            "edges": [list(e) for e in self.edges],
        }


@dataclass(frozen=True)
class Search:
    complete: bool
    cut_by: str | None  # None, "count" or "time"
    conflicts_found: int
    corrections_found: int
    limits: Limits = field(default_factory=Limits)

    def to_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "cut_by": self.cut_by,
            "conflicts_found": self.conflicts_found,
            "corrections_found": self.corrections_found,
            "max_conflicts": self.limits.max_conflicts,
            "max_corrections": self.limits.max_corrections,
            "time_budget_s": self.limits.time_budget_s,
        }


@dataclass(frozen=True)
class Explanation:
    """Everything a report says, independent of how it is printed.

    status: `conflict` (the hard part is infeasible: `conflicts` and `corrections` are
    filled) or `resolved` (a configuration exists: `dropped` explains each dropped perf
    claim). Rendering is deterministic: the same input gives byte-identical reports.
    """

    status: str
    conflicts: tuple[ConflictReport, ...] = ()
    corrections: tuple[Correction, ...] = ()
    dropped: tuple[DroppedReport, ...] = ()
    notes: tuple[str, ...] = ()
    search: Search | None = None
    # when the conflicts found are all there are and share no claim, every way of dropping
    # one claim per conflict is a correction: one menu per conflict (Resolver.jl's menus)
    menus: tuple[tuple[str, ...], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "status": self.status,
            "conflicts": [c.to_json() for c in self.conflicts],
            "corrections": [c.to_json() for c in self.corrections],
            "menus": [list(m) for m in self.menus],
            "dropped": [d.to_json() for d in self.dropped],
            "notes": list(self.notes),
            "search": None if self.search is None else self.search.to_json(),
        }

    def render(self, format: str = "text", *, color: bool = False) -> str:
        """The report as `text` (colour only when asked), `markdown`, `json` or `html`."""
        from .report import render

        return render(self, format, color=color)

    def __str__(self) -> str:
        return self.render("text")


# ---------------------------------------------------------------------------- formatting
def show_value(value: Any) -> str:
    return "None" if value is None else str(value)


def claim_member(claim: AnyClaim, expr: Expr | None = None) -> Member:
    if isinstance(claim, SetupClaim):
        text = ", ".join(f"{p} = {show_value(v)}" for p, v in sorted(claim.fixes.items()))
    else:
        text = str(expr if expr is not None else claim.expr)
    return Member(claim.name, claim.kind, text, claim.source)


def rule_ref(rule: Rule) -> RuleRef:
    return RuleRef(rule.id, rule.text, str(rule.source), str(rule.expr))


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
    ):
        self.claims = sorted(claims, key=lambda c: c.name)
        self.rules = sorted(rules, key=lambda r: r.id)
        self.facts = dict(facts)
        self.defaults = dict(defaults)
        self.fact_source = dict(fact_source or {})
        self.oracle = oracle or Oracle(
            CompiledModel(self.claims, self.rules, self.facts, self.defaults)
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
            found = self.oracle.mus([*self.setup_lits, *(lits[n] for n in key)], self.rule_items)
            self._rules_memo[key] = list(found or [])  # type: ignore[arg-type]
        return list(self._rules_memo[key])

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
        self, limits: Limits = Limits()
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


# ---------------------------------------------------------------------------- chains
def _partial(expr: Expr, known: Mapping[str, Any]) -> bool | None:
    """Three-valued evaluation: True/False when the known values decide it, else None."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Eq):
        return known[expr.path] == expr.value if expr.path in known else None
    if isinstance(expr, OneOf):
        return known[expr.path] in expr.values if expr.path in known else None
    if isinstance(expr, Cmp):
        if all(p in known for p in expr.paths()):
            return expr.evaluate(known)
        return None
    if isinstance(expr, Not):
        inner = _partial(expr.item, known)
        return None if inner is None else not inner
    if isinstance(expr, And):
        parts = [_partial(i, known) for i in expr.items]
        if False in parts:
            return False
        return True if all(p is True for p in parts) else None
    if isinstance(expr, Or):
        parts = [_partial(i, known) for i in expr.items]
        if True in parts:
            return True
        return False if all(p is False for p in parts) else None
    if isinstance(expr, Implies):
        cond, then = _partial(expr.condition, known), _partial(expr.then, known)
        if cond is False or then is True:
            return True
        if cond is True and then is False:
            return False
        return None
    return None


def _assignments(expr: Expr) -> list[tuple[str, Any]]:
    """The option values an expression fixes outright (equalities under conjunctions)."""
    if isinstance(expr, Eq):
        return [(expr.path, expr.value)]
    if isinstance(expr, OneOf) and len(expr.values) == 1:
        return [(expr.path, expr.values[0])]
    if isinstance(expr, Not) and isinstance(expr.item, Eq):
        domain = lookup(expr.item.path).domain
        if domain.kind == "bool" and not domain.nullable:
            return [(expr.item.path, not expr.item.value)]
        if isinstance(domain, EnumDomain):
            rest = [v for v in domain.values if v != expr.item.value]
            if domain.nullable:
                rest.append(None)
            if len(rest) == 1:
                return [(expr.item.path, rest[0])]
    if isinstance(expr, Cmp) and expr.op == "==":
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(a, Lin) and isinstance(b, Lin) and a.single_path() and not b.terms:
                path = a.single_path()
                return [(path, lookup(path).domain.decode(b.const))]  # type: ignore[arg-type]
    if isinstance(expr, And):
        return [a for item in expr.items for a in _assignments(item)]
    return []


def _pieces(expr: Expr) -> list[Expr]:
    return [p for item in expr.items for p in _pieces(item)] if isinstance(expr, And) else [expr]


@dataclass
class _Origin:
    kind: str  # claim, setup, fact, rule
    name: str = ""
    premises: tuple[str, ...] = ()


class ChainBuilder:
    """Builds the derivation sentence and numeric notes for one set of claims and rules."""

    def __init__(
        self,
        members: Sequence[tuple[str, str, Expr]],  # (name, kind, requirement)
        rules: Sequence[Rule],
        setups: Sequence[SetupClaim],
        facts: Mapping[str, Any],
    ):
        self.members = list(members)
        self.rules = list(rules)
        self.setups = list(setups)
        self.facts = dict(facts)
        self.graph = self._graph()

    def _graph(self) -> nx.Graph:
        g = nx.Graph()
        for name, kind, expr in self.members:
            g.add_node(("claim", name), kind=kind)
            for p in expr.paths():
                g.add_edge(("claim", name), ("option", p))
        for rule in self.rules:
            g.add_node(("rule", rule.id), kind="rule")
            for p in rule.expr.paths():
                g.add_edge(("rule", rule.id), ("option", p))
        return g

    def edges(self) -> tuple[tuple[str, str, str], ...]:
        """(claim, rule, option) for each option a claim and a rule share; rule-to-rule
        links appear as (rule, rule, option)."""
        out = set()
        nodes = sorted(n for n in self.graph if n[0] != "option")
        for i, a in enumerate(nodes):
            for b in nodes[i + 1 :]:
                if a[0] == "claim" and b[0] == "claim":
                    continue
                shared = set(self.graph[a]) & set(self.graph[b])
                for opt in sorted(shared):
                    first, second = (a, b) if a[0] == "claim" or b[0] == "rule" else (b, a)
                    out.add((first[1], second[1], opt[1]))
        return tuple(sorted(out))

    def order(self) -> list[tuple[str, str]]:
        """Claims and rules in breadth-first order from the first claim, through options."""
        start = [("claim", n) for n, _, _ in self.members] or [("rule", r.id) for r in self.rules]
        seen: list[tuple[str, str]] = []
        for root in sorted(start):
            if root in seen or root not in self.graph:
                continue
            for node in nx.bfs_tree(self.graph, root, sort_neighbors=sorted):
                if node[0] != "option" and node not in seen:
                    seen.append(node)
        for node in sorted(self.graph):
            if node[0] != "option" and node not in seen:
                seen.append(node)
        return seen

    # -- propagation
    def sentence(self) -> str:
        """One sentence: what each claim needs, what the rules derive from it (values
        propagated along the graph, setups and facts included), and where two of them
        clash. When propagation finds no clash (the conflict needs case analysis or
        arithmetic), it lists the claims and rules in graph order instead."""
        self._clash_value: Any = None
        self._clash_piece: Expr | None = None
        known: dict[str, Any] = {}
        origin: dict[str, _Origin] = {}
        for s in self.setups:
            for p, v in sorted(s.fixes.items()):
                known[p], origin[p] = v, _Origin("setup", s.name)
        for p, v in self.facts.items():
            if p not in known:
                known[p], origin[p] = v, _Origin("fact")
        order = self.order()
        exprs = {n: e for n, _, e in self.members}
        by_rule = {r.id: r for r in self.rules}
        clash: tuple[str, ...] | None = None

        def assign(p: str, v: Any, why: _Origin) -> tuple[str, ...] | None:
            if p in known:
                if known[p] != v:
                    return ("option", p, repr(v), why.kind, why.name, *why.premises)
                return None
            known[p], origin[p] = v, why
            return None

        for kind, name in order:
            if kind == "claim":
                for p, v in _assignments(exprs[name]):
                    clash = clash or assign(p, v, _Origin("claim", name))
        changed = True
        while clash is None and changed:
            changed = False
            for kind, name in order:
                if clash is not None:
                    break
                pieces = _pieces(exprs[name]) if kind == "claim" else _pieces(by_rule[name].expr)
                for piece in pieces:
                    state = _partial(piece, known)
                    if state is False:
                        clash = (kind, name, str(piece))
                        self._clash_piece = piece
                        break
                    if kind == "rule" and isinstance(piece, Implies):
                        if _partial(piece.condition, known) is True:
                            for p, v in _assignments(piece.then):
                                if p in known and known[p] == v:
                                    continue
                                why = _Origin("rule", name, tuple(sorted(piece.condition.paths())))
                                result = assign(p, v, why)
                                if result is not None:
                                    clash = result
                                    self._clash_value = v
                                    break
                                changed = True
                    elif kind == "rule":
                        for p, v in _assignments(piece):
                            if p not in known:
                                assign(p, v, _Origin("rule", name, ()))
                                changed = True
                    if clash is not None:
                        break
        return self._render(clash, known, origin)

    def _render(self, clash, known, origin) -> str:
        steps: list[str] = []
        said: set[tuple[str, str]] = set()
        rules = {r.id: r for r in self.rules}
        exprs = {n: e for n, _, e in self.members}
        setups = {s.name: s for s in self.setups}

        def claim_step(name: str) -> None:
            if ("claim", name) not in said:
                said.add(("claim", name))
                steps.append(f"`{name}` needs {exprs[name]}")

        def explain(path: str, seen: frozenset[str] = frozenset()) -> None:
            why = origin.get(path)
            if why is None or path in seen:
                return
            if why.kind == "claim":
                claim_step(why.name)
            elif why.kind == "setup":
                if ("setup", why.name) not in said:
                    said.add(("setup", why.name))
                    fixes = ", ".join(
                        f"{p} = {show_value(v)}" for p, v in sorted(setups[why.name].fixes.items())
                    )
                    steps.append(f"the setup `{why.name}` fixes {fixes}")
            elif why.kind == "fact":
                if ("fact", path) not in said:
                    said.add(("fact", path))
                    steps.append(f"{path} is {show_value(known[path])} (a fact)")
            elif why.kind == "rule":
                for premise in why.premises:
                    explain(premise, seen | {path})
                key = ("derived", f"{why.name}:{path}")
                if key not in said:
                    said.add(key)
                    steps.append(
                        f"rule {why.name} says {rules[why.name].text}, "
                        f"so {path} = {show_value(known[path])}"
                    )

        if clash is None:
            for kind, name in self.order():
                if kind == "claim":
                    claim_step(name)
                else:
                    steps.append(f"rule {name} says {rules[name].text}")
            return self._finish(steps, "together")
        if clash[0] == "option":
            _, path, _, kind, name, *premises = clash
            explain(path)
            if kind == "claim":
                claim_step(name)
            else:
                for premise in premises:
                    explain(premise)
                steps.append(
                    f"rule {name} says {rules[name].text}, "
                    f"so {path} = {show_value(self._clash_value)}"
                )
        else:
            kind, name, _ = clash
            piece = self._clash_piece
            # what triggers the rule first, then what it then contradicts
            first = piece.condition.paths() if isinstance(piece, Implies) else frozenset()
            for p in [*sorted(first), *sorted(piece.paths() - first)]:
                explain(p)
            if kind == "claim":
                claim_step(name)
                if str(piece) != str(exprs[name]):
                    steps.append(f"and {piece} fails")
            elif isinstance(piece, Implies) and _partial(piece.condition, known) is True:
                steps.append(f"rule {name} says {rules[name].text}, so it needs {piece.then}")
            else:
                steps.append(f"rule {name} says {rules[name].text}")
        for name_, _, _ in self.members:  # a claim the propagation did not reach
            if ("claim", name_) not in said:
                steps.insert(0, f"`{name_}` needs {exprs[name_]}")
        return self._finish(steps, "")

    def _finish(self, steps: list[str], lead: str) -> str:
        n = len(self.members)
        if n == 0:
            end = "so the setup facts contradict the rules"
        else:
            end = (
                ("so they cannot both hold" if n == 2 else "so they cannot all hold")
                if n > 1
                else "so it cannot hold"
            )
        if lead:
            end = end.replace("so ", f"so, {lead}, ", 1)
        text = "; ".join(steps + [end])
        return text


# ---------------------------------------------------------------------------- numbers
def _cmps(expr: Expr, out: list[Cmp], known: Mapping[str, Any]) -> list[Cmp]:
    """Comparisons that must hold whenever the expression does (not under or/not), leaving
    out those under an implication whose condition the known values make false."""
    if isinstance(expr, Cmp):
        if expr not in out:
            out.append(expr)
    elif isinstance(expr, And):
        for item in expr.items:
            _cmps(item, out, known)
    elif isinstance(expr, Implies) and _partial(expr.condition, known) is not False:
        _cmps(expr.then, out, known)
    return out


def _is_sum(cmp: Cmp) -> bool:
    def size(t: Term) -> int:
        return 2 if isinstance(t, Prod) else len(t.terms)  # type: ignore[attr-defined]

    return size(cmp.lhs) + size(cmp.rhs) >= 2


def _annotate(term: Term, values: Mapping[str, Any]) -> str:
    if isinstance(term, Prod):

        def wrap(t: Lin) -> str:
            text = _annotate(t, values)
            return text if len(t.terms) + (1 if t.const else 0) <= 1 else f"({text})"

        return f"{wrap(term.a)} * {wrap(term.b)}"
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
    notes = []
    # which implications are in play: decided by the fixed values, and where those leave
    # it open, by the defaults (options nothing mentions keep their default)
    cm = oracle.compiled
    guards = {**cm.defaults, **cm.facts, **fixed}
    for where, expr in items:
        for cmp in _cmps(expr, [], guards):
            if not _is_sum(cmp):
                continue
            values = {p: fixed[p] for p in cmp.paths() if p in fixed}
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
            notes.append(
                NumericNote(where, text, lhs, cmp.op, rhs, holds, tuple(sorted(values.items())))
            )
    return tuple(notes)


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
    params = oracle.solver.parameters
    params.max_deterministic_time = 0.5
    try:
        status = oracle.solver.solve(model)
    finally:
        params.max_deterministic_time = float("inf")
        model.clear_objective()
        model.clear_assumptions()
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return cm.values(oracle.solver)


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
) -> Explanation:
    """The full explanation of an infeasible hard part: conflicts (MUS + rules), verified
    corrections (MCS) and setup notes. `limits` defaults to the budget `explain()` set
    (or `Limits()`)."""
    limits = limits or _LIMITS.get() or Limits()
    ex = explainer or Explainer(claims, rules, facts, defaults, fact_source)
    if _VERIFYING.get():  # a re-solve inside a verification: one bare conflict is enough
        first = ex.first_conflict() or []
        conflict = Conflict(tuple(first), tuple(ex.rules_for(first)) if first else ())
        member = tuple(claim_member(ex.by_name[n]) for n in first)
        report = ConflictReport("CFG001" if first else "CFG002", conflict, member, (), (), "")
        return Explanation("conflict", (report,), search=Search(False, "count", 1, 0, limits))
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
    from .solve import arbitrate

    kept = [c for c in ex.claims if c.name not in fix]
    token = _VERIFYING.set(True)
    try:
        resolution = arbitrate(kept, rules=ex.rules, defaults=ex.defaults)
    except ConflictError:  # the full solve disagrees with the oracle: not verified
        return False, ()
    except ArbiterError:  # a timeout: feasibility is proven, the allowed values are not
        return True, ()
    finally:
        _VERIFYING.reset(token)
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
    shown |= {c.path for c in resolution.changes if c.path in around}
    allows = tuple((p, resolution.values[p]) for p in sorted(shown))
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
        return Explanation("resolved", dropped=dropped)
    notes = tuple(_setup_note(c) for c in context.claims if isinstance(c, SetupClaim))
    return Explanation(
        "resolved", dropped=explain_dropped(context, resolution.dropped), notes=notes
    )


def explain(
    claims: Iterable[Any],
    *,
    rules: Iterable[Rule | str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    limits: Limits = Limits(),
    **options: Any,
) -> Explanation:
    """Arbitrate `claims` and explain the outcome: conflicts and corrections when the hard
    part is infeasible, the reason for every dropped perf claim otherwise. `options` go to
    `arbitrate()` as they are (a profile, a mode). Raises InvalidClaim for malformed input.

    The explanation is the one `arbitrate()` attaches to its ConflictError, built on the
    same prepared rules and defaults, with `limits` as the budget."""
    from .solve import arbitrate

    token = _LIMITS.set(limits)
    try:
        resolution = arbitrate(claims, rules=rules, defaults=defaults, **options)
    except ConflictError as exc:
        if exc.explanation is None:  # pragma: no cover - arbitrate always attaches one
            raise
        return exc.explanation
    finally:
        _LIMITS.reset(token)
    return explain_resolution(resolution)
