"""What the SGLang dialect read, as its own typed record (`DialectInput.native`): what
deriving, writing back and judging need, and nothing else reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...claims import AnyClaim
from .serve import Arguments


@dataclass
class NativeSglang:
    """The parsed `Arguments`, the merged input in the user's spelling (`input`), the
    fields carried through (field -> reason) and, as the pipeline runs: what SGLang
    derives for the fields left unset (`derived`, claims), the explicit values the
    second solve lowers (`pending`, written back once that solve is the one judged:
    `rewritten`), and the judge's `adjustments`, `derivations` and `notes`."""

    arguments: Arguments = field(default_factory=Arguments)
    input: dict[str, Any] = field(default_factory=dict)
    carried: dict[str, str] = field(default_factory=dict)
    derived: list[AnyClaim] = field(default_factory=list)
    pending: dict[str, Any] | None = None
    rewritten: dict[str, Any] = field(default_factory=dict)
    adjustments: list[str] = field(default_factory=list)
    derivations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


__all__ = ["NativeSglang"]
