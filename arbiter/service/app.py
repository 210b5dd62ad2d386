"""`create_app`: one service instance, its routers, error handlers and middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..error_entries import entry
from . import routes_health, routes_info, routes_plan, routes_solve
from .docs import install_offline_docs
from .guard import Guard
from .metrics import Metrics
from .pool import WorkerPool
from .responses import error_response, input_refusal
from .settings import ServiceSettings
from .state import ServiceState

DESCRIPTION = (
    "Arbitration of LLM serving-engine configurations: claims in, a solved configuration"
    " or an explained conflict out."
)


async def invalid_request(request: Request, exc: Exception) -> Response:
    """A body that does not match the request model: 400 for broken JSON, else 422."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    if any(e.get("type") == "json_invalid" for e in errors):
        reason = "the request body is not valid JSON"
        problem = entry("body", reason, allowed="a JSON object (Content-Type: application/json)")
        return input_refusal(request.url.path, 400, "malformed_json", reason, [problem])
    details = [
        {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": str(e.get("msg", ""))}
        for e in errors
    ]
    first = details[0] if details else {"loc": "body", "msg": "invalid"}
    problems = [
        entry(
            _body_path(e.get("loc", ())),
            str(e.get("msg", "")),
            value=e.get("input"),
            allowed=_expected(e),
        )
        for e in errors
    ] or [entry("body", "invalid")]
    # /v1/check answers the verdict report, its errors too (`input_refusal`)
    return input_refusal(
        request.url.path,
        422,
        "invalid_request",
        f"{first['loc']}: {first['msg']}",
        problems,
        details=details,
    )


def _body_path(loc: Any) -> str:
    """pydantic's location (`("body", "claims", 0, "kind")`) as a path in the body
    (`claims[0].kind`)."""
    out = ""
    for part in tuple(loc)[1:] if tuple(loc)[:1] == ("body",) else tuple(loc):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _expected(error: Any) -> str | None:
    """What pydantic expected, where its error says (a Literal's choices, a bound)."""
    ctx = error.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    for key, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if key in ctx:
            return f"{word} {ctx[key]}"
    kind = str(error.get("type", ""))
    return {"dict_type": "an object", "list_type": "an array", "string_type": "a string",
            "int_type": "an integer", "float_type": "a number", "bool_type": "a boolean",
            }.get(kind)  # fmt: skip


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown route, wrong method) in the service's JSON shape."""
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 500
    detail = exc.detail if isinstance(exc, StarletteHTTPException) else str(exc)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    return error_response(status, code, str(detail))


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """A service instance; `uvicorn arbiter.service:app` serves one with default settings."""
    state = ServiceState(settings or ServiceSettings(), Metrics())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = WorkerPool(state.settings.workers, state.settings.max_queue)
        await pool.start()
        state.pool = pool
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(
        title="arbiter",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc come from install_offline_docs, without a CDN
        redoc_url=None,
    )
    install_offline_docs(app)
    app.state.service = state
    app.state.settings = state.settings
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    routers = (routes_solve.router, routes_info.router, routes_health.router, routes_plan.router)
    for router in routers:
        app.include_router(router)
    # the endpoints metrics are counted by (newer FastAPI lists included routers as one entry)
    routes = [*app.routes, *(r for router in routers for r in router.routes)]
    paths = {getattr(r, "path", "") for r in routes} - {""}
    app.add_middleware(
        Guard, limit=state.settings.max_body_bytes, metrics=state.metrics, paths=paths
    )
    return app


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    settings: ServiceSettings | None = None,
    *,
    access_log: bool = False,
) -> None:
    """Run the service with uvicorn (blocks): uvloop's event loop and httptools' HTTP
    parser where they are installed (both are dependencies; uvicorn's pure-Python h11
    and asyncio's own loop otherwise). `access_log`: one line per request on stderr
    (uvicorn's access log, which logs at INFO, so uvicorn's own start-up lines come too)."""
    import uvicorn  # only the `serve` command needs the server

    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        loop="auto",
        http="auto",
    )
