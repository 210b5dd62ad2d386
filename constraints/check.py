"""Verify an EngineConfig against the rules without any solver."""

from __future__ import annotations

from collections.abc import Iterable

from .profiles import Profile, get_profile
from .rules import Rule, rules_for
from .schema import EngineConfig


def violations(
    config: EngineConfig,
    rules: Iterable[Rule] | None = None,
    *,
    profile: str | Profile | None = None,
) -> list[Rule]:
    """The hard rules that `config` breaks (empty when it is valid): `rules`, or the
    shipped rules in scope of `profile` (default trtllm-1.2), as `arbitrate()` compiles."""
    if rules is None:
        rules = rules_for(get_profile(profile), kind="hard")
    values = config.flat()
    return [r for r in rules if not r.expr.evaluate(values)]
