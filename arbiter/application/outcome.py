"""The one mapping from an error to what the command line and the service answer.

`outcome(exc)` gives the exit code, the HTTP status and the JSON payload for any
exception. Errors of `constraints`, `arbiter` and `engine` carry their own `exit_code`,
`http_status` and `code` as class attributes; the payload adds the attributes that name
the culprit. A nesting too deep for Python is bad input; anything else is a fault of ours
(exit 3, HTTP 500, `internal`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from constraints.edge import show
from constraints.errors import UnknownPath, UnknownSection

from ..error_entries import entries, entry
from ..errors import ConflictError, InvalidClaim, SolveTimeout

# the attributes an error may carry to name its culprit, in payload order
_CULPRIT = ("path", "value", "key", "limit")


@dataclass(frozen=True)
class Outcome:
    """What a front end answers for an error: exit code, HTTP status and JSON payload
    (`payload["error"]` is the stable code, `payload["message"]` the rendered error)."""

    exit_code: int
    http_status: int
    payload: dict[str, Any]

    @property
    def code(self) -> str:
        return str(self.payload["error"])


def jsonable(value: Any) -> Any:
    """A value as it may appear in a payload (a short rendering when it is not JSON)."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return value
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return show(value)


def invalid_claim_payload(exc: InvalidClaim) -> dict[str, Any]:
    return {
        "error": exc.code,
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
        "error": exc.code,
        "message": str(exc),
        "conflicts": [c.to_json() for c in exc.conflicts],
        "corrections": [list(fix) for fix in exc.corrections],
        "report": report,
    }


def _payload(exc: BaseException, code: str) -> dict[str, Any]:
    if isinstance(exc, InvalidClaim):
        return invalid_claim_payload(exc)
    if isinstance(exc, ConflictError):
        return conflict_payload(exc)
    body: dict[str, Any] = {"error": code, "message": str(exc)}
    if isinstance(exc, SolveTimeout):
        body["value"] = exc.time_limit_s
    elif isinstance(exc, (UnknownPath, UnknownSection)):
        body["path"] = jsonable(exc.path)
        body["suggestions"] = list(getattr(exc, "suggestions", ()))
    else:
        for name in _CULPRIT:
            if getattr(exc, name, None) is not None:
                body[name] = jsonable(getattr(exc, name))
    return body


def outcome(exc: BaseException) -> Outcome:
    """Exit code, HTTP status and payload for `exc`."""
    if isinstance(exc, RecursionError):  # input nested beyond what any limit let through
        message = "the input is nested too deeply"
        return Outcome(
            2,
            422,
            {"error": "invalid_request", "message": message, "errors": [entry(None, message)]},
        )
    kind = type(exc)
    exit_code = getattr(kind, "exit_code", None)
    http_status = getattr(kind, "http_status", None)
    code = getattr(kind, "code", None)
    if isinstance(exit_code, int) and isinstance(http_status, int) and isinstance(code, str):
        payload = _payload(exc, code)
        if 400 <= http_status < 500 and http_status != 409:  # one entry per problem
            payload["errors"] = entries(exc)
            limit = getattr(exc, "limit", None)  # the limit that refused it, by name
            if limit and not payload.get("limit"):
                payload["limit"] = str(limit)
        return Outcome(exit_code, http_status, payload)
    message = f"internal error: {kind.__name__}: {exc}"
    return Outcome(3, 500, {"error": "internal", "message": message})
