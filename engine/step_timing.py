"""Where a runtime step's time goes: scheduling, the model, attention, sampling.

``StepTimes`` accumulates seconds per phase over many steps (wall clock unless told). The runtime
times scheduling, the model forward (attention included) and sampling; the attention
backend adds the time of its attention calls (store included) when a timer is attached
to it. On CUDA every phase boundary synchronises the device, so time steps only when asked:
``Runtime(..., time_steps=True)`` or ``runtime.timer = StepTimes()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

PHASES = ("schedule", "inputs", "model", "attention", "sampling", "bookkeeping")


@dataclass
class StepTimes:
    """Seconds per phase and the number of steps they cover."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    steps: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    # The clock: wall time by default; ``time.process_time`` on a CPU other jobs share.
    clock: Callable[[], float] = time.perf_counter

    @contextmanager
    def phase(self, name: str):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        start = self.clock()
        try:
            yield
        finally:
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            self.seconds[name] += self.clock() - start

    def add(self, other: StepTimes) -> None:
        for name, value in other.seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + value
        self.steps += other.steps

    @property
    def total(self) -> float:
        """Wall time of the steps (attention is part of the model, not added twice)."""
        return sum(v for k, v in self.seconds.items() if k != "attention")

    def table(self) -> str:
        """One line per phase: milliseconds per step and share of the step."""
        total = self.total or 1e-12
        steps = max(self.steps, 1)
        lines = [f"{'phase':>12} {'ms/step':>8} {'share':>6}"]
        for name in PHASES:
            value = self.seconds.get(name, 0.0)
            label = "  attention" if name == "attention" else name
            lines.append(f"{label:>12} {1e3 * value / steps:>8.3f} {value / total:>6.1%}")
        lines.append(f"{'step':>12} {1e3 * total / steps:>8.3f} {'':>6} ({self.steps} steps)")
        return "\n".join(lines)


@contextmanager
def timed(timer: StepTimes | None, name: str) -> Iterator[None]:
    """``timer.phase(name)``, or nothing when no timer is attached."""
    if timer is None:
        yield
    else:
        with timer.phase(name):
            yield
