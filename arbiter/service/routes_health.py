"""The routes that report on the service itself: GET /healthz, /readyz and /metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from constraints.edge import safe_dumps

from .responses import error_response, unavailable
from .state import State

router = APIRouter()


@router.get("/healthz", summary="Liveness and the solver pool's real state")
async def healthz(state: State) -> Response:
    snap = state.running_pool().snapshot()
    if snap["alive"] == 0:
        message = "no solver process is alive; replacements are starting"
        return error_response(503, "no_workers", message, status="down", workers=snap)
    status = "degraded" if snap["alive"] < snap["size"] else "ok"
    return Response(safe_dumps({"status": status, "workers": snap}), media_type="application/json")


@router.get("/readyz", summary="Readiness: can a solver process take work now?")
async def readyz(state: State) -> Response:
    pool = state.running_pool()
    snap = pool.snapshot()
    if not pool.ready:
        why = "no solver process is alive" if snap["alive"] == 0 else "the queue is full"
        return unavailable("not_ready", why, state.settings.retry_after_s)
    return Response(safe_dumps({"ready": True, "workers": snap}), media_type="application/json")


@router.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
async def metrics_endpoint(state: State) -> PlainTextResponse:
    snap = state.running_pool().snapshot()
    metrics = state.metrics
    for name in ("alive", "busy", "idle", "starting", "waiting"):
        metrics.workers.labels(state=name).set(snap[name])
    metrics.replaced.set(snap["replaced"])
    return PlainTextResponse(
        generate_latest(metrics.registry).decode(), media_type=CONTENT_TYPE_LATEST
    )
