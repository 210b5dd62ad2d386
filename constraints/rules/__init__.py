"""Rule packs: one module per topic, each exporting `RULES`; this module collects them.

Adding a rule is routine: append a `Rule(...)` with a stable id, a one-line text, a
`Source`, an expression and its feasible/infeasible examples to the topic's `RULES`
(or add a new topic module to `_TOPICS`). The test suite checks every rule's examples.

Every rule has a `Scope` (engine, backends, release range); a topic module whose rules all
belong to one engine may leave it to `_TOPIC_SCOPES` (a rule's own scope wins).
`rules_for(profile)` is what `arbitrate()` compiles for a profile.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import replace
from functools import cache
from typing import Any

from ..errors import SchemaError
from ..profiles import get_profile
from ._sources import MLC
from .base import Computed, Rule, Scope, Source, bind_rule
from .sglang import SGLANG

_TOPICS = (
    "attention",
    "kv_cache",
    "build",
    "scheduler",
    "speculative",
    "quantization",
    "device",
    "plugin",
    "runtime",
    "model",
    "mlc",
    "pairs",
    "memory",
    "torch_llm_args",
    "parallel",
    "vllm",
    "sglang",
    "sglang_backend",
    "sglang_models",
    "sglang_kv4",
    "experts",
)

# the scope of a topic's rules that leave theirs at the default (every engine)
_TOPIC_SCOPES: dict[str, Scope] = {"mlc": MLC, "sglang": SGLANG}


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
    """Hard and default rules, in topic order; ids are unique."""
    rules: list[Rule] = []
    for topic in _TOPICS:
        module = importlib.import_module(f"{__name__}.{topic}")
        for rule in module.RULES:
            rule = rule if rule.topic else _with_topic(rule, topic)
            if topic in _TOPIC_SCOPES and rule.scope == Scope():
                rule = replace(rule, scope=_TOPIC_SCOPES[topic])
            rules.append(rule)
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SchemaError(f"duplicate rule ids: {dupes}")
    return tuple(rules)


def rules_for(profile: Any, kind: str | None = None) -> tuple[Rule, ...]:
    """The shipped rules whose scope admits `profile` (a `Profile`), hard and default, or
    only those of `kind`. A rule another admitted rule `replaces` is left out."""
    admitted = [r for r in every_rule() if profile.admits(r)]
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
    """A shipped rule by id, or UnknownRule with close matches."""
    for rule in every_rule():
        if rule.id == rule_id:
            return rule

    raise UnknownRule(
        rule_id, tuple(difflib.get_close_matches(rule_id, [r.id for r in every_rule()], n=3))
    )


def _with_topic(rule: Rule, topic: str) -> Rule:
    return replace(rule, topic=topic)


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
    "rules_for",
]
