"""The arbitration problem: validated claims, the rules in scope, facts and defaults.

`ArbitrationProblem.prepare()` turns the arguments of `arbitrate()` into one immutable
record that the core solves (`arbiter.core`) and the explanations read (`arbiter.explain`);
nothing here calls a solver. With a named profile the problem has only the profile's
surface: `frozen` holds every other option at its default (a constant in every model), and
a claim naming one is `OffSurface`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from constraints.errors import SchemaError, UnknownPath
from constraints.expr import And, Eq
from constraints.profiles import Mode, Profile, get_mode, get_profile
from constraints.rules import Rule, bind_rule, get_rule, rules_for
from constraints.rules.base import Computed
from constraints.schema import Scope, fact_defaults, lookup, options, scope_for, scope_of

from .claims import AnyClaim, FuncClaim, PerfClaim, SetupClaim, claims_from_list
from .compile import CompiledModel
from .errors import InvalidClaim
from .fixed import equalities, fixed_options


def prepare_claims(claims: Iterable[Any]) -> list[AnyClaim]:
    """Validate claims (dicts are read as JSON claims) and check names are unique."""
    out: list[AnyClaim] = []
    for i, claim in enumerate(claims_from_list(claims)):  # every bad claim named at once
        if not isinstance(claim, (FuncClaim, PerfClaim, SetupClaim)):
            raise InvalidClaim(f"claim {i} is a {type(claim).__name__}, not a claim", value=claim)
        out.append(claim)
    seen: set[str] = set()
    for claim in out:
        if claim.name in seen:
            raise InvalidClaim("duplicate claim name", claim=claim.name)
        seen.add(claim.name)
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
    facts = fact_defaults()
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
    facts: Mapping[str, Any],
    overrides: Mapping[str, Any] | None,
    scope: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Every option's default for these facts, with `overrides` checked and applied: the
    options of the whole schema (`scope` None) or of the shared sections and the pack
    sections of `scope`'s engines (`problem_scope`)."""
    known = dict(facts)
    defaults = {s.path: s.default_for(known) for s in options(scope) if not s.fact}
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


_BOUND: dict[tuple[int, Any], tuple[Rule, Rule]] = {}


def _bind(rule: Rule, facts: Mapping[str, Any], facts_key: Any) -> Rule:
    """`bind_rule`, reused for the same rule and facts, so that the bound rule is the same
    object on every call (the rule-base cache keys rules by identity)."""
    if not isinstance(rule.expr, Computed):
        return rule
    try:
        key = (id(rule), facts_key)
        found = _BOUND.get(key)
    except TypeError:  # an unhashable fact
        return bind_rule(rule, facts)
    if found is None or found[0] is not rule:
        if len(_BOUND) > 256:
            _BOUND.clear()
        found = (rule, bind_rule(rule, facts))
        _BOUND[key] = found
    return found[1]


def problem_scope(
    profile: Profile,
    claims: Sequence[AnyClaim],
    rules: Sequence[Rule],
    overrides: Mapping[str, Any],
) -> Scope:
    """The engines whose pack sections a named profile's problem holds: the profile's own
    and any other one a claim, a rule or a default names (a claim on another engine's
    option is then `OffSurface`, as before), so that no other pack's schema is read."""
    paths: set[str] = set(overrides)
    for claim in claims:
        exprs = [e for e, _ in claim.options()] if isinstance(claim, PerfClaim) else [claim.expr]
        for expr in exprs:
            paths |= expr.paths()
    for rule in rules:
        paths |= rule.expr.paths()  # memoized on the expression
    return scope_of({profile.engine, *scope_for(paths)})


_IN_SCOPE: dict[str, tuple[Profile, tuple[Rule, ...]]] = {}


def shipped_rules(profile: Profile) -> tuple[Rule, ...]:
    """`rules_for(profile)`, worked out once per profile: the rules of the profile's engine
    pack and the shared pack in its scope (each pack is built once, so the rules are the
    same objects on every call, as the rule-base cache needs)."""
    found = _IN_SCOPE.get(profile.name)
    if found is None or found[0] is not profile:
        found = (profile, rules_for(profile))
        _IN_SCOPE[profile.name] = found
    return found[1]


class OffSurface(InvalidClaim):
    """A claim names an option the profile's release does not have (no field of its field
    list maps to it): bad input, naming the option and the profile (its `code` stays
    "invalid_claim", the service's error code for any bad claim)."""

    def __init__(self, claim: str, path: str, profile: Profile):
        super().__init__(
            f"{profile.name} ({profile.line}) has no such option: it is outside the "
            "profile's surface, held at the profile's default",
            claim=claim,
            path=path,
        )
        self.profile = profile.name


def off_surface(profile: Profile, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """{path: default} of every option outside `profile`'s surface."""
    surface = profile.surface
    return {p: v for p, v in defaults.items() if p not in surface}


def check_surface(claims: Sequence[AnyClaim], frozen: Mapping[str, Any], profile: Profile) -> None:
    """OffSurface for the first claim (in name order) that asks anything of an option
    outside the profile's surface other than the value the profile holds it at. A claim
    whose requirement on such an option is that very value (a dialect's pin of an engine
    default, by equality at the top level) only restates the profile, and is accepted."""
    if not frozen:
        return
    for claim in claims:
        exprs = [e for e, _ in claim.options()] if isinstance(claim, PerfClaim) else [claim.expr]
        for expr in exprs:
            restated = {p for p, v in equalities(expr) if p in frozen and frozen[p] == v}
            for path in sorted(expr.paths()):
                if path in frozen and (path not in restated or _reads_elsewhere(expr, path)):
                    raise OffSurface(claim.name, path, profile)


def _reads_elsewhere(expr: Any, path: str) -> bool:
    """Whether `expr` reads `path` anywhere but in a top-level equality."""
    if isinstance(expr, And):
        return any(_reads_elsewhere(item, path) for item in expr.items)
    if isinstance(expr, Eq):
        return False
    return path in expr.paths()


def check_time_limit(time_limit_s: Any) -> None:
    if time_limit_s is not None and not (
        isinstance(time_limit_s, (int, float))
        and not isinstance(time_limit_s, bool)
        and 0 < time_limit_s < math.inf
    ):
        raise InvalidClaim("time_limit_s must be a positive, finite number", value=time_limit_s)


@dataclass(frozen=True)
class ArbitrationProblem:
    """One arbitration's input, validated: claims in name order, the hard rules and the
    default (soft) rules bound to the facts, the facts with the setup claim that fixed
    each, and every option's default."""

    claims: tuple[AnyClaim, ...]
    rules: tuple[Rule, ...]  # hard
    soft_rules: tuple[Rule, ...]  # kind "default": kept where they can be
    facts: Mapping[str, Any]
    fact_source: Mapping[str, str]
    defaults: Mapping[str, Any]
    profile: Profile
    mode: Mode | None = None
    mode_name: str | None = None
    time_limit_s: float | None = None
    # options outside the profile's surface, at their defaults: constants in every model
    frozen: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        claims: Iterable[Any],
        *,
        rules: Iterable[Rule | str] | None = None,
        time_limit_s: float | None = None,
        defaults: Mapping[str, Any] | None = None,
        profile: str | None = None,
        mode: str | None = None,
    ) -> ArbitrationProblem:
        """Validate `arbitrate()`'s arguments; raises InvalidClaim naming the culprit."""
        ordered = prepare_claims(claims)
        explicit = prepare_rules(rules) if rules is not None else None
        try:
            prof, mode_spec = get_profile(profile), get_mode(mode)
        except SchemaError as exc:
            raise InvalidClaim(str(exc), value=profile if mode is None else mode) from None
        check_time_limit(time_limit_s)
        facts, fact_source = resolve_facts(ordered)
        bind_facts = {**facts, "memory.terms": prof.memory_terms}
        # None: the shipped knowledge in the profile's scope, hard and default
        chosen = list(shipped_rules(prof)) if explicit is None else explicit
        facts_key = (prof.memory_terms, tuple(sorted(facts.items())))
        bound = [_bind(r, bind_facts, facts_key) for r in chosen]
        overrides = {**prof.defaults, **(defaults or {})}
        scope = problem_scope(prof, ordered, bound, overrides) if profile is not None else None
        base_defaults = resolve_defaults(facts, overrides, scope)
        # a named profile owns its surface: every other option is a constant at its
        # default and a claim naming one is bad input; without a name the problem ranges
        # over the whole schema (the seed arbitrator's API: claims on any option)
        frozen = off_surface(prof, base_defaults) if profile is not None else {}
        check_surface(ordered, frozen, prof)
        return cls(
            claims=tuple(ordered),
            rules=tuple(r for r in bound if r.kind != "default"),
            soft_rules=tuple(r for r in bound if r.kind == "default"),
            facts=facts,
            fact_source=fact_source,
            defaults=base_defaults,
            profile=prof,
            mode=mode_spec,
            mode_name=mode,
            time_limit_s=time_limit_s,
            frozen=frozen,
        )

    @property
    def perf_claims(self) -> list[PerfClaim]:
        return [c for c in self.claims if isinstance(c, PerfClaim)]

    def compile(
        self, *, soft: bool = True, objective: bool = True, fixed: bool = False
    ) -> CompiledModel:
        """A model of this problem on a copy of the cached rule base: literals for claims
        and rules, none of them fixed (`soft`: the default rules too; `objective`: with
        the change and distance terms; `fixed`: the options the hard claims set are
        constants, `arbiter.fixed`, for a model in which those claims will hold)."""
        rules = [*self.rules, *self.soft_rules] if soft else list(self.rules)
        return CompiledModel(
            self.claims,
            rules,
            self.facts,
            self.defaults,
            objective=objective,
            fixed=fixed_options(self.claims, self.facts) if fixed else None,
            frozen=self.frozen,
        )

    def without(self, names: Iterable[str]) -> ArbitrationProblem:
        """The same problem without the named claims (facts are kept as they are)."""
        drop = set(names)
        return replace(self, claims=tuple(c for c in self.claims if c.name not in drop))

    def bare(self) -> ArbitrationProblem:
        """The hard part only: no default rules and no mode."""
        return replace(self, soft_rules=(), mode=None, mode_name=None)
