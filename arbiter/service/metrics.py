"""Prometheus metrics of one service instance."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    """The service's Prometheus registry: responses by endpoint, status and error code;
    conflicts; solve times; solver processes by state."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "arbiter_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.responses = Counter(
            "arbiter_responses",
            "HTTP responses by endpoint, status and error code (empty code: success)",
            ["endpoint", "status", "code"],
            registry=self.registry,
        )
        self.conflicts = Counter(
            "arbiter_conflicts", "Arbitrations that ended in a conflict", registry=self.registry
        )
        self.solve_seconds = Histogram(
            "arbiter_solve_seconds",
            "Wall time of arbitration jobs",
            buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        self.workers = Gauge(
            "arbiter_workers",
            "Solver processes by state",
            ["state"],
            registry=self.registry,
        )
        self.replaced = Gauge(
            "arbiter_workers_replaced",
            "Solver processes replaced since start (died, timed out or cancelled)",
            registry=self.registry,
        )

    def count(self, endpoint: str, status: int, code: str) -> None:
        self.requests.labels(endpoint=endpoint, status=str(status)).inc()
        self.responses.labels(endpoint=endpoint, status=str(status), code=code).inc()
