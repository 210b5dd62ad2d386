"""Explanation data: limits, codes, report records and the Explanation object."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from constraints.expr import Expr
from constraints.rules import Rule, get_rule

from ..claims import AnyClaim, SetupClaim
from ..errors import Conflict
from ..report import render

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


DEFAULT_LIMITS = Limits()  # the budget when none is given


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
    """A rule as a report shows it; `scope` is where it holds and `why` why it was
    compiled for the profile of the arbitration (empty when no profile chose it)."""

    id: str
    text: str
    source: str
    expr: str
    scope: str = ""
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "expr": self.expr,
            "scope": self.scope,
            "why": self.why,
        }


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
    # a claim of several pins (an engine's open defaults as one claim): the pins that take
    # part in this conflict, a minimal set (`assembly._parts`); claims not listed: all
    parts: tuple[tuple[str, tuple[str, ...]], ...] = ()

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
    # the profile arbitrated under: (name, release line in words); () when none was named
    profile: tuple[str, str] | tuple[()] = ()
    # a resolved set's configuration: each option off its default as (path, default, value)
    changes: tuple[tuple[str, Any, Any], ...] = ()

    def for_profile(self, profile: Any) -> Explanation:
        """This explanation naming `profile` (a constraints.profiles.Profile), with each
        rule's `why`: its scope against the profile."""

        def why(ref: RuleRef) -> RuleRef:
            try:
                rule = get_rule(ref.id)
            except KeyError:  # a rule the caller passed in, not a shipped one
                return replace(ref, why=f"passed in explicitly (profile {profile.name})")
            return replace(ref, why=profile.why(rule))

        return replace(
            self,
            profile=(profile.name, profile.line),
            conflicts=tuple(
                replace(c, rules=tuple(why(r) for r in c.rules)) for c in self.conflicts
            ),
            dropped=tuple(replace(d, rules=tuple(why(r) for r in d.rules)) for d in self.dropped),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "profile": (
                {"name": self.profile[0], "line": self.profile[1]} if self.profile else None
            ),
            "status": self.status,
            "conflicts": [c.to_json() for c in self.conflicts],
            "corrections": [c.to_json() for c in self.corrections],
            "menus": [list(m) for m in self.menus],
            "dropped": [d.to_json() for d in self.dropped],
            "notes": list(self.notes),
            "search": None if self.search is None else self.search.to_json(),
        } | (
            {"changes": [{"path": p, "old": old, "new": new} for p, old, new in self.changes]}
            if self.status == "resolved"
            else {}
        )

    def render(self, format: str = "text", *, color: bool = False) -> str:
        """The report as `text` (colour only when asked), `markdown`, `json` or `html`."""
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
    return RuleRef(rule.id, rule.text, str(rule.source), str(rule.expr), str(rule.scope))
