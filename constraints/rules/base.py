"""The `Rule` record: one piece of engine knowledge with an id, a text, a source and an
expression, plus the two examples (one feasible, one infeasible) that test it.

Two kinds of rule:

- `kind="hard"` (almost all): the configuration must satisfy it. Catalog rules the engine
  reports as an error are hard, and so are the ones it "auto"-fixes by overriding even an
  explicit user value (the user would not get what they asked for; fail closed).
- `kind="default"`: a value the engine picks or advises when the user leaves it open (the
  catalog's `warn` advice and "unless explicitly set" defaults). It is a soft preference:
  `arbitrate()` keeps as many default rules as it can in a tier below every perf claim and
  above "fewest changes", so any func or perf claim overrides it, and the resolution lists
  the default rules it overrode (`Resolution.overridden_defaults`). Its infeasible example
  is therefore not a conflict but an override; `all_rules()` returns the hard rules and
  `default_rules()` the soft ones.

`Computed` is an expression whose coefficients are worked out from the facts (the memory
model needs products of several facts, which a linear sum cannot name): `arbitrate()`
binds it to the facts before compiling, and evaluating it reads the facts from the values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..expr import And, Expr
from ..profiles import BACKENDS, ENGINES
from ..schema import fact_defaults


def release_key(release: str) -> tuple[int, ...]:
    """'1.2' -> (1, 2); '0.5.3' -> (0, 5, 3). Releases compare as integer tuples."""
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        raise ValueError(f"release {release!r} is not dotted integers (like '1.2')") from None


@dataclass(frozen=True)
class Scope:
    """Where a rule holds: one engine (or "any"), its backends (empty: all of them) and
    an inclusive release range (`since`/`until`, empty: open). A rule is compiled only
    for a profile inside its scope (`applies`), and reports say why (`why`)."""

    engine: str = "any"
    backends: tuple[str, ...] = ()
    since: str = ""
    until: str = ""

    def __post_init__(self) -> None:
        if self.engine != "any" and self.engine not in ENGINES:
            raise ValueError(f"scope engine {self.engine!r} is not one of {ENGINES} or 'any'")
        for backend in self.backends:
            if backend not in BACKENDS.get(self.engine, ()):
                raise ValueError(f"scope backend {backend!r} is not a backend of {self.engine}")
        for release in (self.since, self.until):
            if release:
                release_key(release)

    def applies(self, engine: str, backend: str = "", release: str = "") -> bool:
        if self.engine not in ("any", engine):
            return False
        if self.backends and backend not in self.backends:
            return False
        if release:
            key = release_key(release)
            if self.since and key < release_key(self.since):
                return False
            if self.until and key > release_key(self.until):
                return False
        return True

    def __str__(self) -> str:
        text = "every engine" if self.engine == "any" else self.engine
        if self.backends:
            text += " (" + "/".join(self.backends) + " backend)"
        if self.since and self.until:
            text += f" {self.since}-{self.until}"
        elif self.since:
            text += f" >= {self.since}"
        elif self.until:
            text += f" <= {self.until}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "backends": list(self.backends),
            "since": self.since,
            "until": self.until,
        }


@dataclass(frozen=True)
class Source:
    """Where a rule comes from: engine, file, and the catalog id (e.g. T37)."""

    engine: str
    file: str
    ref: str = ""
    version: str = ""

    def __str__(self) -> str:
        text = f"{self.engine} {self.file}"
        if self.version:
            text += f" ({self.version})"
        if self.ref:
            text += f" [{self.ref}]"
        return text


@dataclass(frozen=True)
class Rule:
    """Engine knowledge: always hard unless `kind` says the engine only adjusts a default.

    `feasible` and `infeasible` are requirements ({path: value or predicate}); paths under
    `device.` and `model.` are facts and become setup claims in tests. Under this rule alone
    the first must hold and the second must not.
    """

    id: str
    text: str
    source: Source
    expr: Expr
    feasible: Mapping[str, Any] = field(default_factory=dict)
    infeasible: Mapping[str, Any] = field(default_factory=dict)
    kind: Literal["hard", "default"] = "hard"
    topic: str = ""
    scope: Scope = field(default_factory=Scope)
    # ids of rules this one stands in for wherever both are in scope (an engine's own
    # version of a rule every engine shares); `rules_for` compiles this one only
    replaces: tuple[str, ...] = ()
    # ids of weaker forms of the same check, which this rule implies (the KV of one
    # sequence holds at least one block): where one of them is in conflict as well, the
    # explanation names it instead, the more basic reason, whichever core the solver finds
    weaker: tuple[str, ...] = ()
    # the pack the rule ships in: an engine's name or "shared" (set by discovery)
    pack: str = ""

    def __str__(self) -> str:
        return f"{self.id}: {self.text}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "topic": self.topic,
            "source": {
                "engine": self.source.engine,
                "file": self.source.file,
                "ref": self.source.ref,
                "version": self.source.version,
            },
            "scope": self.scope.to_json(),
            "expr": self.expr.to_json(),
        }


class Computed(And):
    """An expression built from the facts: `build(facts)` returns a plain expression.

    `reads` names every path the built expression may read (facts and options), so
    explanations and the solver-free checker see them. `arbitrate()` binds it to the
    facts of the claims; code that compiles it unbound gets it built for the schema's
    default facts (it is an `And` of that expression)."""

    def __init__(
        self, name: str, build: Callable[[Mapping[str, Any]], Expr], reads: frozenset[str]
    ):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "build", build)
        object.__setattr__(self, "reads", frozenset(reads))

    @property
    def items(self) -> tuple[Expr, ...]:  # type: ignore[override]
        return (self.build(fact_defaults()),)

    def bind(self, facts: Mapping[str, Any]) -> Expr:
        return self.build(facts)

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return self.build(values).evaluate(values)

    def paths(self) -> frozenset[str]:
        return self.reads

    def reads_under(self, terms: str) -> frozenset[str]:
        """The paths the expression may read when bound under memory terms `terms` (a
        profile's `memory_terms`): `paths()` here; an expression whose reads depend on
        the engine narrows them (the memory rules: that engine's layout options only)."""
        return self.paths()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Computed({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> Any:
        return {"computed": self.name}


def bind_rule(rule: Rule, facts: Mapping[str, Any]) -> Rule:
    """The rule with any `Computed` expression built for these facts."""
    if isinstance(rule.expr, Computed):
        return replace(rule, expr=rule.expr.bind(facts))
    return rule
