"""Work the HTTP service runs in its worker processes, with errors turned into payloads.

Each job takes plain JSON-ready data and returns `(HTTP status, JSON text)`: the text is
encoded in the worker with `constraints.edge.safe_dumps`, so a payload that echoes an odd
value can never fail to serialise, and the event loop never runs the solver itself.

Budgets: the solver gets the request's time limit and a conflict explanation half of it.
Dropped claims' reasons are worked out in order under a budget of feasibility checks
(`reason_checks`), a deterministic count rather than wall time, so the same request gets
the same reasons however loaded the machine is. A safety net stops them at
`reasons_until` (a `time.monotonic()` instant, well before the request's deadline would
stop the whole job), so an overloaded machine returns the answer with fewer reasons
rather than none. The answer says `reasons_cut: true` when some reasons are
`not_computed`, and `reasons_cut_by` says which budget did it ("checks" or "deadline").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from constraints.edge import safe_dumps, show

from .errors import ArbiterError, ConflictError, InternalError, InvalidClaim

REASON_CHECKS = 400  # feasibility checks spent on dropped claims' reasons per request


def warm_up() -> bool:
    """Import the solver and the explainer and run each once, so the first real request
    a worker gets pays nothing extra."""
    run("solve", [], {"time_limit_s": 10.0})
    run("explain", [], {"time_budget_s": 1.0})
    return True


def jsonable(value: Any) -> Any:
    """A value as it may appear in a payload (safe_dumps copes with anything else)."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return value
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return show(value)


def invalid_claim_payload(exc: InvalidClaim) -> dict[str, Any]:
    return {
        "error": "invalid_claim",
        "message": str(exc),
        "claim": jsonable(exc.claim),
        "path": jsonable(exc.path),
        "value": jsonable(exc.value),
        "allowed": exc.allowed,
        "suggestions": list(exc.suggestions),
    }


def conflict_payload(exc: ConflictError) -> dict[str, Any]:
    report = None
    if exc.explanation is not None:
        report = json.loads(exc.explanation.render("json"))
    return {
        "error": "conflict",
        "message": str(exc),
        "conflicts": [c.to_json() for c in exc.conflicts],
        "corrections": [list(fix) for fix in exc.corrections],
        "report": report,
    }


def error_payload(exc: ArbiterError) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for an error of the arbiter."""
    from .solve import SolveTimeout

    if isinstance(exc, InvalidClaim):
        return 422, invalid_claim_payload(exc)
    if isinstance(exc, ConflictError):
        return 409, conflict_payload(exc)
    if isinstance(exc, SolveTimeout):
        return 408, {"error": "time_limit", "message": str(exc), "value": exc.time_limit_s}
    if isinstance(exc, InternalError):
        return 500, {"error": "internal", "message": str(exc)}
    return 422, {"error": "invalid_request", "message": str(exc)}


@contextmanager
def conflict_budget(budget_s: float | None) -> Iterator[None]:
    """Give the conflict explanation of a ConflictError raised inside half of the time left
    (it is searched when the payload first reads it)."""
    from .explain.data import Limits

    try:
        yield
    except ConflictError as exc:
        if budget_s is not None:
            exc.limits = Limits(time_budget_s=max(0.05, budget_s / 2))
        raise


def resolution_json(
    resolution: Any, reason_checks: int | None, until: float | None = None
) -> dict[str, Any]:
    """The resolution's JSON with dropped claims' reasons worked out in order until
    `reason_checks` feasibility checks are spent (None: all of them) or, as a safety net,
    `time.monotonic()` passes `until`."""
    context = getattr(resolution, "_context", None)
    cut_by = None
    if (reason_checks is not None or until is not None) and context is not None:

        def used() -> int:
            oracle = getattr(context, "_oracle", None)
            return 0 if oracle is None else oracle.calls

        start = used()
        for dropped in resolution.dropped:
            if "reason" in dropped._memo:
                continue
            if reason_checks is not None and used() - start >= reason_checks:
                cut_by = cut_by or "checks"
            elif until is not None and time.monotonic() > until:
                cut_by = cut_by or "deadline"
            else:
                dropped.reason  # noqa: B018 - works the reason out and memoises it
        body = resolution.to_json(reason_budget_s=0.0)  # the memoised reasons, no more
    else:
        body = resolution.to_json()
    body["reasons_cut"] = cut_by is not None
    body["reasons_cut_by"] = cut_by
    return body


def run(name: str, *args: Any) -> tuple[int, str]:
    """Run job `name` and encode its answer; every failure becomes a payload."""
    jobs: dict[str, Callable[..., tuple[int, dict[str, Any]]]] = {
        "solve": solve_job,
        "explain": explain_job,
        "check": check_job,
    }
    try:
        status, body = jobs[name](*args)
    except ArbiterError as exc:
        status, body = error_payload(exc)
    except RecursionError:
        status, body = (
            422,
            {"error": "invalid_request", "message": "the input is nested too deeply"},
        )
    except Exception as exc:  # noqa: BLE001 - a fault of ours: say so, keep the worker
        status, body = 500, {"error": "internal", "message": f"{type(exc).__name__}: {exc}"}
    return status, safe_dumps(body)


def solve_job(claims: list[dict[str, Any]], options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for one arbitration."""
    from .solve import arbitrate

    try:
        with conflict_budget(options.get("time_limit_s")):
            resolution = arbitrate(
                claims,
                rules=options.get("rules"),
                time_limit_s=options.get("time_limit_s"),
                defaults=options.get("defaults"),
                profile=options.get("profile"),
            )
    except ArbiterError as exc:
        return error_payload(exc)
    body = resolution_json(
        resolution, options.get("reason_checks", REASON_CHECKS), options.get("reasons_until")
    )
    body["time_limited"] = resolution.status == "feasible"
    return 200, body


def explain_job(
    claims: list[dict[str, Any]], options: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for one explanation: the versioned JSON explanation, plus the
    report rendered in `format` when one is asked for."""
    from .explain import Limits, explain

    limits = Limits(
        options.get("max_conflicts", 8), options.get("max_corrections", 8), options["time_budget_s"]
    )
    try:
        explanation = explain(
            claims,
            rules=options.get("rules"),
            defaults=options.get("defaults"),
            limits=limits,
            profile=options.get("profile"),
        )
    except ArbiterError as exc:
        return error_payload(exc)
    data = json.loads(explanation.render("json"))
    fmt = options.get("format")
    rendered = explanation.render(fmt) if fmt and fmt != "json" else None
    return 200, {"feasible": not data.get("conflicts"), "explanation": data, "rendered": rendered}


def check_job(request: dict[str, Any], options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for linting a TensorRT-LLM or MLC configuration: the solved
    configuration in the same dialect, the resolution and the KV capacity."""
    from .cli_check import check_file

    try:
        with conflict_budget(options.get("time_limit_s")):
            resolution, written, _ = check_file(
                request["config"],
                request["dialect"],
                model=request.get("model"),
                device=request.get("device"),
                time_limit_s=options.get("time_limit_s"),
            )
    except ArbiterError as exc:
        return error_payload(exc)
    body = {
        "dialect": request["dialect"],
        "config": written,
        "resolution": resolution_json(
            resolution, options.get("reason_checks", REASON_CHECKS), options.get("reasons_until")
        ),
        "capacity": resolution.capacity.to_json(),
    }
    return 200, json.loads(json.dumps(body, default=str))
