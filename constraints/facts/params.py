"""The counts a model's weights break into (`ParamBreakdown`) and the bytes of a model
dtype: what the family readers (families.py) fill and `ModelSpec` (model.py) carries."""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameters by group; `experts` counts every routed expert."""

    embedding: int = 0
    head: int = 0
    attention: int = 0
    mlp: int = 0
    experts: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.embedding + self.head + self.attention + self.mlp + self.experts + self.other

    def groups(self) -> dict[str, int]:
        return {
            "embedding": self.embedding,
            "head": self.head,
            "attention": self.attention,
            "mlp": self.mlp,
            "experts": self.experts,
            "other": self.other,
        }


__all__ = ["DTYPE_BYTES", "ParamBreakdown"]
