"""Issue 31's hostile bodies over HTTP (in-process, one solver process): each was a 500 or
ran to its deadline; each is now a 4xx whose JSON names the limit or the key, the path in
the body, the value and the allowed domain, with one error entry per problem."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from arbiter.error_entries import ENTRY_FIELDS
from arbiter.service import ServiceSettings, create_app
from constraints.limits import LIMITS, MAX_ALTERNATIVES, MAX_SET_VALUES

BATCH = "build_config.max_batch_size"


@pytest.fixture(scope="module")
def client():
    settings = ServiceSettings(workers=1, max_claims=300, max_body_bytes=1 << 20)
    with TestClient(create_app(settings)) as running:
        yield running


def refused(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text[:500]
    data = response.json()
    assert data["error"] == code and response.headers["x-arbiter-error"] == code
    assert data["errors"], data
    for entry in data["errors"]:
        assert set(ENTRY_FIELDS) <= set(entry)
    return data


def test_5000_alternatives_are_422_naming_the_limit(client):
    alternatives = [{"requires": {BATCH: i + 1}, "weight": 5000 - i} for i in range(5000)]
    claim = {"kind": "perf", "name": "p", "weight": 6000, "requires": {BATCH: 9999}}
    body = {"claims": [{**claim, "alternatives": alternatives}]}
    data = refused(client.post("/v1/arbitrate", json=body), 422, "invalid_claim")
    limit = f"MAX_ALTERNATIVES = {MAX_ALTERNATIVES}"
    assert data["limit"] == limit and data["value"] == 5000
    (entry,) = data["errors"]
    assert entry["path"] == "claims[0]" and entry["limit"] == limit and entry["value"] == 5000
    assert entry["allowed"] == f"at most {MAX_ALTERNATIVES} alternatives"


def test_one_of_of_50000_values_is_refused_at_once(client):
    requires = {BATCH: {"one_of": list(range(1, 50_001))}}
    body = {"claims": [{"kind": "func", "name": "o", "requires": requires}]}
    for route in ("/v1/arbitrate", "/v1/explain"):
        data = refused(client.post(route, json=body), 422, "invalid_claim")
        (entry,) = data["errors"]
        assert entry["path"] == f"claims[0].requires.{BATCH}"
        assert entry["limit"] == f"MAX_SET_VALUES = {MAX_SET_VALUES}" and entry["value"] == 50_000
        assert len(response_text := data["message"]) < 400, response_text


def check_refused(response, code: str) -> dict:
    """A refused `/v1/check`: 422, the `arbiter.verdict` report with verdict `error`, its
    code in `error` and the header, one `input_errors` entry a problem."""
    assert response.status_code == 422, response.text[:500]
    data = response.json()
    assert data["schema"] == "arbiter.verdict" and data["verdict"] == "error"
    assert data["error"] == code and response.headers["x-arbiter-error"] == code
    assert data["input_errors"], data
    for entry in data["input_errors"]:
        assert set(ENTRY_FIELDS) <= set(entry)
    return data


def test_plugin_config_list_is_422_naming_the_key(client):
    config = {
        "build_config": {"max_batch_size": 8, "plugin_config": [1, 2]},
        "pretrained_config": {"architecture": "LlamaForCausalLM"},
    }
    response = client.post("/v1/check", json={"dialect": "trtllm", "config": config})
    data = check_refused(response, "invalid_config")
    (entry,) = data["input_errors"]
    assert entry["path"] == "build_config.plugin_config"
    assert entry["reason"] == "expected object, got array" and entry["allowed"] == "object"


def test_mlc_speculative_mode_object_is_422_naming_the_choices(client):
    body = {"dialect": "mlc", "config": {"speculative_mode": {"kind": "eagle"}}}
    data = check_refused(client.post("/v1/check", json=body), "invalid_config")
    (entry,) = data["input_errors"]
    assert entry["path"] == "speculative_mode"
    assert "disable" in entry["allowed"] and "eagle" in entry["allowed"]


def test_several_bad_claims_get_an_entry_each(client):
    body = {
        "claims": [
            {"kind": "func", "name": "typo", "requires": {"build_config.max_batch_sise": 8}},
            {"kind": "func", "name": "ok", "requires": {BATCH: 8}},
            {"kind": "perf", "name": "heavy", "weight": 2**50, "requires": {BATCH: 8}},
            {"kind": "func", "name": "range", "requires": {BATCH: 10**6}},
        ]
    }
    data = refused(client.post("/v1/arbitrate", json=body), 422, "invalid_claim")
    paths = [e["path"] for e in data["errors"]]
    assert paths == [
        "claims[0].requires.build_config.max_batch_sise",
        "claims[2]",
        f"claims[3].requires.{BATCH}",
    ]
    assert data["errors"][0]["suggestions"][0] == BATCH
    assert data["errors"][2]["value"] == 10**6 and data["errors"][2]["allowed"]


def test_several_bad_config_keys_get_an_entry_each(client):
    config = {"max_num_seqs": "many", "max_model_len": [1], "no_such_flag": True}
    data = check_refused(
        client.post("/v1/check", json={"dialect": "vllm", "config": config}), "invalid_config"
    )
    assert {e["path"] for e in data["input_errors"]} >= {"max_num_seqs", "no_such_flag"}


def test_a_body_off_the_request_model_lists_every_problem(client):
    body = {"claims": [{"kind": "nope", "name": "a"}, {"name": "b"}], "options": {"bogus": 1}}
    data = refused(client.post("/v1/arbitrate", json=body), 422, "invalid_request")
    paths = {e["path"] for e in data["errors"]}
    assert {"claims[0].kind", "claims[1].kind", "options.bogus"} <= paths


def test_claim_count_and_body_size_name_their_limits(client):
    claims = [{"kind": "perf", "name": f"p{i}", "requires": {BATCH: 8}} for i in range(301)]
    data = refused(client.post("/v1/arbitrate", json={"claims": claims}), 422, "too_many_claims")
    assert data["limit"] == "MAX_CLAIMS = 300" and data["value"] == 301
    assert data["errors"][0]["path"] == "claims"
    big = {"claims": [{"kind": "func", "name": "x" * (1 << 20), "requires": {BATCH: 8}}]}
    data = refused(client.post("/v1/arbitrate", json=big), 413, "body_too_large")
    assert data["limit"] == f"MAX_BODY_BYTES = {1 << 20}" and data["value"] > 1 << 20
    assert data["allowed"] == f"at most {1 << 20} bytes"


def test_limits_endpoint_lists_what_errors_name(client):
    response = client.get("/v1/limits")
    assert response.status_code == 200
    rows = {row["name"]: row for row in response.json()}
    assert {limit.name for limit in LIMITS} <= set(rows)
    assert rows["MAX_CLAIMS"]["value"] == 300  # this instance's own setting
    assert rows["MAX_BODY_BYTES"]["http_status"] == 413
    assert rows["MAX_SET_VALUES"]["value"] == MAX_SET_VALUES


def test_an_edge_limit_in_the_body_names_its_place(client):
    body = {"claims": [{"kind": "func", "name": "a", "requires": {"k" * 2000: 1}}]}
    data = refused(client.post("/v1/arbitrate", json=body), 422, "invalid_value")
    (entry,) = data["errors"]
    assert entry["path"] == "claims[0].requires" and entry["value"] == 2000
    assert entry["limit"] == "MAX_KEY_CHARS = 1024"
    assert entry["allowed"] == "at most 1024 characters"


def test_a_compare_intent_with_two_bad_values_gets_two_entries(client):
    intent = {"model": "llama-3.1-8b", "hard": {"lora": {"max_rank": 10**12, "adapters": 0}}}
    body = {"intent": intent, "engines": ["trtllm"]}
    data = refused(client.post("/v1/compare", json=body), 422, "invalid_claim")
    assert [e["path"] for e in data["errors"]] == ["hard.lora.max_rank", "hard.lora.adapters"]
    assert all(e["allowed"] for e in data["errors"])


@pytest.mark.parametrize("dialect", ["mlc", "trtllm", "vllm"])
def test_a_model_with_2_to_the_53_layers_is_4xx_naming_the_limit(client, dialect):
    # found by the fuzzer (seed 683): the layer pattern was built one entry a layer, a
    # MemoryError and a 500
    model = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 9007199254740993,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
    }
    config = {
        "mlc": {"mode": "server"},
        "trtllm": {"max_batch_size": 8},
        "vllm": {"max-num-seqs": 8},
    }
    body = {"dialect": dialect, "config": config[dialect], "model": model}
    response = client.post("/v1/check", json=body)
    assert 400 <= response.status_code < 500, response.text[:500]
    text = response.text
    assert "num_hidden_layers" in text and "MAX_LAYERS = 4096" in text, text[:600]
