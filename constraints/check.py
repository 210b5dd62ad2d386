"""Verify an EngineConfig against the rules without any solver."""

from __future__ import annotations

from collections.abc import Iterable

from .rules import Rule, all_rules
from .schema import EngineConfig


def violations(config: EngineConfig, rules: Iterable[Rule] | None = None) -> list[Rule]:
    """The rules that `config` breaks (empty when it is valid)."""
    values = config.flat()
    return [r for r in (all_rules() if rules is None else rules) if not r.expr.evaluate(values)]
