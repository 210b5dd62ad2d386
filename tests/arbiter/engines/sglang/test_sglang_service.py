"""`POST /v1/check` with the sglang dialect: the same answer as the command-line lint, bad
input as 422 with every key named."""

from __future__ import annotations

import json

import pytest

from arbiter.application.check import check_file
from arbiter.service.process import RunningService
from tests.arbiter.http_client import HTTP


@pytest.fixture(scope="module")
def service():
    running = RunningService("--workers", "1", "--time-limit", "10")
    yield running
    running.stop()


def test_check_sglang_over_http(service):
    model = json.load(open("examples/models/llama-3-8b.json"))
    config = {"tp-size": 2, "attn-dp-size": 2, "chunked-prefill-size": 8192}
    body = {"dialect": "sglang", "config": config, "model": model, "device": "H100", "gpus": 2}
    response = HTTP.post(service.url + "/v1/check", json=body, timeout=60)
    assert response.status_code == 200, response.text
    data = response.json()
    resolution, written, _ = check_file(config, "sglang", model=model, device="H100", gpus=2)
    assert data["written"]["config"] == written == config
    assert data["capacity"]["figures"]["kv_tokens"] == resolution.capacity.kv_tokens > 0
    assert data["capacity"]["figures"]["terms"] == "sglang"
    bad = HTTP.post(
        service.url + "/v1/check",
        json={"dialect": "sglang", "config": {"tp-sise": 2, "mem-frac-static": 1}},
        timeout=60,
    )
    assert bad.status_code == 422
    assert "tp-sise" in bad.text and "mem-frac-static" in bad.text
    schema = HTTP.get(service.url + "/openapi.json", timeout=60).json()
    assert "sglang" in json.dumps(schema["components"]["schemas"]["CheckRequest"])
