"""What the routes of one service instance share: settings, metrics and the solver pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from .metrics import Metrics
from .pool import WorkerPool
from .settings import ServiceSettings


@dataclass
class ServiceState:
    """One instance's settings and metrics, and its solver pool once started."""

    settings: ServiceSettings
    metrics: Metrics
    pool: WorkerPool | None = None

    def running_pool(self) -> WorkerPool:
        if self.pool is None:  # the lifespan starts it before any request is served
            raise RuntimeError("the solver pool has not started")
        return self.pool


async def service_state(request: Request) -> ServiceState:
    """The state of the instance serving `request` (a FastAPI dependency; `async`, so
    FastAPI calls it on the event loop rather than handing it to a thread)."""
    state: ServiceState = request.app.state.service
    return state


# a route parameter `state: State` receives the state of the instance serving it
State = Annotated[ServiceState, Depends(service_state)]
