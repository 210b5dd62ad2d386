"""Bodies refused before any route runs (over the size limit, broken JSON, values past the
edge limits) answer in the same shape as every other input error of their endpoint
(issue 30): `POST /v1/check` the `arbiter.verdict` report (verdict `error`, one
`input_errors` entry a problem, valid against `docs/schema/verdict.schema.json`), every
other endpoint its error payload with one `errors` entry a problem; each entry names its
path, and the size and syntax refusals say what to do instead."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from fastapi.testclient import TestClient

from arbiter.service import ServiceSettings, create_app

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs/schema/verdict.schema.json").read_text())
)
LIMIT = 4000
HUGE = 10**23
BODIES = {
    "too_large": (b'{"config": "' + b"x" * (LIMIT + 10) + b'"}', 413, "body_too_large"),
    "trailing_comma": (b'{"dialect": "vllm",}', 400, "malformed_json"),
    "not_json": (b"dialect: vllm", 400, "malformed_json"),
    "values": (
        json.dumps({"dialect": "vllm", "config": {"max-num-seqs": HUGE, "b": [1, HUGE]}})
        .replace('"b": [1, ', '"b": [1e400, ')
        .encode(),
        422,
        "invalid_value",
    ),
}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServiceSettings(workers=1, max_body_bytes=LIMIT))) as c:
        yield c


def _post_paths(client: TestClient) -> list[str]:
    spec = client.get("/openapi.json").json()
    return sorted(p for p, ops in spec["paths"].items() if "post" in ops)


def test_every_post_endpoint_is_covered(client):
    assert {"/v1/check", "/v1/arbitrate", "/v1/explain", "/v1/compare"} <= set(_post_paths(client))


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_refused_body_has_the_shape_of_the_endpoints_input_errors(client, kind):
    body, status, code = BODIES[kind]
    for path in _post_paths(client):
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == status, (path, response.text[:300])
        assert response.headers["x-arbiter-error"] == code
        data = response.json()
        if path == "/v1/check":
            VALIDATOR.validate(data)
            assert data["verdict"] == "error" and data["error"] == code
            entries = data["input_errors"]
        else:
            assert data["error"] == code and data["message"]
            entries = data["errors"]
        assert entries and all(e["path"] for e in entries), (path, entries)
        if kind == "values":  # one entry a value, each at its own place
            paths = [e["path"] for e in entries]
            inner = "" if path == "/v1/check" else "config."
            assert paths == [f"{inner}max-num-seqs", f"{inner}b[0]", f"{inner}b[1]"], paths
            assert entries[0]["allowed"] and entries[0]["limit"].startswith("INT_LIMIT")
        else:  # the whole body is the culprit; the entry says what to send instead
            (entry,) = entries
            assert entry["path"] == "body" and entry["suggestions"] and entry["allowed"]


def test_a_syntax_error_names_line_and_column(client):
    response = client.post(
        "/v1/check",
        content=b'{\n "dialect": "vllm",\n}',
        headers={"content-type": "application/json"},
    )
    (entry,) = response.json()["input_errors"]
    assert "line 3, column 1" in entry["reason"]
