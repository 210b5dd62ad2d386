"""The HTTP service: arbitration over HTTP with FastAPI and uvicorn.

    arbiter serve --host 127.0.0.1 --port 8000

Endpoints: POST /v1/arbitrate, POST /v1/explain, POST /v1/check, POST /v1/compare,
GET /v1/schema, GET /v1/rules, GET /healthz (the solver pool's state), GET /readyz, GET /metrics
(Prometheus text, every response counted by endpoint, status and error code).

Solving runs in supervised solver processes (`service_pool.WorkerPool`), off the event
loop, so a slow solve never delays a health check; a process that dies is replaced and
its request answered 503 `worker_lost` with Retry-After. Every POST body passes the edge
validator (`constraints.edge`) before any route sees it. Every error is JSON with a stable
`error` code, also sent in the `x-arbiter-error` header; README "Limits and failure
behaviour" lists each limit with its code and status. A request's deadline is its time
limit plus a grace period counted from arrival: past it the work is stopped (408
`time_limit`, or 503 `queue_timeout` if it never started); a client that hangs up has its
work stopped too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from constraints.edge import EdgeError, parse_json, safe_dumps

from . import service_jobs
from .service_models import (
    ArbitrateRequest,
    CheckOut,
    CheckRequest,
    CompareOut,
    CompareRequest,
    ConflictResponse,
    ErrorResponse,
    ExplainOut,
    ExplainRequest,
    OptionOut,
    ResolutionOut,
    RuleOut,
)
from .service_pool import Cancelled, QueueFull, QueueTimeout, WorkerLost, WorkerPool


@dataclass
class ServiceSettings:
    """Limits and sizing of one service instance."""

    max_body_bytes: int = 1 << 20
    max_claims: int = 2000
    default_time_limit_s: float = 10.0
    max_time_limit_s: float = 30.0
    reason_checks: int = service_jobs.REASON_CHECKS  # feasibility checks for drop reasons
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    max_queue: int = 64  # requests waiting for a solver process before 503 queue_full
    retry_after_s: int = 1  # what a 503 asks the client to wait

    def grace_s(self, time_limit_s: float) -> float:
        """How long past its time limit a request may run before its worker is stopped."""
        return 2.0 + 0.5 * time_limit_s


ERROR_HEADER = "x-arbiter-error"  # every error response names its code here too


def _error(http_status: int, code: str, message: str, **extra: Any) -> Response:
    headers = {ERROR_HEADER: code, **extra.pop("headers", {})}
    body = {"error": code, "message": message, **extra}
    return Response(
        safe_dumps(body), status_code=http_status, media_type="application/json", headers=headers
    )


def _unavailable(code: str, message: str, retry_after: int) -> Response:
    return _error(
        503,
        code,
        message,
        retry_after=retry_after,
        headers={"retry-after": str(retry_after)},
    )


class _Refused(Exception):
    def __init__(self, response: Response):
        self.response = response


class Guard:
    """ASGI middleware around the whole app: counts every response by endpoint, status and
    error code; refuses bodies over the size limit (by header or by counting bytes); runs
    every POST body through the edge validator (strict JSON: finite numbers, bounded
    integers and depth, valid Unicode) before any route sees it; turns a fault of ours
    into a 500 JSON answer that is counted like any other."""

    def __init__(self, app: Callable[..., Any], limit: int, metrics: _Metrics, paths: set[str]):
        self.app = app
        self.limit = limit
        self.metrics = metrics
        self.paths = paths

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in self.paths else "unmatched"
        seen: dict[str, Any] = {"status": None, "code": ""}

        async def counted_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                for key, value in message.get("headers") or ():
                    if key.decode("latin-1").lower() == ERROR_HEADER:
                        seen["code"] = value.decode("latin-1")
            await send(message)

        try:
            if scope.get("method") == "POST":
                receive = await self._checked_body(scope, receive)
            await self.app(scope, receive, counted_send)
        except _Refused as refused:
            await refused.response(scope, receive, counted_send)
        except Exception as exc:  # noqa: BLE001 - a fault of ours, answered and counted
            if seen["status"] is None:
                message = f"internal error: {type(exc).__name__}"
                await _error(500, "internal", message)(scope, receive, counted_send)
            else:  # the response had started: nothing more can be said to this client
                seen["status"] = 500
        self.metrics.count(endpoint, seen["status"] or 500, seen["code"])

    async def _checked_body(
        self, scope: dict[str, Any], receive: Callable[..., Any]
    ) -> Callable[..., Any]:
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            raise _Refused(self._too_large())
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Refused(_error(499, "client_closed", "the client went away"))
            size += len(message.get("body", b""))
            if size > self.limit:
                raise _Refused(self._too_large())
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if body:
            try:
                parse_json(body, "body")
            except EdgeError as exc:
                status, code = (
                    (400, "malformed_json") if "UTF-8" in exc.reason else (422, "invalid_value")
                )
                raise _Refused(
                    _error(
                        status,
                        code,
                        str(exc),
                        where=exc.where or None,
                        value=exc.value,
                        limit=exc.limit or None,
                    )
                ) from None
            except ValueError as exc:
                raise _Refused(
                    _error(400, "malformed_json", f"the request body is not valid JSON: {exc}")
                ) from None
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _too_large(self) -> Response:
        return _error(
            413, "body_too_large", f"request body exceeds {self.limit} bytes", value=self.limit
        )


class _Metrics:
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


# error responses of the endpoints that solve (OpenAPI documents each)
SOLVE_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {"model": ConflictResponse},
    400: {"model": ErrorResponse},
    408: {"model": ErrorResponse},
    413: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    503: {"model": ErrorResponse, "description": "Busy or a solver process was lost: retry"},
}


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """A service instance; `uvicorn arbiter.service:app` serves one with default settings."""
    settings = settings or ServiceSettings()
    metrics = _Metrics()
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = WorkerPool(settings.workers, settings.max_queue)
        await pool.start()
        state["pool"] = pool
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(
        title="arbiter",
        version="0.1.0",
        description="Arbitration of LLM serving-engine configurations: claims in, a solved configuration or an explained conflict out.",
        lifespan=lifespan,
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "the request body is not valid JSON")
        details = [
            {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": str(e.get("msg", ""))}
            for e in errors
        ]
        first = details[0] if details else {"loc": "body", "msg": "invalid"}
        return _error(422, "invalid_request", f"{first['loc']}: {first['msg']}", details=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, code, str(exc.detail))

    def pool() -> WorkerPool:
        return state["pool"]

    async def run_job(
        job: str, args: tuple[Any, ...], request: Request, started: float, time_limit_s: float
    ) -> Response:
        """Run a job in a solver process under the request's deadline (its time limit plus
        a grace period, counted from arrival); answer in JSON whatever happens."""
        deadline = started + time_limit_s + settings.grace_s(time_limit_s)
        # reasons stop, said in the answer, well before the deadline would stop the work
        args[-1]["reasons_until"] = deadline - settings.grace_s(time_limit_s) / 2
        t0 = time.perf_counter()
        try:
            kind, result = await pool().run(
                job, args, deadline=deadline, disconnected=request.is_disconnected
            )
        except (QueueFull, QueueTimeout) as exc:
            return _unavailable(exc.code, str(exc), settings.retry_after_s)
        except WorkerLost as exc:
            return _unavailable(
                "worker_lost",
                f"{exc}; it has been replaced, retry the request",
                settings.retry_after_s,
            )
        except Cancelled as exc:
            if exc.why == "client":
                return _error(499, "client_closed", "the client went away; the work was stopped")
            return _error(
                408,
                "time_limit",
                f"the request ran past its deadline ({time_limit_s:g} s time limit plus "
                f"{settings.grace_s(time_limit_s):g} s grace); its work was stopped",
                value=time_limit_s,
            )
        metrics.solve_seconds.observe(time.perf_counter() - t0)
        if kind != "ok":  # the job runner itself failed: a fault of ours
            return _error(500, "internal", f"internal error: {result}")
        status, text = result
        if status == 409:
            metrics.conflicts.inc()
        headers = {}
        if status >= 400:
            code = json.loads(text).get("error", "error")
            headers[ERROR_HEADER] = code
        return Response(text, status_code=status, media_type="application/json", headers=headers)

    def time_limit(requested: float | None) -> float:
        return min(requested or settings.default_time_limit_s, settings.max_time_limit_s)

    async def dispatch(
        job: str, body: Any, extra: dict[str, Any], request: Request, limit: float
    ) -> Response:
        """Check the claim count, then run `job(claims, options)` in a solver process."""
        started = time.monotonic()
        if len(body.claims) > settings.max_claims:
            message = f"{len(body.claims)} claims exceed the limit of {settings.max_claims}"
            return _error(422, "too_many_claims", message, value=len(body.claims))
        claims = [c.model_dump(exclude_none=True) for c in body.claims]
        options = {**body.options.model_dump(), **extra}
        return await run_job(job, (claims, options), request, started, limit)

    @app.post(
        "/v1/arbitrate",
        response_model=ResolutionOut,
        responses=SOLVE_RESPONSES,
        summary="Solve claims into a configuration",
    )
    async def arbitrate_endpoint(body: ArbitrateRequest, request: Request) -> Any:
        limit = time_limit(body.options.time_limit_s)
        extra = {"time_limit_s": limit, "reason_checks": settings.reason_checks}
        return await dispatch("solve", body, extra, request, limit)

    @app.post(
        "/v1/explain",
        response_model=ExplainOut,
        responses=SOLVE_RESPONSES,
        summary="Explain claims: every conflict, verified fix and dropped claim",
    )
    async def explain_endpoint(body: ExplainRequest, request: Request) -> Any:
        limit = time_limit(body.options.time_budget_s)
        extra = {"time_budget_s": limit}
        return await dispatch("explain", body, extra, request, limit)

    @app.post(
        "/v1/check",
        response_model=CheckOut,
        responses=SOLVE_RESPONSES,
        summary="Lint a TensorRT-LLM or MLC configuration",
    )
    async def check_endpoint(body: CheckRequest, request: Request) -> Any:
        started = time.monotonic()
        limit = time_limit(body.time_limit_s)
        job_request = body.model_dump(exclude={"time_limit_s"})
        options = {"time_limit_s": limit, "reason_checks": settings.reason_checks}
        return await run_job("check", (job_request, options), request, started, limit)

    @app.post(
        "/v1/compare",
        response_model=CompareOut,
        responses=SOLVE_RESPONSES,
        summary="One engine-neutral intent checked against TensorRT-LLM, vLLM, SGLang and MLC",
        description="Maps the intent's features onto each engine's own options, runs each "
        "engine's checker and answers side by side: holds, holds with changes (soft wishes "
        "dropped with reasons, engine adjustments) or conflicts (the minimal conflict and its "
        "rules), the native config and the KV capacity each engine gives. A conflict is data "
        "(200); a bad intent is 422 naming every problem. An engine whose dialect is not "
        "installed is reported `unavailable`.",
    )
    async def compare_endpoint(body: CompareRequest, request: Request) -> Any:
        started = time.monotonic()
        limit = time_limit(body.time_limit_s)
        job_request = body.model_dump(exclude={"time_limit_s"})
        return await run_job("compare", (job_request, {}), request, started, limit)

    @app.get(
        "/v1/schema",
        response_model=list[OptionOut],
        summary="Options with domains, defaults and descriptions",
    )
    async def schema(
        path: str | None = Query(None, description="A dotted path or a section name"),
    ) -> Any:
        from constraints import UnknownPath, lookup, options

        specs = list(options())
        if path:
            if "." in path:
                try:
                    specs = [lookup(path)]
                except UnknownPath as exc:
                    return _error(
                        404, "not_found", str(exc), path=path, suggestions=list(exc.suggestions)
                    )
            else:
                specs = [s for s in specs if s.section == path]
                if not specs:
                    return _error(404, "not_found", f"unknown section {path!r}", path=path)
        return [
            {
                "path": s.path,
                "domain": s.domain.to_json(),
                "default": s.default,
                "fact": s.fact,
                "description": s.description,
            }
            for s in specs
        ]

    @app.get("/v1/rules", response_model=list[RuleOut], summary="The shipped rules")
    async def rules(
        grep: str | None = Query(
            None, description="Case-insensitive filter on id, text, source and scope"
        ),
        profile: str | None = Query(None, description="Only the rules in scope of this profile"),
    ) -> Any:
        # the same listing as `arbiter rules`: hard and default rules
        from constraints.errors import SchemaError
        from constraints.rules import find_rules

        try:
            return [r.to_json() for r in find_rules(profile, grep)]
        except SchemaError as exc:
            return _error(400, "invalid_input", str(exc), value=profile)

    @app.get("/healthz", summary="Liveness and the solver pool's real state")
    async def healthz() -> Response:
        snap = pool().snapshot()
        if snap["alive"] == 0:
            status = "down"
        elif snap["alive"] < snap["size"]:
            status = "degraded"
        else:
            status = "ok"
        body = {"status": status, "workers": snap}
        if status == "down":
            message = "no solver process is alive; replacements are starting"
            return _error(503, "no_workers", message, status="down", workers=snap)
        return Response(safe_dumps(body), media_type="application/json")

    @app.get("/readyz", summary="Readiness: can a solver process take work now?")
    async def readyz() -> Response:
        snap = pool().snapshot()
        if not pool().ready:
            why = "no solver process is alive" if snap["alive"] == 0 else "the queue is full"
            return _unavailable("not_ready", why, settings.retry_after_s)
        return Response(safe_dumps({"ready": True, "workers": snap}), media_type="application/json")

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def metrics_endpoint() -> PlainTextResponse:
        snap = pool().snapshot()
        for name in ("alive", "busy", "idle", "starting", "waiting"):
            metrics.workers.labels(state=name).set(snap[name])
        metrics.replaced.set(snap["replaced"])
        return PlainTextResponse(
            generate_latest(metrics.registry).decode(), media_type=CONTENT_TYPE_LATEST
        )

    paths = {r.path for r in app.routes if hasattr(r, "path")}
    app.add_middleware(Guard, limit=settings.max_body_bytes, metrics=metrics, paths=paths)
    app.state.settings = settings
    app.state.jobs = state
    return app


def serve(
    host: str = "127.0.0.1", port: int = 8000, settings: ServiceSettings | None = None
) -> None:
    """Run the service with uvicorn (blocks)."""
    import uvicorn

    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")


def __getattr__(name: str) -> Any:
    if name == "app":  # `uvicorn arbiter.service:app`
        return create_app()
    raise AttributeError(name)


__all__ = ["Guard", "ServiceSettings", "create_app", "serve"]
