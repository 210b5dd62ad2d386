"""Compare as the service answers it: `POST /v1/compare`'s request -> (HTTP status, body),
run in a solver process like the other jobs."""

from __future__ import annotations

from typing import Any

from ..compare.intent import parse_intent
from ..compare.mapping import ENGINES
from ..compare.render import render
from ..compare.run import compare, parse_engines
from ..compare.vocabulary import IntentError
from ..errors import ArbiterError
from .outcome import invalid_claim_payload, outcome


def compare_job(request: dict[str, Any], options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body): 200 with the comparison's JSON form (and the report in
    `format` when one other than json is asked for); 422 naming every problem of the
    intent. A conflict on an engine is data of the comparison, not an error."""
    problems = []
    try:
        engines = parse_engines(request.get("engines") or ENGINES)
    except IntentError as exc:  # named together with the intent's own problems
        problems, engines = list(exc.problems), ENGINES
    try:
        try:
            intent = parse_intent(
                request["intent"],
                source="<request>",
                model=request.get("model"),
                device=request.get("device"),
                gpus=request.get("gpus"),
            )
        except IntentError as exc:
            raise IntentError([*problems, *exc.problems], "<request>") from None
        if problems:
            raise IntentError(problems, "<request>")
        comparison = compare(intent, engines)
    except IntentError as exc:
        body = invalid_claim_payload(exc)
        body["problems"] = [
            {
                "path": p.path,
                "reason": p.reason,
                "allowed": p.allowed,
                "suggestions": list(p.suggestions),
            }
            for p in exc.problems
        ]
        return 422, body
    except ArbiterError as exc:
        answer = outcome(exc)
        return answer.http_status, answer.payload
    body = comparison.to_json()
    fmt = request.get("format")
    body["rendered"] = render(comparison, fmt) if fmt and fmt != "json" else None
    return 200, body


__all__ = ["compare_job"]
