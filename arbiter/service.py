"""The HTTP service: arbitration over HTTP with FastAPI and uvicorn.

    arbiter serve --host 127.0.0.1 --port 8000

Endpoints: POST /v1/arbitrate, POST /v1/explain, POST /v1/check, GET /v1/schema, GET /v1/rules, GET /healthz, GET /metrics
(Prometheus text). Solving runs in a process pool sized to the cores, off the event loop,
so a slow solve never delays a health check. Limits answer with 4xx JSON errors that carry
a stable `error` code: body size (413 body_too_large), number of claims (422
too_many_claims), malformed JSON (400 malformed_json), wrong shapes (422
invalid_request), bad claims (422 invalid_claim, naming claim, path and domain), and a
solve that finds nothing within the time limit (408 time_limit). A time limit that cuts
the search after a configuration was found returns it with `time_limited: true`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import service_jobs
from .service_models import (
    ArbitrateRequest,
    CheckOut,
    CheckRequest,
    ConflictResponse,
    ErrorResponse,
    ExplainOut,
    ExplainRequest,
    OptionOut,
    ResolutionOut,
    RuleOut,
)


@dataclass
class ServiceSettings:
    """Limits and sizing of one service instance."""

    max_body_bytes: int = 1 << 20
    max_claims: int = 2000
    default_time_limit_s: float = 10.0
    max_time_limit_s: float = 30.0
    reason_budget_s: float = 1.0  # seconds spent explaining dropped claims per request
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


class _BodyTooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: refuse bodies over the limit, by header or by counting bytes."""

    def __init__(self, app: Callable[..., Any], limit: int):
        self.app = app
        self.limit = limit

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def counted() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        response = _error(
            413, "body_too_large", f"request body exceeds {self.limit} bytes", value=self.limit
        )
        await response(scope, receive, send)


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "arbiter_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "status"],
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


# error responses of the endpoints that solve (OpenAPI documents each)
SOLVE_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {"model": ConflictResponse},
    400: {"model": ErrorResponse},
    408: {"model": ErrorResponse},
    413: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
}


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """A service instance; `uvicorn arbiter.service:app` serves one with default settings."""
    settings = settings or ServiceSettings()
    metrics = _Metrics()
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = ProcessPoolExecutor(
            max_workers=settings.workers, mp_context=multiprocessing.get_context("spawn")
        )
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(pool, service_jobs.warm_up) for _ in range(settings.workers))
        )
        state["pool"] = pool
        yield
        pool.shutdown(cancel_futures=True)

    app = FastAPI(
        title="arbiter",
        version="0.1.0",
        description="Arbitration of LLM serving-engine configurations: claims in, a solved configuration or an explained conflict out.",
        lifespan=lifespan,
    )

    @app.middleware("http")
    async def count(request: Request, call_next: Callable[..., Any]) -> Any:
        response = await call_next(request)
        route = request.scope.get("route")
        endpoint = getattr(route, "path", "unmatched")
        metrics.requests.labels(endpoint=endpoint, status=str(response.status_code)).inc()
        return response

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "the request body is not valid JSON")
        details = [
            {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": e.get("msg", "")}
            for e in errors
        ]
        first = details[0] if details else {"loc": "body", "msg": "invalid"}
        return _error(422, "invalid_request", f"{first['loc']}: {first['msg']}", details=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "not_found" if exc.status_code == 404 else "http_error"
        return _error(exc.status_code, code, str(exc.detail))

    async def run_job(job: Callable[..., Any], *args: Any) -> tuple[int, dict[str, Any]]:
        loop = asyncio.get_running_loop()
        start = time.perf_counter()
        status, body = await loop.run_in_executor(state["pool"], job, *args)
        metrics.solve_seconds.observe(time.perf_counter() - start)
        if status == 409:
            metrics.conflicts.inc()
        return status, body

    async def dispatch(job: Callable[..., Any], body: Any, extra: dict[str, Any]) -> JSONResponse:
        """Check the claim count, then run `job(claims, options)` in the pool."""
        if len(body.claims) > settings.max_claims:
            message = f"{len(body.claims)} claims exceed the limit of {settings.max_claims}"
            return _error(422, "too_many_claims", message, value=len(body.claims))
        claims = [c.model_dump(exclude_none=True) for c in body.claims]
        options = {**body.options.model_dump(), **extra}
        status, payload = await run_job(job, claims, options)
        return JSONResponse(payload, status_code=status)

    def time_limit(requested: float | None) -> float:
        return min(requested or settings.default_time_limit_s, settings.max_time_limit_s)

    @app.post(
        "/v1/arbitrate",
        response_model=ResolutionOut,
        responses=SOLVE_RESPONSES,
        summary="Solve claims into a configuration",
    )
    async def arbitrate_endpoint(body: ArbitrateRequest) -> Any:
        extra = {
            "time_limit_s": time_limit(body.options.time_limit_s),
            "reason_budget_s": settings.reason_budget_s,
        }
        return await dispatch(service_jobs.solve_job, body, extra)

    @app.post(
        "/v1/explain",
        response_model=ExplainOut,
        responses={
            400: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            422: {"model": ErrorResponse},
        },
        summary="Explain claims: every conflict, verified fix and dropped claim",
    )
    async def explain_endpoint(body: ExplainRequest) -> Any:
        extra = {"time_budget_s": time_limit(body.options.time_budget_s)}
        return await dispatch(service_jobs.explain_job, body, extra)

    @app.post(
        "/v1/check",
        response_model=CheckOut,
        responses=SOLVE_RESPONSES,
        summary="Lint a TensorRT-LLM or MLC configuration",
    )
    async def check_endpoint(body: CheckRequest) -> Any:
        request = body.model_dump(exclude={"time_limit_s"})
        options = {
            "time_limit_s": time_limit(body.time_limit_s),
            "reason_budget_s": settings.reason_budget_s,
        }
        status, payload = await run_job(service_jobs.check_job, request, options)
        return JSONResponse(payload, status_code=status)

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

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def metrics_endpoint() -> PlainTextResponse:
        return PlainTextResponse(
            generate_latest(metrics.registry).decode(), media_type=CONTENT_TYPE_LATEST
        )

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


__all__ = ["BodyLimit", "ServiceSettings", "create_app", "serve"]
