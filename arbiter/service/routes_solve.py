"""The routes that solve: POST /v1/arbitrate, /v1/explain, /v1/check and /v1/compare.

Each request runs in a supervised solver process (`pool.WorkerPool`) under its deadline:
its time limit plus a grace period, counted from arrival.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .guard import REFUSED
from .models import (
    ArbitrateRequest,
    CheckOut,
    CheckRequest,
    CompareOut,
    CompareRequest,
    ConflictResponse,
    ErrorResponse,
    ExplainOut,
    ExplainRequest,
    ResolutionOut,
)
from .pool import Cancelled, QueueFull, QueueTimeout, WorkerLost
from .responses import ERROR_HEADER, error_response, unavailable
from .state import ServiceState, State

# error responses of the endpoints that solve (OpenAPI documents each)
SOLVE_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {"model": ConflictResponse},
    400: {"model": ErrorResponse},
    408: {"model": ErrorResponse},
    413: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
    503: {"model": ErrorResponse, "description": "Busy or a solver process was lost: retry"},
}

# /v1/check answers the `arbiter.verdict` report whatever the verdict (a reject: 409,
# bad input: 422 with every problem an `input_errors` entry)
CHECK_RESPONSES: dict[int | str, dict[str, Any]] = {
    **SOLVE_RESPONSES,
    409: {"model": CheckOut, "description": "A reject: the conflicts, fixes and rules"},
    422: {"model": CheckOut, "description": "Bad input: one `input_errors` entry a problem"},
}

router = APIRouter()

# wall milliseconds: waiting for a solver process, the round trip to it, and the job's
# phases in it (solve, report, encode)
TIMING_HEADER = "server-timing"


def server_timing(timing: dict[str, float]) -> str:
    """The `Server-Timing` header's value: `queue;dur=0.1, worker;dur=25.3, ...`."""
    return ", ".join(f"{name};dur={ms:.2f}" for name, ms in timing.items())


async def client_gone(request: Request) -> None:
    """Return when the client hangs up (the body has been read: the next message the
    server has for this request is its disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def run_job(
    state: ServiceState,
    job: str,
    args: tuple[Any, ...],
    request: Request,
    started: float,
    time_limit_s: float,
) -> Response:
    """Run a job in a solver process under the request's deadline (its time limit plus
    a grace period, counted from arrival); answer in JSON whatever happens."""
    settings = state.settings
    deadline = started + time_limit_s + settings.grace_s(time_limit_s)
    # reasons stop, said in the answer, well before the deadline would stop the work
    args[-1]["reasons_until"] = deadline - settings.grace_s(time_limit_s) / 2
    t0 = time.perf_counter()
    gone = asyncio.ensure_future(client_gone(request))
    try:
        kind, result, timing = await state.running_pool().run(
            job, args, deadline=deadline, disconnected=gone
        )
    except (QueueFull, QueueTimeout) as exc:
        return unavailable(exc.code, str(exc), settings.retry_after_s)
    except WorkerLost as exc:
        return unavailable(
            "worker_lost",
            f"{exc}; it has been replaced, retry the request",
            settings.retry_after_s,
        )
    except Cancelled as exc:
        if exc.why == "client":
            return error_response(
                499, "client_closed", "the client went away; the work was stopped"
            )
        return error_response(
            408,
            "time_limit",
            f"the request ran past its deadline ({time_limit_s:g} s time limit plus "
            f"{settings.grace_s(time_limit_s):g} s grace); its work was stopped",
            value=time_limit_s,
        )
    finally:
        gone.cancel()
    state.metrics.solve_seconds.observe(time.perf_counter() - t0)
    if kind != "ok":  # the job runner itself failed: a fault of ours
        return error_response(500, "internal", f"internal error: {result}")
    status, text = result
    if status == 409:
        state.metrics.conflicts.inc()
    headers = {TIMING_HEADER: server_timing(timing)}
    if status >= 400:
        headers[ERROR_HEADER] = json.loads(text).get("error", "error")
    return Response(text, status_code=status, media_type="application/json", headers=headers)


async def dispatch(
    state: ServiceState,
    job: str,
    body: Any,
    extra: dict[str, Any],
    request: Request,
    limit: float,
) -> Response:
    """Check the claim count, then run `job(claims, options)` in a solver process."""
    started = time.monotonic()
    max_claims = state.settings.max_claims
    if len(body.claims) > max_claims:  # before any claim is read or compiled
        count = len(body.claims)
        message = f"claims: the request has {count} claims, over the limit of {max_claims}"
        return error_response(
            422,
            "too_many_claims",
            message,
            path="claims",
            value=count,
            allowed=f"at most {max_claims} claims",
            limit=f"MAX_CLAIMS = {max_claims}",
        )
    claims = [c.model_dump(exclude_none=True) for c in body.claims]
    options = {**body.options.model_dump(), **extra}
    return await run_job(state, job, (claims, options), request, started, limit)


@router.post(
    "/v1/arbitrate",
    response_model=ResolutionOut,
    responses=SOLVE_RESPONSES,
    summary="Solve claims into a configuration",
)
async def arbitrate_endpoint(body: ArbitrateRequest, request: Request, state: State) -> Any:
    limit = state.settings.time_limit(body.options.time_limit_s)
    extra = {"time_limit_s": limit, "reason_checks": state.settings.reason_checks}
    return await dispatch(state, "solve", body, extra, request, limit)


@router.post(
    "/v1/explain",
    response_model=ExplainOut,
    responses=SOLVE_RESPONSES,
    summary="Explain claims: every conflict, verified fix and dropped claim",
)
async def explain_endpoint(body: ExplainRequest, request: Request, state: State) -> Any:
    limit = state.settings.time_limit(body.options.time_budget_s)
    return await dispatch(state, "explain", body, {"time_budget_s": limit}, request, limit)


@router.post(
    "/v1/check",
    response_model=CheckOut,
    responses=CHECK_RESPONSES,
    summary="Lint an engine configuration (TensorRT-LLM, vLLM, SGLang, MLC)",
    description="The `arbiter.verdict` report (docs/schema/verdict.schema.json) that"
    " `arbiter check --format json` prints for the same input: the model from `model` or"
    " the config's own model key (a catalog name, a Hugging Face id in the local cache, a"
    " config.json mapping), the GPUs from `gpus` or the config's layout, each said in"
    " `assumptions`.",
)
async def check_endpoint(body: CheckRequest, request: Request, state: State) -> Any:
    started = time.monotonic()
    limit = state.settings.time_limit(body.time_limit_s)
    job_request = body.model_dump(exclude={"time_limit_s"})
    # the config's values the guard refused, named beside the dialect's own problems
    job_request["refused"] = list(request.scope.get(REFUSED, ()))
    options = {"time_limit_s": limit, "reason_checks": state.settings.reason_checks}
    return await run_job(state, "check", (job_request, options), request, started, limit)


@router.post(
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
async def compare_endpoint(body: CompareRequest, request: Request, state: State) -> Any:
    started = time.monotonic()
    limit = state.settings.time_limit(body.time_limit_s)
    job_request = body.model_dump(exclude={"time_limit_s"})
    return await run_job(state, "compare", (job_request, {}), request, started, limit)
