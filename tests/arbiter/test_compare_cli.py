"""`arbiter compare` and `POST /v1/compare`: exit codes, the four formats, and the
service's JSON equal to the in-process comparison."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.cli.console import PIPE_WIDTH
from arbiter.compare import compare, read_intent, render
from arbiter.dialects import DIALECTS, Entry
from arbiter.service import ServiceSettings, create_app
from arbiter.service.models import COMPARE_EXAMPLE

CHAT = "examples/compare/chat.yaml"
TWO = "trtllm,mlc"


def invoke(*args):
    return CliRunner().invoke(app, ["compare", *args])


def test_exit_codes(monkeypatch):
    assert invoke(CHAT, "--engines", TWO).exit_code == 0
    conflict = invoke("examples/compare/lora_l4.yaml", "--engines", TWO)
    assert conflict.exit_code == 1 and "MLC's EngineConfig has no LoRA" in conflict.output
    # an engine that cannot be checked is no "holds" either
    monkeypatch.setattr(DIALECTS, "_loaded", {})
    monkeypatch.setitem(
        DIALECTS.entries,
        "vllm",
        Entry("vllm", "vLLM", "arbiter.engines.vllm", "arbiter.engines.not_here"),
    )
    unchecked = invoke(CHAT, "--engines", "trtllm,vllm")
    assert unchecked.exit_code == 1 and "vLLM 0.33: unavailable" in unchecked.output


def test_bad_input_exits_2_naming_every_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hard: {prefix_cache: true, batch: -1}\nsoft: {cuda_graph: false}\n")
    result = invoke(str(bad), "--engines", TWO)
    assert result.exit_code == 2
    for words in (
        "hard.prefix_cache",
        "did you mean 'prefix_caching'",
        "hard.batch",
        "soft.cuda_graph",
    ):
        assert words in result.output
    assert "Traceback" not in result.output
    assert invoke(CHAT, "--engines", "trtllm,tgi").exit_code == 2
    assert invoke(CHAT, "--format", "pdf").exit_code == 2
    assert invoke(str(tmp_path / "missing.yaml")).exit_code == 2
    assert invoke(CHAT, "--device", "H1000").exit_code == 2
    assert invoke(CHAT, "-o", str(tmp_path / "no" / "out.html")).exit_code == 2


def test_formats_render_the_same_comparison(tmp_path):
    comparison = compare(read_intent(CHAT), TWO)
    data = json.loads(invoke(CHAT, "--engines", TWO, "--format", "json").output)
    assert data == json.loads(json.dumps(comparison.to_json()))
    text = invoke(CHAT, "--engines", TWO).output
    assert text == render(comparison, "text", width=PIPE_WIDTH)  # the table fits a pipe
    written = tmp_path / "compare.txt"
    assert invoke(CHAT, "--engines", TWO, "-o", str(written)).exit_code == 0
    assert written.read_text() == render(comparison, "text")  # a file: one line a row
    assert "TensorRT-LLM 1.2 (PyTorch)" in text and "KV tokens" in text
    assert "soft wish speculative dropped: MLC has no n-gram speculation" in text
    markdown = invoke(CHAT, "--engines", TWO, "-f", "markdown").output
    assert "| feature | strength | TensorRT-LLM 1.2 (PyTorch) | MLC LLM |" in markdown
    assert f"| **KV tokens** | | {comparison['trtllm'].kv_tokens:,} |" in markdown
    page = tmp_path / "compare.html"
    assert invoke(CHAT, "--engines", TWO, "-f", "html", "-o", str(page)).exit_code == 0
    html = page.read_text()
    assert html == render(comparison, "html")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert html.count('<section><h2 class="') == 2  # the engines side by side
    assert '<td class="holds-with-changes"><b>holds with changes</b></td>' in html


def test_overrides_from_the_command_line():
    data = json.loads(
        invoke(
            CHAT,
            "-e",
            "trtllm",
            "--device",
            "L4",
            "--model",
            "qwen2.5-7b",
            "--gpus",
            "2",
            "-f",
            "json",
        ).output
    )
    assert data["intent"]["device"] == "L4" and data["intent"]["gpus"] == 2
    assert data["intent"]["model"].endswith("qwen2.5-7b.json")
    l4 = data["results"][0]["kv_tokens"]
    h100 = compare(read_intent(CHAT), ["trtllm"])["trtllm"].kv_tokens
    assert 0 < l4 < h100


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServiceSettings(workers=1))) as running:
        yield running


def test_service_answers_the_json_form(client):
    response = client.post("/v1/compare", json={**COMPARE_EXAMPLE, "format": "markdown"})
    assert response.status_code == 200, response.text
    data = response.json()
    local = compare(
        read_intent(COMPARE_EXAMPLE["intent"], device="H100-80GB", gpus=1),
        COMPARE_EXAMPLE["engines"],
    )
    expected = json.loads(json.dumps(local.to_json()))
    assert {k: v for k, v in data.items() if k != "rendered"} == expected
    assert data["rendered"] == render(local, "markdown").replace("<intent>", "<request>")
    inline = json.load(open("tests/fixtures/models/llama-3.1-8b.json"))
    body = {
        "intent": {"hard": {"batch": 8}},
        "engines": ["trtllm"],
        "model": inline,
        "device": "L4",
    }
    answer = client.post("/v1/compare", json=body)
    assert answer.status_code == 200 and answer.json()["results"][0]["kv_tokens"] > 0


def test_service_names_every_problem(client):
    body = {"intent": {"hard": {"prefix_cachin": True}}, "engines": ["trtllm", "tgi"]}
    response = client.post("/v1/compare", json=body)
    assert response.status_code == 422
    data = response.json()
    assert data["error"] == "invalid_claim"
    assert [p["path"] for p in data["problems"]] == ["engines", "hard.prefix_cachin"]
    assert data["problems"][1]["suggestions"] == ["prefix_caching"]
    extra = client.post("/v1/compare", json={"intent": {}, "colour": 1})
    assert extra.status_code == 422 and extra.json()["error"] == "invalid_request"


def test_openapi_documents_the_endpoint(client):
    spec = client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/compare"]["post"]
    assert "TensorRT-LLM, vLLM, SGLang and MLC" in operation["summary"]
    assert "unavailable" in operation["description"]
    schemas = spec["components"]["schemas"]
    assert schemas["CompareRequest"]["examples"] == [COMPARE_EXAMPLE]
    assert "status" in schemas["EngineResultOut"]["properties"]
