"""The outcome of arbitration: solved config, kept and dropped claims, provenance, stats."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from constraints.facts.memory import memory_terms
from constraints.schema import engine_config, lookup, out_of_scope, scope_for
from constraints.shared.rules.memory import capacity

if TYPE_CHECKING:
    from constraints.schema import EngineConfig


class SolveStatus(str, Enum):
    """How good a resolution is: proven optimal, or the best found within the time limit.
    A `str`, so `status == "optimal"` and JSON output read as before."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@dataclass(frozen=True)
class DropReason:
    """Why a perf claim was dropped.

    kind: `conflict` (it cannot hold with the functional claims and rules), `outranked`
    (a kept claim of a higher priority tier stands in its way), `outweighed` (kept claims
    of its own tier weigh more), or `unproven` (a time limit cut the search before
    optimality was proven). `claims` is the minimal set it conflicts with, `rules` the
    rules linking them, `winners` the kept perf claims among `claims`.
    """

    kind: str
    claim: str
    claims: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    winners: tuple[str, ...] = ()

    def __str__(self) -> str:
        against = " and ".join(f"`{c}`" for c in self.claims)
        via = f" (rules: {', '.join(self.rules)})" if self.rules else ""
        if self.kind == "conflict":
            return f"`{self.claim}` conflicts with {against or 'the rules'}{via}"
        if self.kind == "outranked":
            return f"`{self.claim}` is outranked by higher-priority {against}{via}"
        if self.kind == "outweighed":
            return f"`{self.claim}` is outweighed by {against}, which together weigh more{via}"
        return f"`{self.claim}` was not kept within the time limit (optimality not proven)"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "claim": self.claim,
            "claims": list(self.claims),
            "rules": list(self.rules),
            "winners": list(self.winners),
            "message": str(self),
        }


@dataclass(frozen=True)
class KeptClaim:
    name: str
    weight: int
    priority: int
    alternative: int | None = None  # None: the main requirement; i: alternatives[i]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weight": self.weight,
            "priority": self.priority,
            "alternative": self.alternative,
        }


@dataclass(frozen=True)
class DroppedClaim:
    """A dropped perf claim. Its `reason` is worked out on first access (it costs a few
    solver calls), and at once for claims that have a fallback."""

    name: str
    weight: int
    priority: int
    _explain: Callable[[], DropReason] | None = field(default=None, compare=False, repr=False)
    _memo: dict[str, DropReason] = field(default_factory=dict, compare=False, repr=False)

    @property
    def reason(self) -> DropReason:
        if "reason" not in self._memo:
            assert self._explain is not None
            self._memo["reason"] = self._explain()
        return self._memo["reason"]

    def to_json(self, with_reason: bool = True) -> dict[str, Any]:
        if with_reason:
            reason = self.reason.to_json()
        else:
            reason = {
                "kind": "not_computed",
                "claim": self.name,
                "claims": [],
                "rules": [],
                "winners": [],
                "message": f"`{self.name}` was dropped; its reason was not computed within the explanation budget",
            }
        return {
            "name": self.name,
            "weight": self.weight,
            "priority": self.priority,
            "reason": reason,
        }


@dataclass(frozen=True)
class Change:
    path: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.path}: {self.old} -> {self.new}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class Provenance:
    """What decided an option's value.

    kind: `setup` (a setup claim fixed it), `fact` (a fact left at its default), `claim`
    (a kept or functional claim names the option), `rule` (rules, triggered by `claims`,
    forced it off its default), `default`, or `tradeoff` (leaving the default would have
    cost more changes elsewhere).
    """

    path: str
    value: Any
    kind: str
    claims: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind in ("setup", "claim"):
            return f"{self.path} = {self.value} (set by {', '.join(self.claims)})"
        if self.kind == "rule":
            by = f" given {', '.join(self.claims)}" if self.claims else ""
            return f"{self.path} = {self.value} (forced by rules {', '.join(self.rules)}{by})"
        if self.kind == "tradeoff":
            return f"{self.path} = {self.value} (off its default to keep other changes fewer)"
        return f"{self.path} = {self.value} ({self.kind})"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "value": self.value,
            "kind": self.kind,
            "claims": list(self.claims),
            "rules": list(self.rules),
        }


@dataclass
class Resolution:
    """A solved configuration and how it came to be (`config`, the typed view of
    `values`, is built on first access)."""

    status: SolveStatus
    kept: tuple[KeptClaim, ...]
    dropped: tuple[DroppedClaim, ...]
    changes: tuple[Change, ...]
    stats: dict[str, Any]
    values: dict[str, Any] = field(repr=False, default_factory=dict)
    _provenance: Callable[[str], Provenance] | None = field(default=None, repr=False)
    _cache: dict[str, Provenance] = field(default_factory=dict, repr=False)
    # answers drop reasons, provenance and explain() (arbiter.explain.ResolutionExplainer)
    _context: Any = field(default=None, repr=False, compare=False)
    overridden_defaults: tuple[str, ...] = ()  # kind="default" rules a claim overrode
    _config: EngineConfig | None = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> EngineConfig:
        """The solved configuration as an `EngineConfig` of the sections it was solved
        over (the shared ones and its profile's pack's), validated on first access."""
        if self._config is None:
            model = engine_config(scope_for(self.values))
            self._config = model.from_flat(self.values)
        return self._config

    @property
    def capacity(self) -> Any:
        """Memory of one rank: KV blocks and tokens, bytes of each term, headroom
        (`constraints.shared.rules.memory.Capacity`)."""

        terms = memory_terms(self.stats.get("memory_terms", "arbiter"))
        # the engine's KV manager may hold longer sequences than max_seq_len (its terms say)
        return capacity(self.values, terms, terms.held_tokens(self.values))

    def value(self, path: str) -> Any:
        """The solved value of an option or fact; OutOfScope for another engine's own
        option (a named profile's resolution holds the shared sections and its engine's)."""
        path = lookup(path).path
        if path not in self.values:
            raise out_of_scope(path, self.values)
        return self.values[path]

    def provenance(self, path: str) -> Provenance:
        """The claim, rule or default that decided `path` (computed on first request)."""
        path = lookup(path).path
        if path not in self._cache:
            assert self._provenance is not None
            self._cache[path] = self._provenance(path)
        return self._cache[path]

    @property
    def kept_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.kept)

    @property
    def dropped_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dropped)

    def to_json(self, reason_budget_s: float | None = None) -> dict[str, Any]:
        """JSON form. Each dropped claim's reason costs a few solver calls; with
        `reason_budget_s`, reasons are worked out in order until the budget is spent and
        the rest say `not_computed`."""

        deadline = None if reason_budget_s is None else time.perf_counter() + reason_budget_s
        dropped = []
        for d in self.dropped:
            within = deadline is None or time.perf_counter() < deadline or "reason" in d._memo
            dropped.append(d.to_json(with_reason=within))
        return {
            "status": str(self.status),
            "config": self.config.model_dump(mode="json"),
            "kept": [k.to_json() for k in self.kept],
            "dropped": dropped,
            "changes": [c.to_json() for c in self.changes],
            "stats": dict(self.stats),
        }

    def explain(self, format: str | None = None, *, color: bool = False) -> Any:
        """Why each dropped perf claim was dropped: the `Explanation` object, or with
        `format` (text, markdown, json, html) its rendered report."""
        if self._context is None:
            raise ValueError("this resolution was built without its explanation context")
        explanation = self._context.explanation(self)
        return explanation if format is None else explanation.render(format, color=color)

    def summary(self) -> str:
        """A few lines for a terminal: kept, dropped and changed."""
        lines = [f"status: {self.status}"]
        for k in self.kept:
            alt = "" if k.alternative is None else f" (alternative {k.alternative})"
            lines.append(f"kept     {k.name}{alt}")
        for d in self.dropped:
            lines.append(f"dropped  {d.name}: {d.reason}")
        for c in self.changes:
            lines.append(f"changed  {c}")
        return "\n".join(lines)
