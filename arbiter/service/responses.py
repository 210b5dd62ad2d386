"""JSON error responses: every error names its stable code in the body and in a header."""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response

from constraints.edge import safe_dumps

from ..application.outcome import outcome
from ..error_entries import from_payload

ERROR_HEADER = "x-arbiter-error"  # every error response names its code here too
CHECK_PATH = "/v1/check"  # answers the `arbiter.verdict` report, its errors too


def error_response(http_status: int, code: str, message: str, **extra: Any) -> Response:
    """A JSON error: `{"error": code, "message": message, **extra}`; a 4xx other than a
    conflict also lists its problems as `errors` (one entry, from its own fields, unless
    the caller gives them)."""
    headers = {ERROR_HEADER: code, **extra.pop("headers", {})}
    body = {"error": code, "message": message, **extra}
    if 400 <= http_status < 500 and http_status != 409 and "errors" not in body:
        body["errors"] = from_payload(body)
    return Response(
        safe_dumps(body), status_code=http_status, media_type="application/json", headers=headers
    )


def input_refusal(
    endpoint: str,
    http_status: int,
    code: str,
    message: str,
    problems: list[dict[str, Any]],
    **extra: Any,
) -> Response:
    """Bad input refused before any route ran (a body over the size limit, broken JSON,
    a value past the edge limits, a body the request model refuses), in the shape of every
    other input error of `endpoint`: the `arbiter.verdict` report with verdict
    `error` and one `input_errors` entry a problem for `/v1/check`, else the error payload
    with one `errors` entry a problem (and `extra`, the payload's own fields). `problems`
    are `arbiter.error_entries.entry` rows."""
    if endpoint != CHECK_PATH:
        return error_response(http_status, code, message, **extra, errors=problems)
    from ..report.schema import InputErrorEntry, VerdictReport  # the report's models

    report = VerdictReport(
        verdict="error",
        error=code,
        message=message,
        source="<request>",
        input_errors=[
            InputErrorEntry(
                path=p.get("path"),
                value=p.get("value"),
                reason=str(p.get("reason", "")),
                suggestions=[str(s) for s in p.get("suggestions") or ()],
                limit=p.get("limit"),
                allowed=str(p["allowed"]) if p.get("allowed") is not None else None,
            )
            for p in problems
        ],
    )
    return Response(
        safe_dumps(report.to_json()),
        status_code=http_status,
        media_type="application/json",
        headers={ERROR_HEADER: code},
    )


def unavailable(code: str, message: str, retry_after: int) -> Response:
    """A 503 that asks the client to retry after `retry_after` seconds."""
    return error_response(
        503, code, message, retry_after=retry_after, headers={"retry-after": str(retry_after)}
    )


def exception_response(exc: BaseException) -> Response:
    """The answer for an error, through the one mapping the command line uses too."""
    answer = outcome(exc)
    body = dict(answer.payload)
    return error_response(answer.http_status, body.pop("error"), body.pop("message"), **body)
