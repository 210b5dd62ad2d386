"""Limits and sizing of one service instance."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from constraints.limits import MAX_BODY_BYTES, MAX_CLAIMS

REASON_CHECKS = 400  # feasibility checks spent on dropped claims' reasons per request


@dataclass
class ServiceSettings:
    """Limits and sizing of one service instance."""

    max_body_bytes: int = MAX_BODY_BYTES  # 413 over it (constraints.limits)
    max_claims: int = MAX_CLAIMS  # 422 too_many_claims over it; arbitrate() refuses more
    # than constraints.limits.MAX_CLAIMS whatever this says
    default_time_limit_s: float = 10.0
    max_time_limit_s: float = 30.0
    reason_checks: int = REASON_CHECKS  # feasibility checks for drop reasons
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    max_queue: int = 64  # requests waiting for a solver process before 503 queue_full
    retry_after_s: int = 1  # what a 503 asks the client to wait

    def grace_s(self, time_limit_s: float) -> float:
        """How long past its time limit a request may run before its worker is stopped."""
        return 2.0 + 0.5 * time_limit_s

    def time_limit(self, requested: float | None) -> float:
        """The time limit a request gets: what it asks for, capped by the service's."""
        return min(requested or self.default_time_limit_s, self.max_time_limit_s)
