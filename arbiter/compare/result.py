"""The side-by-side result: one `EngineResult` per engine, gathered in a `Comparison`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .intent import Intent

HOLDS = "holds"
CHANGED = "holds with changes"
CONFLICTS = "conflicts"
UNAVAILABLE = "unavailable"  # the engine's checker is not importable
ERROR = "error"  # the engine's checker failed (a fault of arbiter, not of the intent)
STATUSES = (HOLDS, CHANGED, CONFLICTS, UNAVAILABLE, ERROR)


@dataclass
class EngineResult:
    """What one engine makes of the intent.

    `config`: the native config (as the engine's checker writes it back when it holds,
    else as generated from the intent); `options`: feature -> the native keys it set;
    `missing`: hard features the engine has no option for (-> why); `dropped`: soft wishes
    that gave way (-> why); `conflicts` and `rules`: the checker's minimal conflict
    (`explained`: the same in the explanation's JSON form, claims, rules and edges);
    `changes`: what the engine would change; `kv_tokens`: the KV capacity it gives (one
    rank, `Resolution.capacity`), None where no resolution exists; `checks`: checker runs."""

    engine: str
    label: str
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    conflicts: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    kv_tokens: int | None = None
    kv_blocks: int | None = None
    tokens_per_block: int | None = None
    reason: str | None = None  # why the engine was not checked (unavailable, error)
    checks: int = 0
    # the checker's conflicts in the explanation's JSON form (claims, rules, edges,
    # chain: `conflicts[]` of arbiter.report.json), for the conflict graph
    explained: tuple[dict[str, Any], ...] = ()
    format: str = "yaml"  # the native config's format (the engine pack's)
    # what the engine sets by itself (among `warnings`: "vLLM would set ..."), and a
    # reject's conflicts and fixes in the engine's own words (arbiter.dialects.answer)
    engine_changes: tuple[str, ...] = ()
    in_words: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        return self.status in (HOLDS, CHANGED)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "label": self.label,
            "status": self.status,
            "config": self.config,
            "options": {k: list(v) for k, v in self.options.items()},
            "missing": dict(self.missing),
            "dropped": dict(self.dropped),
            "conflicts": list(self.conflicts),
            "rules": list(self.rules),
            "changes": list(self.changes),
            "warnings": list(self.warnings),
            "kv_tokens": self.kv_tokens,
            "kv_blocks": self.kv_blocks,
            "tokens_per_block": self.tokens_per_block,
            "reason": self.reason,
            "checks": self.checks,
            "explained": list(self.explained),
        }


@dataclass
class Comparison:
    """The intent and each engine's result, in the order the engines were asked for."""

    intent: Intent
    results: tuple[EngineResult, ...]

    def __getitem__(self, engine: str) -> EngineResult:
        for result in self.results:
            if result.engine == engine:
                return result
        raise KeyError(engine)

    @property
    def engines(self) -> tuple[str, ...]:
        return tuple(r.engine for r in self.results)

    @property
    def all_hold(self) -> bool:
        return all(r.holds for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 when every engine holds (with or without changes), else 1."""
        return 0 if self.all_hold else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent.to_json(),
            "all_hold": self.all_hold,
            "results": [r.to_json() for r in self.results],
        }


__all__ = [
    "CHANGED",
    "CONFLICTS",
    "ERROR",
    "HOLDS",
    "STATUSES",
    "UNAVAILABLE",
    "Comparison",
    "EngineResult",
]
