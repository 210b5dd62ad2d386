"""The middleware around the whole service: body limits, the edge validator, counting
every response, and a JSON 500 for a fault of ours."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from fastapi.responses import Response

from constraints.edge import EdgeError, parse_json, safe_dumps, syntax_message

from ..error_entries import entry
from .metrics import Metrics
from .responses import CHECK_PATH, ERROR_HEADER, error_response, input_refusal

# what a refused body can do instead (the suggestion of its one entry)
_TOO_LARGE_HINT = (
    "send a smaller body (fewer claims, a shorter config), or start the service with a"
    " larger --max-body-bytes"
)
_JSON_HINT = {
    CHECK_PATH: 'one JSON object, e.g. {"dialect": "vllm", "config": {"max-num-seqs": 8}}',
    "": "one JSON object, as the endpoint's schema in /docs describes",
}


def _body_path(where: str, path: str) -> str:
    """Where in the body a value is (`claims[0].requires.x`); `/v1/check` names a config's
    key as the command line does (`max-num-seqs`, not `config.max-num-seqs`)."""
    inner = where.removeprefix("body.") if where != "body" else ""
    if path == CHECK_PATH and inner.startswith("config."):
        inner = inner.removeprefix("config.")
    return inner or "body"


REFUSED = "arbiter.refused_values"  # the scope key of a /v1/check config's refused values
_CONFIG = "body.config."


def _config_values_refused(
    scope: dict[str, Any], path: str, body: bytes, exc: EdgeError
) -> bytes | None:
    """A `/v1/check` body whose only problems are values of its `config` past the edge
    limits: the body without them (for the route), the values in `scope[REFUSED]` (for
    the check, which names them beside the dialect's own problems, as `arbiter check` does
    for a file). None for any other body: it is refused here."""
    problems = exc.problems
    if path != CHECK_PATH or not problems or not all(p.where.startswith(_CONFIG) for p in problems):
        return None
    refused: list[EdgeError] = []
    try:
        data = parse_json(body, "body", problems=refused)
    except (EdgeError, ValueError):
        return None
    scope[REFUSED] = [
        {
            "where": p.where.removeprefix(_CONFIG),
            "reason": p.reason,
            "value": p.value,
            "limit": p.limit,
            "allowed": p.allowed,
        }
        for p in refused
    ]
    return safe_dumps(data).encode()


class _Refused(Exception):
    def __init__(self, response: Response):
        self.response = response


class Guard:
    """ASGI middleware around the whole app: counts every response by endpoint, status and
    error code; refuses bodies over the size limit (by header or by counting bytes); runs
    every POST body through the edge validator (strict JSON: finite numbers, bounded
    integers and depth, valid Unicode) before any route sees it; turns a fault of ours
    into a 500 JSON answer that is counted like any other."""

    def __init__(self, app: Callable[..., Any], limit: int, metrics: Metrics, paths: set[str]):
        self.app = app
        self.limit = limit
        self.metrics = metrics
        self.paths = paths

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in self.paths else "unmatched"
        seen: dict[str, Any] = {"status": None, "code": ""}

        async def counted_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                for key, value in message.get("headers") or ():
                    if key.decode("latin-1").lower() == ERROR_HEADER:
                        seen["code"] = value.decode("latin-1")
            await send(message)

        try:
            if scope.get("method") == "POST":
                receive = await self._checked_body(scope, receive)
            await self.app(scope, receive, counted_send)
        except _Refused as refused:
            await refused.response(scope, receive, counted_send)
        except Exception as exc:  # noqa: BLE001 - a fault of ours, answered and counted
            if seen["status"] is None:
                message = f"internal error: {type(exc).__name__}"
                await error_response(500, "internal", message)(scope, receive, counted_send)
            else:  # the response had started: nothing more can be said to this client
                seen["status"] = 500
        self.metrics.count(endpoint, seen["status"] or 500, seen["code"])

    async def _checked_body(
        self, scope: dict[str, Any], receive: Callable[..., Any]
    ) -> Callable[..., Any]:
        path = scope.get("path", "")
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            raise _Refused(self._too_large(path, int(length)))
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Refused(error_response(499, "client_closed", "the client went away"))
            size += len(message.get("body", b""))
            if size > self.limit:
                raise _Refused(self._too_large(path, size))
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if body:
            try:
                parse_json(body, "body")
            except EdgeError as exc:
                kept = _config_values_refused(scope, path, body, exc)
                if kept is None:
                    raise _Refused(self._bad_values(path, exc)) from None
                body = kept
            except ValueError as exc:
                reason = syntax_message(exc, "JSON")
                raise _Refused(
                    input_refusal(
                        path,
                        400,
                        "malformed_json",
                        f"the request body is {reason}",
                        [
                            entry(
                                "body",
                                reason,
                                suggestions=[_JSON_HINT.get(path, _JSON_HINT[""])],
                                allowed="a JSON object (Content-Type: application/json)",
                            )
                        ],
                    )
                ) from None
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _bad_values(self, path: str, exc: EdgeError) -> Response:
        """Values past the edge limits (every one the body holds, one entry each), or a
        body that is not UTF-8 (400)."""
        status, code = (400, "malformed_json") if "UTF-8" in exc.reason else (422, "invalid_value")
        problems = [
            entry(
                _body_path(p.where, path),
                p.reason,
                value=p.value,
                limit=p.limit,
                allowed=p.allowed,
            )
            for p in (exc.problems or (exc,))
        ]
        return input_refusal(
            path,
            status,
            code,
            str(exc),
            problems,
            where=exc.where or None,
            value=exc.value,
            limit=exc.limit or None,
            allowed=exc.allowed,
        )

    def _too_large(self, path: str, size: int | None = None) -> Response:
        """413 naming the limit; `value` is the size given (the header's, or the bytes
        counted until the limit was passed), `allowed` the bound."""
        value = size if size is not None else self.limit
        allowed = f"at most {self.limit} bytes"
        limit = f"MAX_BODY_BYTES = {self.limit}"
        problem = entry(
            "body",
            f"request body exceeds {self.limit} bytes",
            value=value,
            suggestions=[_TOO_LARGE_HINT],
            limit=limit,
            allowed=allowed,
        )
        return input_refusal(
            path,
            413,
            "body_too_large",
            f"request body exceeds {self.limit} bytes",
            [problem],
            path="body",
            value=value,
            allowed=allowed,
            limit=limit,
        )
