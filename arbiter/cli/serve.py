"""`arbiter serve`: the HTTP service, with its limits checked before it starts."""

from __future__ import annotations

from typing import Annotated

import typer

from .console import fail, out

MAX_WORKERS = 256  # `serve --workers`


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[
        int | None, typer.Option(help="Solver processes (default: one per core).")
    ] = None,
    max_claims: Annotated[int, typer.Option(help="Most claims in one request.")] = 2000,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body.")] = 1 << 20,
    time_limit: Annotated[
        float, typer.Option(help="Longest solve in seconds (requests may ask for less).")
    ] = 30.0,
    max_queue: Annotated[
        int, typer.Option(help="Requests that may wait for a solver process (then 503).")
    ] = 64,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log one line a request on stderr.")
    ] = False,
) -> None:
    """Serve arbitration over HTTP (FastAPI + uvicorn); OpenAPI at /docs.

    Example: arbiter serve --host 127.0.0.1 --port 8000
    """
    # FastAPI, uvicorn and the solver pool load only when the service starts
    from ..service import ServiceSettings
    from ..service import serve as run_service

    checks = (
        ("--port", port, 0 <= port <= 65535, "an integer in [0, 65535]"),
        (
            "--workers",
            workers,
            workers is None or 1 <= workers <= MAX_WORKERS,
            f"an integer in [1, {MAX_WORKERS}]",
        ),
        ("--max-claims", max_claims, max_claims >= 1, "an integer >= 1"),
        (
            "--max-body-bytes",
            max_body_bytes,
            1 <= max_body_bytes <= 1 << 30,
            "an integer in [1, 1073741824]",
        ),
        ("--time-limit", time_limit, 0 < time_limit <= 3600, "seconds in (0, 3600]"),
        ("--max-queue", max_queue, 0 <= max_queue <= 100_000, "an integer in [0, 100000]"),
    )
    for flag, value, ok, allowed in checks:
        if not ok:
            fail(f"{flag} {value}: must be {allowed}", 2)
    settings = ServiceSettings(
        max_body_bytes=max_body_bytes,
        max_claims=max_claims,
        max_time_limit_s=time_limit,
        default_time_limit_s=min(10.0, time_limit),
        max_queue=max_queue,
    )
    if workers is not None:
        settings.workers = workers
    out.print(f"arbiter service on http://{host}:{port} ({_processes(settings.workers)})")
    run_service(host, port, settings, access_log=access_log)


def _processes(count: int) -> str:
    return f"{count} solver process" + ("" if count == 1 else "es")
