"""Rule packs: one module per topic, each exporting `RULES`; this module collects them.

Adding a rule is routine: append a `Rule(...)` with a stable id, a one-line text, a
`Source`, an expression and its feasible/infeasible examples to the topic's `RULES`
(or add a new topic module to `_TOPICS`). The test suite checks every rule's examples.
"""

from __future__ import annotations

import importlib
from functools import cache

from ..errors import SchemaError
from .base import Computed, Rule, Scope, Source, bind_rule

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
    "parallel",
)


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
            rules.append(rule if rule.topic else _with_topic(rule, topic))
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SchemaError(f"duplicate rule ids: {dupes}")
    return tuple(rules)


def get_rule(rule_id: str) -> Rule:
    """A shipped rule by id, or UnknownRule with close matches."""
    for rule in every_rule():
        if rule.id == rule_id:
            return rule
    import difflib

    raise UnknownRule(
        rule_id, tuple(difflib.get_close_matches(rule_id, [r.id for r in every_rule()], n=3))
    )


def _with_topic(rule: Rule, topic: str) -> Rule:
    from dataclasses import replace

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
    "get_rule",
]
