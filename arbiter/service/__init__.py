"""The HTTP service: arbitration over HTTP with FastAPI and uvicorn.

    arbiter serve --host 127.0.0.1 --port 8000

Endpoints: POST /v1/arbitrate, POST /v1/explain, POST /v1/check, POST /v1/compare,
GET /v1/schema, GET /v1/rules, GET /v1/limits (the input limits, `constraints.limits`),
GET /healthz (the solver pool's state), GET /readyz, GET /metrics
(Prometheus text, every response counted by endpoint, status and error code).

Solving runs in supervised solver processes (`pool.WorkerPool`), off the event
loop, so a slow solve never delays a health check; a process that dies is replaced and
its request answered 503 `worker_lost` with Retry-After. Every POST body passes the edge
validator (`constraints.edge`) before any route sees it. Every error is JSON with a stable
`error` code, also sent in the `x-arbiter-error` header, and every 4xx but a conflict
lists one entry per problem (`errors`: path, value, reason, suggestions, limit);
docs/service.md lists each limit with its code and status. A request's deadline is its time
limit plus a grace period counted from arrival: past it the work is stopped (408
`time_limit`, or 503 `queue_timeout` if it never started); a client that hangs up has its
work stopped too.

Layout: `app` builds an instance from three routers (`routes_solve`, `routes_info`,
`routes_health`) behind the `guard` middleware; `jobs` is the work a solver process runs;
`models` the request and response shapes (the OpenAPI schema); errors become answers
through `arbiter.application.outcome`, as on the command line.
"""

from __future__ import annotations

from typing import Any

from .app import create_app, serve
from .guard import Guard
from .settings import ServiceSettings


def __getattr__(name: str) -> Any:
    if name == "app":  # `uvicorn arbiter.service:app`
        return create_app()
    raise AttributeError(name)


__all__ = ["Guard", "ServiceSettings", "create_app", "serve"]
