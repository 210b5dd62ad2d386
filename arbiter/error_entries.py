"""One entry per problem of an input error: `path`, `value`, `reason`, `suggestions`, `limit`.

An error that found several problems at once (every bad claim of a list, every bad key of
an engine config) carries them as `problems` (or, for unknown fields, `unknown`); `entries`
turns any error into the list of its problems in one shape, the same for every endpoint of
the service and for the command line's JSON: `path` locates the culprit in the input
(`claims[2].requires.build_config.max_batch_size`, `config.max_num_seqs` for an engine
config, `body`), `value` is a short rendering of it,
`reason` says what is wrong, `suggestions` are close matches, `limit` names the limit of
`constraints.limits` that refused it (or null). `allowed` (the domain) and `claim` are added
where the error knows them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from constraints.edge import EdgeError, show

from .errors import InvalidClaim

ENTRY_FIELDS = ("path", "value", "reason", "suggestions", "limit")


def entry(
    path: str | None,
    reason: str,
    *,
    value: Any = None,
    suggestions: Iterable[str] = (),
    limit: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One problem in the shared shape (extra keys, such as `allowed`, kept when not None)."""
    out: dict[str, Any] = {
        "path": path or None,
        "value": _short(value),
        "reason": reason,
        "suggestions": [str(s) for s in suggestions],
        "limit": limit or None,
    }
    out.update({k: jsonable(v) for k, v in extra.items() if v is not None})
    return out


def jsonable(value: Any) -> Any:
    """`value` when JSON can hold it as is, else its short rendering."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return value
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return show(value)


def _short(value: Any) -> Any:
    """The value as JSON when it is small, else its short rendering (a body may be big)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= 200 else show(value, 200)
    text = show(value, 200)
    return jsonable(value) if not text.endswith("...") else text


def _problem_entry(problem: Any) -> dict[str, Any]:
    """A dialect's problem: its path or key is one of the engine config (`config.` in a
    service request)."""
    path = getattr(problem, "path", None) or getattr(problem, "key", None)
    return entry(
        f"config.{path}" if path is not None else "config",
        str(getattr(problem, "reason", problem)),
        value=getattr(problem, "value", None),
        suggestions=getattr(problem, "suggestions", ()) or (),
    )


def _claim_entry(exc: InvalidClaim) -> dict[str, Any]:
    path = f"claims[{exc.index}]" if exc.index is not None else None
    key = getattr(exc, "key", None)  # a dialect's error names the key of the config
    if key is not None:
        path = f"config.{key}"
    elif exc.path is not None:
        path = f"{path}.{exc.path}" if path else exc.path
    return entry(
        path,
        exc.reason,
        value=exc.value,
        suggestions=exc.suggestions,
        limit=exc.limit,
        allowed=exc.allowed,
        claim=exc.claim,
    )


def entries(exc: BaseException) -> list[dict[str, Any]]:
    """Every problem `exc` names, one entry each (at least one)."""
    problems = getattr(exc, "problems", ()) or ()
    if isinstance(exc, InvalidClaim) and problems and isinstance(problems[0], InvalidClaim):
        return [_claim_entry(p) for p in problems]
    if problems:
        return [_problem_entry(p) for p in problems]
    unknown = getattr(exc, "unknown", None)
    if unknown:
        return [
            entry(f"config.{key}", "no field of this release", value=key, suggestions=hints)
            for key, hints in unknown
        ]
    if isinstance(exc, InvalidClaim):
        return [_claim_entry(exc)]
    if isinstance(exc, EdgeError):
        return [
            entry(
                exc.where,
                exc.reason,
                value=exc.value,
                limit=exc.limit,
                allowed=getattr(exc, "allowed", None),
            )
        ]
    return [
        entry(
            getattr(exc, "path", None) or getattr(exc, "where", None),
            str(exc),
            value=getattr(exc, "value", None),
            suggestions=getattr(exc, "suggestions", ()) or (),
            limit=getattr(exc, "limit", None),
        )
    ]


def from_payload(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of an error payload built without them: one per item of its own
    `problems` list where it has one (`/v1/compare`'s intent errors), else one from its
    fields (an error no exception stands behind: a body over the size limit, a route
    refused by the framework)."""
    problems = body.get("problems")
    if isinstance(problems, list) and problems and all(isinstance(p, dict) for p in problems):
        return [
            entry(
                p.get("path"),
                str(p.get("reason", "")),
                value=p.get("value"),
                suggestions=p.get("suggestions") or (),
                limit=p.get("limit"),
                allowed=p.get("allowed"),
            )
            for p in problems
        ]
    return [
        entry(
            body.get("path") or body.get("where"),
            str(body.get("message", "")),
            value=body.get("value"),
            suggestions=body.get("suggestions") or (),
            limit=body.get("limit"),
            allowed=body.get("allowed"),
        )
    ]
