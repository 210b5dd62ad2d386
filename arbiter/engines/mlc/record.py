"""What the MLC dialect read, as its own typed record (`DialectInput.native`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NativeMlc:
    """The `EngineConfig` fields that do not shape the configuration (`PASSTHROUGH`: the
    model, its library, ...), written back unchanged."""

    passthrough: dict[str, Any] = field(default_factory=dict)


__all__ = ["NativeMlc"]
