"""Rule discovery: the rules live in packs, this module finds them.

Each engine's pack holds its rules by topic in `constraints/engines/<engine>/rules/`; what
holds for every engine is in `constraints/shared/rules/`. Every public module of a rules
package exports `RULES` (a module without it is an error, never silently skipped); the
module's name is the rules' default `topic`, and the pack's folder their default `Scope`
(the package's `SCOPE`, else the engine: a rule's own scope wins). `rules_for(profile)`
imports and builds only the shared pack and the pack of the profile's engine.

Adding a rule on existing options: append a `Rule(...)` (stable id, one-line text,
`Source`, expression, feasible and infeasible examples) to the topic module of its pack, or
add a module there exporting `RULES`. The test suite checks every rule's examples. This
package keeps only the machinery: `base.py` (the records), `_sources.py` (source helpers)
and the discovery here.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import sys
from dataclasses import replace
from functools import cache
from typing import Any

from ..errors import SchemaError
from ..profiles import ENGINES, get_profile
from .base import Computed, Rule, Scope, Source, bind_rule

SHARED = "shared"


def pack_package(pack: str) -> str:
    """The package holding a pack's rules: an engine's, or the shared one."""
    if pack == SHARED:
        return "constraints.shared.rules"
    return f"constraints.engines.{pack}.rules"


def packs() -> tuple[str, ...]:
    """Every pack: each engine's (in `ENGINES` order), then the shared one."""
    return (*ENGINES, SHARED)


@cache
def pack_rules(pack: str) -> tuple[Rule, ...]:
    """The rules of one pack (hard and default), module by module in the pack's `ORDER`
    and then by name, each with its topic, its pack and the pack's default scope."""
    package = importlib.import_module(pack_package(pack))
    default_scope = getattr(package, "SCOPE", Scope() if pack == SHARED else Scope(pack))
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.ispkg)
    order = tuple(getattr(package, "ORDER", ()))
    modules = [n for n in order if n in names] + [
        n for n in names if n not in order and not n.startswith("_")
    ]
    rules: list[Rule] = []
    for name in modules:
        module = importlib.import_module(f"{package.__name__}.{name}")
        found = getattr(module, "RULES", None)
        if found is None:
            raise SchemaError(
                f"rule module {module.__name__} exports no RULES (a helper module's name "
                "starts with an underscore)"
            )
        for rule in found:
            rule = replace(
                rule,
                topic=rule.topic or name,
                pack=pack,
                scope=default_scope if rule.scope == Scope() else rule.scope,
            )
            rules.append(rule)
    return tuple(rules)


def _unique(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SchemaError(f"duplicate rule ids: {dupes}")
    return rules


class UnknownRule(SchemaError, KeyError):
    def __init__(self, rule_id: str, suggestions: tuple[str, ...] = ()):
        super().__init__(rule_id)
        self.rule_id = rule_id
        self.suggestions = suggestions

    def __str__(self) -> str:
        text = f"unknown rule id {self.rule_id!r}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


@cache
def all_rules() -> tuple[Rule, ...]:
    """Every shipped hard rule, in topic order; ids are unique."""
    return tuple(r for r in every_rule() if r.kind == "hard")


@cache
def default_rules() -> tuple[Rule, ...]:
    """Every shipped `kind="default"` rule: soft engine defaults (see base.py)."""
    return tuple(r for r in every_rule() if r.kind == "default")


@cache
def every_rule() -> tuple[Rule, ...]:
    """Hard and default rules of every pack, in pack order; ids are unique."""
    return _unique(tuple(r for pack in packs() for r in pack_rules(pack)))


@cache
def _in_scope(engine: str) -> tuple[Rule, ...]:
    """The rules of `engine`'s pack and the shared one (only those two are imported)."""
    return _unique((*pack_rules(engine), *pack_rules(SHARED)) if engine in ENGINES else ())


def rules_for(profile: Any, kind: str | None = None) -> tuple[Rule, ...]:
    """The shipped rules whose scope admits `profile` (a `Profile`), hard and default, or
    only those of `kind`: only the profile's engine pack and the shared pack are imported
    and built. A rule another admitted rule `replaces` is left out."""
    admitted = [r for r in _in_scope(profile.engine) if profile.admits(r)]
    replaced = {i for r in admitted for i in r.replaces}
    return tuple(r for r in admitted if r.id not in replaced and (kind is None or r.kind == kind))


def find_rules(profile: str | None = None, grep: str | None = None) -> tuple[Rule, ...]:
    """Shipped rules (hard and default) for listings: only those in scope of the named
    `profile` when one is given (UnknownProfile otherwise), and only those whose id, text,
    source or scope contain `grep` (case-insensitive). The CLI and the service share it."""
    rules = every_rule()
    if profile is not None:
        rules = rules_for(get_profile(profile))
    if grep:
        needle = grep.lower()
        rules = tuple(r for r in rules if needle in f"{r.id} {r.text} {r.source} {r.scope}".lower())
    return rules


def get_rule(rule_id: str) -> Rule:
    """A shipped rule by id, or UnknownRule with close matches. The packs already built
    are searched first, so explaining a check's rules imports no other engine's pack
    (ids are unique across packs: `every_rule`)."""
    built = [p for p in packs() if pack_package(p) in sys.modules]
    for pack in (*built, *(p for p in packs() if p not in built)):
        for rule in pack_rules(pack):
            if rule.id == rule_id:
                return rule

    raise UnknownRule(
        rule_id, tuple(difflib.get_close_matches(rule_id, [r.id for r in every_rule()], n=3))
    )


__all__ = [
    "Computed",
    "Rule",
    "Scope",
    "Source",
    "UnknownRule",
    "all_rules",
    "bind_rule",
    "default_rules",
    "every_rule",
    "find_rules",
    "get_rule",
    "pack_package",
    "pack_rules",
    "packs",
    "rules_for",
]
