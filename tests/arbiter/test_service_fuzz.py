"""Fuzzing every POST route of the service in-process (FastAPI's TestClient, one solver
process): hostile bodies for each route, and for `/v1/check` each dialect, drawn by
Hypothesis (bounded; derandomized in CI). Properties: never a 5xx (a 503 "busy, retry
after" while the solver process is replaced is waited out and the body resent); every
4xx has the error shape (a stable code in the body and the header, a message, and one
entry per problem: path, value, reason, suggestions, limit; a conflict its conflicts
instead); the same body twice gets the same answer (unless a wall-clock time limit cut
either run).

The routes are read from the app's OpenAPI document, so a POST route added later (such as
`/v1/plan`) is fuzzed too, with any JSON object until `attacks.route_body` has a
generator for it. The default run draws `EXAMPLES` bodies per target; `-m slow` draws
`SLOW_EXAMPLES`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.error_entries import ENTRY_FIELDS
from arbiter.service import ServiceSettings, create_app
from arbiter.service.attacks import DIALECTS, Draw, encode, hostile_check_body, route_body

EXAMPLES = 20
SLOW_EXAMPLES = 150
# keys of a 200 answer that may differ between two runs of the same body
VOLATILE = {"stats", "solve_ms", "build_ms", "time_ms"}


def post_routes() -> list[str]:
    """Every POST route the app documents."""
    paths = create_app().openapi()["paths"]
    return sorted(path for path, operations in paths.items() if "post" in operations)


def targets() -> list[tuple[str, str | None]]:
    """(route, dialect): `/v1/check` once per dialect, every other POST route once."""
    out: list[tuple[str, str | None]] = []
    for path in post_routes():
        if path == "/v1/check":
            out += [(path, dialect) for dialect in DIALECTS]
        else:
            out.append((path, None))
    return out


TARGETS = targets()


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServiceSettings(workers=1, max_time_limit_s=3.0))) as running:
        yield running


def body_for(target: tuple[str, str | None], seed: int, edge: float) -> bytes:
    draw = Draw(seed)
    draw.edge = edge
    path, dialect = target
    body: Any = hostile_check_body(draw, dialect) if dialect else route_body(draw, path)
    return encode(body).encode("utf-8", "surrogatepass")


def stable(data: Any) -> Any:
    """An answer without what may differ between two runs (timings, solver stats)."""
    if isinstance(data, dict):
        return {k: stable(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [stable(v) for v in data]
    return data


def check_answer(response: Any, sent: bytes) -> dict[str, Any]:
    status = response.status_code
    assert status < 500, (sent[:400], response.text[:800])
    data = response.json()
    assert isinstance(data, dict), response.text[:200]
    if status >= 400:
        assert isinstance(data.get("error"), str) and data["error"], data
        assert isinstance(data.get("message"), str) and data["message"], data
        assert response.headers["x-arbiter-error"] == data["error"]
        report = data.get("schema") == "arbiter.verdict"  # /v1/check: the verdict report
        if status == 409:
            assert data["error"] in (("conflict", "refused") if report else ("conflict",))
            assert isinstance(data["conflicts"], list)
        else:
            entries = data["input_errors"] if report else data["errors"]
            assert entries, data  # one entry per problem, at least one
            for entry in entries:
                assert set(ENTRY_FIELDS) <= set(entry), entry
                assert isinstance(entry["reason"], str) and entry["reason"]
                assert isinstance(entry["suggestions"], list)
    return data


# 503s that say "busy, retry" (the solver process was being replaced after an earlier
# request ran past its deadline), not an answer to the body: waited out, then resent
RETRY = {"queue_timeout", "queue_full", "not_ready", "worker_lost"}


def wait_ready(client: TestClient) -> None:
    deadline = time.monotonic() + 120
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "no solver process became ready in 120 s"
        time.sleep(0.2)


def exchange(client: TestClient, path: str, sent: bytes) -> tuple[int, dict[str, Any]]:
    for _ in range(3):
        response = client.post(path, content=sent, headers={"content-type": "application/json"})
        if response.status_code != 503 or response.json().get("error") not in RETRY:
            break
        assert response.headers.get("retry-after"), response.text
        wait_ready(client)
    return response.status_code, check_answer(response, sent)


def fuzz_once(client: TestClient, target: tuple[str, str | None], sent: bytes) -> int:
    path = target[0]
    status, data = exchange(client, path, sent)
    again, data_again = exchange(client, path, sent)
    # a time limit is wall time: on a loaded machine one run may meet it and the next not
    timed = (
        {status, again} & {408, 503} or data.get("time_limited") or data_again.get("time_limited")
    )
    if timed:
        return status
    assert again == status, (sent[:400], data, data_again)
    if status >= 400:  # an error answer is the same each time, entries included
        assert stable(data_again) == stable(data), sent[:400]
    elif status == 200:
        assert stable(data_again).get("config") == stable(data).get("config"), sent[:400]
    return status


seeds = st.integers(0, 2**32 - 1)
edges = st.sampled_from([0.0, 0.05, 0.3])


@pytest.mark.parametrize("target", TARGETS, ids=[f"{p}:{d}" if d else p for p, d in TARGETS])
@given(seed=seeds, edge=edges)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_hostile_bodies_never_get_5xx(client, target, seed, edge):
    fuzz_once(client, target, body_for(target, seed, edge))


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=[f"{p}:{d}" if d else p for p, d in TARGETS])
@given(seed=seeds, edge=edges)
@settings(
    max_examples=SLOW_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_many_hostile_bodies_never_get_5xx(client, target, seed, edge):
    fuzz_once(client, target, body_for(target, seed, edge))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.parametrize("path", post_routes())
@given(body=json_values)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_any_json_never_gets_5xx(client, path, body):
    sent = json.dumps(body).encode()
    exchange(client, path, sent)


def test_every_post_route_is_fuzzed():
    """The targets cover every POST route the app has, /v1/check once per dialect."""
    routes = post_routes()
    assert {"/v1/arbitrate", "/v1/explain", "/v1/check", "/v1/compare"} <= set(routes)
    assert {p for p, _ in TARGETS} == set(routes)
    assert {d for p, d in TARGETS if p == "/v1/check"} == set(DIALECTS)
