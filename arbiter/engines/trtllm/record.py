"""What the TensorRT-LLM dialect read, as its own typed record (`DialectInput.native`):
what writing back and judging need, and nothing else reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .map import Reading


@dataclass
class NativeTrtllm:
    """The merged LLM arguments as given (`input`), their reading onto options (claims and
    carried fields), the backend and release they were checked against, the dialect's
    notes, the runtime limits a prebuilt engine's build overrides (`overrides`), and the
    options pinned at the engine's default and never written back (`engine_defaults`)."""

    input: dict[str, Any] = field(default_factory=dict)
    reading: Reading = field(default_factory=Reading)
    backend: str = "pytorch"
    release: str = ""
    notes: list[str] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    engine_defaults: set[str] = field(default_factory=set)


__all__ = ["NativeTrtllm"]
