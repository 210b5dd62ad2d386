"""The `Rule` record: one piece of engine knowledge with an id, a text, a source and an
expression, plus the two examples (one feasible, one infeasible) that test it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..expr import Expr


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
            "expr": self.expr.to_json(),
        }
