"""Typed errors of the tensor-parallel runtime; each names the culprit and the limit."""

from __future__ import annotations

from typing import ClassVar

from ..errors import EngineError


class ParallelError(EngineError, RuntimeError):
    """Base class of the tensor-parallel runtime's errors."""


class TooManyRanks(ParallelError):
    """``tensor_parallel_size`` asks for more ranks than the device kind offers."""

    def __init__(self, requested: int, available: int, device: str) -> None:
        super().__init__(requested, available, device)
        self.requested, self.available, self.device = requested, available, device

    def __str__(self) -> str:
        unit = "CUDA devices" if self.device == "cuda" else "CPU ranks"
        return (
            f"parallel_config.tensor_parallel_size={self.requested} needs {self.requested}"
            f" {unit}, but {self.available} are available"
        )


class PipelineParallelUnsupported(ParallelError):
    """The runtime refuses pipeline parallelism (stages over ranks are not implemented)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size

    def __str__(self) -> str:
        return (
            f"parallel_config.pipeline_parallel_size={self.size}: this runtime does not split"
            " layers into pipeline stages; use tensor_parallel_size for several ranks"
            " (pipeline_parallel_size must be 1)"
        )


class ShardError(ParallelError):
    """The model's shape cannot be split over the ranks; ``dimension`` names what."""

    def __init__(self, dimension: str, size: int, ranks: int) -> None:
        super().__init__(dimension, size, ranks)
        self.dimension, self.size, self.ranks = dimension, size, ranks

    def __str__(self) -> str:
        return f"{self.dimension}={self.size} cannot be split over {self.ranks} ranks"


class RankFailed(ParallelError):
    """A rank process died or raised; every other rank has been stopped."""

    exit_code: ClassVar[int] = 3
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, rank: int, exitcode: int | None, detail: str = "") -> None:
        super().__init__(rank, exitcode, detail)
        self.rank, self.exitcode, self.detail = rank, exitcode, detail

    def __str__(self) -> str:
        how = f"exited with code {self.exitcode}" if self.exitcode is not None else "failed"
        text = f"tensor-parallel rank {self.rank} {how}; all ranks were stopped"
        return f"{text}: {self.detail}" if self.detail else text
