"""What the vLLM dialect read, as its own typed record (`DialectInput.native`): what
writing back and judging need, and nothing else reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .fields import Given
from .map import Reading


@dataclass(frozen=True)
class Forced:
    """A value the user wrote that vLLM overwrites whatever else holds, and why."""

    path: str
    before: Any
    after: Any
    why: str


@dataclass
class NativeVllm:
    """The merged serve arguments as written (`input`), each field as given (`given`:
    field -> Given), their reading onto options (claims and carried fields), what vLLM
    derives for the fields left open, with the reason (`defaults`), the dialect's notes,
    the release line read against, and the values vLLM overwrites (`forced`)."""

    input: dict[str, Any] = field(default_factory=dict)
    given: dict[str, Given] = field(default_factory=dict)
    reading: Reading = field(default_factory=Reading)
    defaults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    profile: str = ""
    forced: dict[str, Forced] = field(default_factory=dict)


__all__ = ["Forced", "NativeVllm"]
