"""Attacks on the real service: every reproducer of issue 15 over HTTP, and generated
hostile requests (seeded and Hypothesis-driven) that must never get a 5xx."""

from __future__ import annotations

import random

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.service.attacks import hostile_request
from arbiter.service.process import RunningService
from tests.arbiter.http_client import HTTP


@pytest.fixture(scope="module")
def service():
    running = RunningService("--workers", "2", "--time-limit", "3")
    yield running
    running.stop()


def raw(service, path: str, body: bytes, method: str = "POST") -> httpx.Response:
    return HTTP.request(
        method,
        service.url + path,
        content=body,
        headers={"content-type": "application/json"},
        timeout=60,
    )


def claim(requires, name: str = "c", kind: str = "func", **extra) -> str:
    import json

    return json.dumps({"kind": kind, "name": name, "requires": requires, **extra})


# (endpoint, raw JSON body, status, error code): the families in the "Why"
REPRODUCERS = [
    # NaN / Infinity / 1e400 anywhere a number goes; the 422 payload must still encode
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"build_config.max_batch_size": NaN}}]}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"build_config.max_batch_size": {"ge": Infinity}}}]}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [], "options": {"time_limit_s": 1e400}}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "perf", "name": "a", "weight": -Infinity, "requires": {"plugin_config.use_fused_mlp": true}}]}', 422, "invalid_value"),
    # integers beyond int64 in ge/le/weights; weights and coefficients near 2^62
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"build_config.max_batch_size": {"ge": 99999999999999999999999}}}]}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"build_config.max_batch_size": {"le": -9223372036854775809}}}]}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "perf", "name": "a", "weight": 4611686018427387000, "requires": {"plugin_config.use_fused_mlp": true}}]}', 422, "invalid_claim"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"cmp": [{"sum": [[4611686018427387000, "build_config.max_batch_size"]]}, ">=", 1]}}]}', 422, "invalid_claim"),
    # mul of two valid paths whose product leaves int64
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"cmp": [{"mul": ["kv_cache_config.host_cache_size", "kv_cache_config.host_cache_size"]}, ">=", 0]}}]}', 422, "invalid_claim"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"cmp": [{"mul": ["kv_cache_config.host_cache_size", "runtime_config.max_history_size"]}, ">=", 0]}}]}', 422, "invalid_claim"),
    # lone surrogates in names, paths or enum values
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "\\ud800", "requires": {"plugin_config.use_fused_mlp": true}}]}', 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": {"plugin_config.use_fused_mlp\\udc00": true}}]}', 422, "invalid_value"),
    ("/v1/explain", '{"claims": [{"kind": "func", "name": "a", "requires": {"kv_cache_config.dtype": "fp8\\udfff"}}]}', 422, "invalid_value"),
    # /v1/check model shapes with 0 heads or wrong types
    # (a config with a setting: an empty one is refused before the model is read, as a file is)
    ("/v1/check", '{"dialect": "trtllm", "config": {"max_batch_size": 8}, "model": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 0, "num_hidden_layers": 32, "vocab_size": 32000, "intermediate_size": 11008}}', 422, "invalid_config"),
    ("/v1/check", '{"dialect": "trtllm", "config": {"max_batch_size": 8}, "model": {"architectures": ["LlamaForCausalLM"], "hidden_size": "4096", "num_attention_heads": [32], "num_hidden_layers": 32, "vocab_size": 32000}}', 422, "invalid_config"),
    # expressions nested 300 deep
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": ' + '{"not": ' * 300 + '{"eq": ["plugin_config.use_fused_mlp", true]}' + "}" * 300 + "}]}", 422, "invalid_value"),
    ("/v1/arbitrate", '{"claims": [{"kind": "func", "name": "a", "requires": ' + '{"not": ' * 40 + '{"eq": ["plugin_config.use_fused_mlp", true]}' + "}" * 40 + "}]}", 422, "invalid_claim"),
    # silent changes of meaning
    ("/v1/arbitrate", claim({"const": "false"}).join(('{"claims": [', "]}")), 422, "invalid_claim"),
    ("/v1/arbitrate", claim({"cmp": [{"sum": [[1.7, "build_config.max_batch_size"]]}, ">=", 8]}).join(('{"claims": [', "]}")), 422, "invalid_claim"),
    ("/v1/arbitrate", claim({"plugin_config.use_fused_mlp": True}, kind="perf", weight=True).join(('{"claims": [', "]}")), 422, "invalid_claim"),
    ("/v1/arbitrate", claim({"plugin_config.use_fused_mlp": True}, kind="perf", weight=2.5).join(('{"claims": [', "]}")), 422, "invalid_claim"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "status", "code"), REPRODUCERS)
def test_every_reproducer_gets_a_clear_4xx(service, path, body, status, code):
    response = raw(service, path, body.encode())
    assert response.status_code == status, response.text
    data = response.json()
    assert data["error"] == code and data["message"]
    assert response.headers["x-arbiter-error"] == code


def test_const_false_is_false_when_written_as_a_bool(service):
    body = claim({"const": False}).join(('{"claims": [', "]}"))
    response = raw(service, "/v1/arbitrate", body.encode())
    assert response.status_code == 409  # a functional claim that can never hold


def test_non_utf8_and_oversized_bodies(service):
    response = raw(service, "/v1/arbitrate", b'{"claims": [{"name": "\xe9"}]}')
    assert response.status_code == 400 and response.json()["error"] == "malformed_json"
    response = raw(service, "/v1/arbitrate", b"[" * 200_000)
    assert response.status_code == 422 and "MAX_DEPTH" in response.json()["message"]


def test_in_process_and_service_agree_on_the_reproducers(service):
    """The same validator decides: whatever the service refuses, arbitrate() refuses."""
    import json

    from arbiter import InvalidClaim, arbitrate

    for path, body, _, _ in REPRODUCERS:
        if path != "/v1/arbitrate":
            continue
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if not data["claims"]:
            continue  # a bad option, not a claim: arbitrate() takes no such option
        with pytest.raises(InvalidClaim):
            arbitrate(data["claims"], time_limit_s=(data.get("options") or {}).get("time_limit_s"))


def test_seeded_hostile_requests_never_get_5xx(service):
    rng = random.Random(15)
    seen = set()
    for _ in range(150):
        method, path, params, body = hostile_request(rng)
        response = HTTP.request(
            method,
            service.url + path,
            params=params,
            content=body or None,
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert response.status_code < 500, (body[:500], response.text[:500])
        data = response.json()
        if response.status_code >= 400:
            assert data["error"] and data["message"]
        seen.add(response.status_code)
    assert {200, 422} <= seen  # the generator reaches the solver, not only the validator


edge_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "plugin_config.use_fused_mlp", "build_config.max_batch_size"])
)
json_like = st.recursive(
    edge_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=12,
)
requirement = st.one_of(
    st.dictionaries(
        st.sampled_from(
            [
                "plugin_config.use_fused_mlp",
                "build_config.max_batch_size",
                "kv_cache_config.dtype",
                "x",
            ]
        ),
        json_like,
        max_size=2,
    ),
    st.fixed_dictionaries({"const": json_like}),
    st.fixed_dictionaries(
        {
            "cmp": st.tuples(
                st.one_of(
                    json_like, st.fixed_dictionaries({"mul": st.tuples(json_like, json_like)})
                ),
                st.sampled_from([">=", "<", "=="]),
                json_like,
            )
        }
    ),
)
claim_body = st.fixed_dictionaries(
    {"kind": st.sampled_from(["func", "perf", "setup"]), "name": st.text(max_size=6)},
    optional={
        "requires": requirement,
        "fixes": json_like,
        "weight": edge_scalars,
        "priority": edge_scalars,
    },
)
schema_bodies = st.fixed_dictionaries(
    {"claims": st.lists(claim_body, max_size=3)},
    optional={"options": st.fixed_dictionaries({}, optional={"time_limit_s": edge_scalars, "defaults": json_like})},
)  # fmt: skip


@given(body=schema_bodies, endpoint=st.sampled_from(["/v1/arbitrate", "/v1/explain"]))
@settings(
    max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
def test_schema_shaped_bodies_never_get_5xx(service, body, endpoint):
    from arbiter.service.attacks import encode

    if endpoint == "/v1/explain" and "options" in body:
        body["options"] = {"time_budget_s": body["options"].get("time_limit_s", 1)}
    text = encode(body).encode("utf-8", "surrogatepass")
    response = raw(service, endpoint, text)
    assert response.status_code < 500, (text[:300], response.text[:300])
    assert response.status_code == 200 or response.json()["error"]
