"""Work the HTTP service runs in its worker processes, with errors turned into payloads.

Each job takes and returns plain JSON-ready data, so it crosses the process boundary
cheaply; the event loop never runs the solver itself.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ArbiterError, ConflictError, InternalError, InvalidClaim


def warm_up() -> bool:
    """Import the solver and solve once, so the first real request pays nothing extra."""
    from .solve import arbitrate

    arbitrate([])
    return True


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def invalid_claim_payload(exc: InvalidClaim) -> dict[str, Any]:
    return {
        "error": "invalid_claim",
        "message": str(exc),
        "claim": exc.claim,
        "path": exc.path,
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


def solve_job(claims: list[dict[str, Any]], options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for one arbitration."""
    from .solve import arbitrate

    try:
        resolution = arbitrate(
            claims,
            rules=options.get("rules"),
            time_limit_s=options.get("time_limit_s"),
            defaults=options.get("defaults"),
        )
    except ArbiterError as exc:
        return error_payload(exc)
    body = resolution.to_json(reason_budget_s=options.get("reason_budget_s"))
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
            claims, rules=options.get("rules"), defaults=options.get("defaults"), limits=limits
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
        "resolution": resolution.to_json(reason_budget_s=options.get("reason_budget_s")),
        "capacity": resolution.capacity.to_json(),
    }
    return 200, json.loads(json.dumps(body, default=str))
