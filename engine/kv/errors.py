"""Typed errors of the paged KV cache.

Every error carries the facts that caused it as attributes, and its message names the
culprit (the sequence, the block, the invariant), so a failing test or a crashed step says
what broke without a debugger.
"""

from __future__ import annotations

from typing import ClassVar

from ..errors import EngineError


class KvCacheError(EngineError):
    """Base class of every KV-cache error; bad input unless a subclass says a fault."""


class InvalidKvSpec(KvCacheError):
    """A `KvCacheSpec` field has a value the cache cannot honour."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        super().__init__(field, value, reason)
        self.field = field
        self.value = value
        self.reason = reason

    def __str__(self) -> str:
        return f"invalid KvCacheSpec.{self.field}={self.value!r}: {self.reason}"


class OutOfBlocks(KvCacheError):
    """An act was called without its check: the pool cannot supply the blocks."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, seq_id: int, needed: int, available: int) -> None:
        super().__init__(seq_id, needed, available)
        self.seq_id = seq_id
        self.needed = needed
        self.available = available

    def __str__(self) -> str:
        return (
            f"sequence {self.seq_id} needs {self.needed} free blocks but only "
            f"{self.available} are available (call the can_* check first)"
        )


class SequenceStateError(KvCacheError):
    """A sequence is in the wrong state for the requested operation."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, seq_id: int, operation: str, reason: str) -> None:
        super().__init__(seq_id, operation, reason)
        self.seq_id = seq_id
        self.operation = operation
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot {self.operation} sequence {self.seq_id}: {self.reason}"


class InvariantViolation(KvCacheError):
    """`check_valid()` found a broken invariant; `invariant` is its stable name."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(invariant, detail)
        self.invariant = invariant
        self.detail = detail

    def __str__(self) -> str:
        return f"KV cache invariant {self.invariant!r} broken: {self.detail}"
