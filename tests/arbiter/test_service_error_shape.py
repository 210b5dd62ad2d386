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
        if kind == "values" and path == "/v1/check":
            continue  # the check names them beside the dialect's own problems (below)
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
            assert paths == ["config.max-num-seqs", "config.b[0]", "config.b[1]"], paths
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


def test_check_names_refused_values_beside_the_dialects_problems(client, tmp_path):
    """`POST /v1/check` with a config holding a value past the edge limits and a typo
    names both, as `arbiter check --format json` does for the same config in a file."""
    from typer.testing import CliRunner

    from arbiter.cli import app

    config = {"max-num-seqs": HUGE, "enable-prefix-cachng": True}
    request = {"dialect": "vllm", "model": "llama-3.1-8b", "config": config}
    response = client.post("/v1/check", json=request)
    assert response.status_code == 422, response.text[:300]
    data = response.json()
    VALIDATOR.validate(data)
    assert data["verdict"] == "error" and data["error"] == "invalid_config"
    served = {e["path"]: e for e in data["input_errors"]}
    assert set(served) == {"max-num-seqs", "enable-prefix-cachng"}
    assert served["max-num-seqs"]["allowed"] and served["max-num-seqs"]["value"] == str(HUGE)
    assert "enable-prefix-caching" in served["enable-prefix-cachng"]["suggestions"]
    path = tmp_path / "c.yaml"
    path.write_text(f"max-num-seqs: {HUGE}\nenable-prefix-cachng: true\n")
    args = ["check", str(path), "-d", "vllm", "--model", "llama-3.1-8b", "--json"]
    printed = json.loads(CliRunner().invoke(app, args).stdout)
    keep = ("path", "value", "reason", "suggestions", "limit", "allowed")
    assert sorted(({k: e[k] for k in keep} for e in printed["input_errors"]), key=str) == sorted(
        ({k: e[k] for k in keep} for e in data["input_errors"]), key=str
    )
