"""Every error of the runtime (`engine`), under one root: `EngineError`.

Each error keeps the built-in type callers already catch (`ValueError`, `RuntimeError`,
`KeyError`) and carries what a command line and a service answer for it, as the errors of
`constraints` and `arbiter` do: `exit_code` (2 bad input, 3 a fault of the runtime),
`http_status` and a stable `code`. The KV cache (`engine.kv.errors`) and the
tensor-parallel runtime (`engine.parallel.errors`) keep their own modules, with roots
under `EngineError`; `engine.args.InvalidLlmArg` is also an `arbiter.InvalidClaim`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar


class EngineError(Exception):
    """Base of every error `engine` raises; by default bad input (exit 2, HTTP 422)."""

    exit_code: ClassVar[int] = 2
    http_status: ClassVar[int] = 422
    code: ClassVar[str] = "engine_error"


# ---------------------------------------------------------------------------- model folder


class ModelFolderError(EngineError, ValueError):
    """A model folder that cannot be loaded: `file` names the culprit, `reason` says why."""

    def __init__(self, file: str | Path, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file = str(file)
        self.reason = reason


class ModelConfigError(EngineError, ValueError):
    """A ``config.json`` the model cannot be built from; ``key`` names the culprit."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class UnsupportedArchitecture(ModelConfigError):
    """A `config.json` naming an architecture the runtime does not build."""


class CheckpointError(EngineError, ValueError):
    """The checkpoint's tensors do not fit the model; names what is missing or extra."""

    def __init__(
        self, message: str, missing: list[str] | None = None, unexpected: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.missing = missing or []
        self.unexpected = unexpected or []


# ---------------------------------------------------------------------------- requests


class InvalidPrompt(EngineError, ValueError):
    """A prompt the model cannot read; `index` is the prompt's place in the batch (None for
    a single `add_request`), `position` the culprit token's place in it."""

    def __init__(
        self,
        reason: str,
        *,
        value: Any = None,
        index: int | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.value = value
        self.index = index
        self.position = position

    def __str__(self) -> str:
        where = "prompt" if self.index is None else f"prompt {self.index}"
        if self.position is not None:
            where += f", token {self.position}"
        return f"invalid {where}: {self.reason}"


class InvalidSamplingParams(EngineError, ValueError):
    """A sampling parameter outside its domain; ``field`` names it."""

    def __init__(self, field_name: str, value: object, reason: str) -> None:
        super().__init__(field_name, value, reason)
        self.field = field_name
        self.value = value
        self.reason = reason

    def __str__(self) -> str:
        return f"invalid SamplingParams.{self.field}={self.value!r}: {self.reason}"


class UnknownRequest(EngineError, KeyError):
    """A request id the runtime does not know (never given out, or already released)."""

    def __init__(self, request_id: Any) -> None:
        super().__init__(request_id)
        self.request_id = request_id

    def __str__(self) -> str:
        return f"unknown request id {self.request_id!r}"


class RequestRejected(EngineError, ValueError):
    """A request the solved configuration cannot serve; ``limit`` names the option."""

    def __init__(self, limit: str, value: int, needed: int) -> None:
        super().__init__(limit, value, needed)
        self.limit, self.value, self.needed = limit, value, needed

    def __str__(self) -> str:
        return f"the request needs {self.limit} >= {self.needed}, but it is {self.value}"


# ---------------------------------------------------------------------------- sizing and steps


class PoolTooSmall(EngineError, RuntimeError):
    """The KV budget cannot hold a single block; names the budget and what one needs."""

    def __init__(self, budget_bytes: int, block_bytes: int, source: str) -> None:
        super().__init__(budget_bytes, block_bytes, source)
        self.budget_bytes = budget_bytes
        self.block_bytes = block_bytes
        self.source = source

    def __str__(self) -> str:
        return (
            f"the KV pool budget of {self.budget_bytes} bytes ({self.source}) is smaller than"
            f" one block of {self.block_bytes} bytes; raise"
            " kv_cache_config.free_gpu_memory_fraction or max_tokens, or lower tokens_per_block"
        )


class UnsupportedKvDtype(EngineError, ValueError):
    """A solved KV element type the runtime's kernels do not store (INT8, NVFP4)."""

    def __init__(self, name: str, supported: tuple[str, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.supported = supported

    def __str__(self) -> str:
        return (
            f"KV cache dtype {self.name!r} is not supported by this runtime"
            f" (supported: {', '.join(self.supported)})"
        )


class PoolLayoutMismatch(EngineError, RuntimeError):
    """The storage the runtime would allocate per block differs from what the memory
    model counted for the solved configuration (an internal fault, never bad input)."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, counted: int, stored: int) -> None:
        super().__init__(counted, stored)
        self.counted = counted
        self.stored = stored

    def __str__(self) -> str:
        return (
            f"internal error: one KV block is counted as {self.counted} bytes but would be"
            f" stored in {self.stored} bytes"
        )


class RuntimeStalled(EngineError, RuntimeError):
    """Requests wait but the scheduler admitted nothing and nothing runs: no later step
    could change that, so the runtime stops instead of spinning."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, num_waiting: int, free_blocks: int) -> None:
        super().__init__(num_waiting, free_blocks)
        self.num_waiting, self.free_blocks = num_waiting, free_blocks

    def __str__(self) -> str:
        return (
            f"{self.num_waiting} requests wait but none can be admitted with"
            f" {self.free_blocks} free blocks and nothing running"
        )


# ---------------------------------------------------------------------------- scheduler


class SchedulerError(EngineError):
    """Base class of scheduler errors."""


class InvalidSchedulerConfig(SchedulerError):
    """A `SchedulerConfig` field outside what the scheduler can honour."""

    def __init__(self, field_name: str, value: object, reason: str) -> None:
        super().__init__(field_name, value, reason)
        self.field = field_name
        self.value = value
        self.reason = reason

    def __str__(self) -> str:
        return f"invalid SchedulerConfig.{self.field}={self.value!r}: {self.reason}"


class PromptTooLong(SchedulerError):
    """A request can never be scheduled: `limit_name` is the limit it exceeds."""

    def __init__(self, seq_id: int, needed: int, limit_name: str, limit: int) -> None:
        super().__init__(seq_id, needed, limit_name, limit)
        self.seq_id = seq_id
        self.needed = needed
        self.limit_name = limit_name
        self.limit = limit

    def __str__(self) -> str:
        unit = " blocks" if self.limit_name == "num_blocks" else " tokens"
        return (
            f"request {self.seq_id} needs {self.needed}{unit} but {self.limit_name} is"
            f" {self.limit}, so it can never be scheduled"
        )


class MissingSampledToken(SchedulerError):
    """`on_step_done` got no token for a sequence whose step reached its last token."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, seq_id: int) -> None:
        super().__init__(seq_id)
        self.seq_id = seq_id

    def __str__(self) -> str:
        return f"sequence {self.seq_id} finished its step but no sampled token was given for it"


class DuplicateSequence(SchedulerError):
    """A sequence added twice (a fault of the caller's bookkeeping)."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, seq_id: int) -> None:
        super().__init__(seq_id)
        self.seq_id = seq_id

    def __str__(self) -> str:
        return f"sequence {self.seq_id} is already queued or running"


class UnknownSequence(SchedulerError):
    """An operation on a sequence the scheduler does not hold (a caller's fault)."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, seq_id: int, operation: str) -> None:
        super().__init__(seq_id, operation)
        self.seq_id = seq_id
        self.operation = operation

    def __str__(self) -> str:
        return f"cannot {self.operation} sequence {self.seq_id}: the scheduler does not hold it"
