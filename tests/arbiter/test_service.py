"""The HTTP service, started for real with uvicorn on 127.0.0.1 and called over HTTP."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter import ConflictError, arbitrate, load_claims
from arbiter.claims import claim_to_dict
from arbiter.service.process import RunningService
from tests.arbiter.http_client import HTTP

SCENARIO = "arbiter/scenarios/server_h100.yaml"


@pytest.fixture(scope="module")
def service():
    running = RunningService(
        "--workers", "2", "--max-claims", "300", "--max-body-bytes", "65536", "--time-limit", "5"
    )
    yield running
    running.stop()


def post(service, path, body, **kw):
    return HTTP.post(service.url + path, json=body, timeout=60, **kw)


def strip(data):
    return {
        k: v
        for k, v in data.items()
        if k not in ("stats", "time_limited", "reasons_cut", "reasons_cut_by")
    }


def test_health_schema_rules(service):
    health = HTTP.get(service.url + "/healthz").json()
    assert health["status"] == "ok" and health["workers"]["alive"] == 2
    assert HTTP.get(service.url + "/readyz").json()["ready"] is True
    schema = HTTP.get(service.url + "/v1/schema", params={"path": "kv_cache_config"}).json()
    assert {o["path"] for o in schema} >= {
        "kv_cache_config.enable_block_reuse",
        "kv_cache_config.tokens_per_block",
    }
    missing = HTTP.get(
        service.url + "/v1/schema", params={"path": "kv_cache_config.enable_blok_reuse"}
    )
    assert (
        missing.status_code == 404
        and "kv_cache_config.enable_block_reuse" in missing.json()["suggestions"]
    )
    rules = HTTP.get(service.url + "/v1/rules", params={"grep": "reuse"}).json()
    assert rules and all("reuse" in json.dumps(r).lower() for r in rules)


def test_arbitrate_equals_the_in_process_api(service):
    claims = [claim_to_dict(c) for c in load_claims(SCENARIO)]
    response = post(service, "/v1/arbitrate", {"claims": claims})
    assert response.status_code == 200, response.text
    local = arbitrate(load_claims(SCENARIO)).to_json()
    assert strip(response.json()) == strip(local)
    assert response.json()["time_limited"] is False


# a conflict on the default profile (trtllm-1.2, PyTorch): FlashInfer turns block reuse off
FLASHINFER = {"runtime_config.attn_backend": "FLASHINFER"}


def test_conflict_is_409_and_equals_the_in_process_error(service):
    claims = [
        {"kind": "func", "name": "flashinfer", "requires": FLASHINFER},
        {"kind": "func", "name": "reuse", "requires": {"kv_cache_config.enable_block_reuse": True}},
    ]
    response = post(service, "/v1/arbitrate", {"claims": claims})
    assert response.status_code == 409
    with pytest.raises(ConflictError) as err:
        arbitrate(claims)
    assert response.json()["conflicts"] == [c.to_json() for c in err.value.conflicts]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "malformed_json"),
        ({"claims": "nope"}, 422, "invalid_request"),
        ({"claims": [{"kind": "func", "name": "a", "requires": {"x.y": 1}}]}, 422, "invalid_claim"),
        (
            {
                "claims": [
                    {
                        "kind": "func",
                        "name": "a",
                        "requires": {"build_config.max_beam_width": "wide"},
                    }
                ]
            },
            422,
            "invalid_claim",
        ),
        ({"claims": [], "options": {"time_limit_s": -1}}, 422, "invalid_request"),
        ({"claims": [], "extra": 1}, 422, "invalid_request"),
    ],
)
def test_bad_requests_get_clear_4xx_json(service, body, status, code):
    if isinstance(body, bytes):
        response = HTTP.post(
            service.url + "/v1/arbitrate",
            content=body,
            headers={"content-type": "application/json"},
        )
    else:
        response = post(service, "/v1/arbitrate", body)
    assert response.status_code == status, response.text
    assert response.json()["error"] == code and response.json()["message"]


def test_unknown_path_error_names_the_culprit(service):
    body = {
        "claims": [
            {
                "kind": "func",
                "name": "typo",
                "requires": {"kv_cache_config.enable_blok_reuse": True},
            }
        ]
    }
    data = post(service, "/v1/arbitrate", body).json()
    assert data["claim"] == "typo" and data["path"] == "kv_cache_config.enable_blok_reuse"
    assert data["suggestions"][0] == "kv_cache_config.enable_block_reuse"


def test_limits_on_claims_and_body_size(service):
    claims = [
        {"kind": "perf", "name": f"p{i}", "requires": {"plugin_config.use_fused_mlp": True}}
        for i in range(301)
    ]
    response = post(service, "/v1/arbitrate", {"claims": claims})
    assert response.status_code == 422 and response.json()["error"] == "too_many_claims"
    big = {
        "claims": [
            {"kind": "func", "name": "x" * 70000, "requires": {"plugin_config.use_fused_mlp": True}}
        ]
    }
    response = post(service, "/v1/arbitrate", big)
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


def test_time_limit_returns_best_found_or_says_none(service):
    rng = random.Random(7)
    paths = [
        "plugin_config.use_fused_mlp",
        "plugin_config.context_fmha",
        "plugin_config.use_paged_context_fmha",
        "kv_cache_config.enable_block_reuse",
        "scheduler_config.enable_chunked_context",
        "kv_cache_config.enable_partial_reuse",
        "plugin_config.multiple_profiles",
        "plugin_config.streamingllm",
    ]
    claims = [
        {
            "kind": "perf",
            "name": f"p{i}",
            "weight": rng.randint(1, 9),
            "requires": {p: rng.choice([True, False]) for p in rng.sample(paths, 3)},
        }
        for i in range(300)
    ]
    response = post(
        service, "/v1/arbitrate", {"claims": claims, "options": {"time_limit_s": 0.001}}
    )
    data = response.json()
    if response.status_code == 200:
        assert data["time_limited"] is True and data["status"] == "feasible"
    else:
        assert response.status_code == 408 and data["error"] == "time_limit"


def test_metrics_count_requests_and_conflicts(service):
    post(
        service,
        "/v1/arbitrate",
        {
            "claims": [
                {"kind": "func", "name": "a", "requires": FLASHINFER},
                {
                    "kind": "func",
                    "name": "b",
                    "requires": {"kv_cache_config.enable_block_reuse": True},
                },
            ]
        },
    )
    text = HTTP.get(service.url + "/metrics").text
    assert 'arbiter_requests_total{endpoint="/v1/arbitrate",status="409"}' in text
    assert "arbiter_conflicts_total" in text and "arbiter_solve_seconds_bucket" in text


def test_openapi_documents_the_models(service):
    doc = HTTP.get(service.url + "/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in (
        "ArbitrateRequest",
        "ClaimIn",
        "ResolutionOut",
        "ConflictResponse",
        "ErrorResponse",
        "EngineConfig",
    ):
        assert name in schemas
    assert "409" in doc["paths"]["/v1/arbitrate"]["post"]["responses"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=10,
)
claim_like = st.fixed_dictionaries(
    {"kind": st.sampled_from(["func", "perf", "setup", "other"]), "name": st.text(max_size=8)},
    optional={
        "requires": st.dictionaries(
            st.sampled_from(
                [
                    "plugin_config.streamingllm",
                    "build_config.max_beam_width",
                    "x",
                    "kv_cache_config.dtype",
                ]
            ),
            json_values,
            max_size=2,
        ),
        "fixes": st.dictionaries(
            st.sampled_from(["device.sm", "model.dtype", "y"]), json_values, max_size=2
        ),
        "weight": json_values,
        "priority": json_values,
        "alternatives": json_values,
    },
)
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"claims": st.lists(claim_like, max_size=4)}, optional={"options": json_values}
    ),
)


@given(bodies)
@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
def test_fuzzed_bodies_never_get_5xx(service, body):
    response = HTTP.post(service.url + "/v1/arbitrate", json=body, timeout=30)
    assert response.status_code < 500, response.text
    assert "error" in response.json() or response.status_code == 200


def test_explain_endpoint_equals_the_in_process_explanation(service):
    from arbiter.explain import explain

    star = {"runtime_config.attn_backend": "FLASHINFER_STAR_ATTENTION"}
    claims = [  # two conflicts on trtllm-1.2: star attention vs reuse, and vs chunked context
        {"kind": "func", "name": "star", "requires": star},
        {"kind": "func", "name": "reuse", "requires": {"kv_cache_config.enable_block_reuse": True}},
        {
            "kind": "func",
            "name": "chunked",
            "requires": {"scheduler_config.enable_chunked_context": True},
        },
    ]
    response = post(service, "/v1/explain", {"claims": claims, "options": {"format": "markdown"}})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["feasible"] is False
    local = explain(claims)
    assert data["explanation"] == json.loads(local.render("json"))
    assert data["rendered"] == local.render("markdown")
    bad = post(service, "/v1/explain", {"claims": claims, "options": {"format": "pdf"}})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"


def test_check_endpoint_equals_the_command_line_lint(service):
    import yaml

    from arbiter.application.check import check_file

    config = yaml.safe_load(open("examples/trtllm/eagle_fp8_h100.yaml"))
    model = json.load(open("examples/models/llama-3-8b.json"))
    body = {"dialect": "trtllm", "config": config, "model": model, "device": "H100-80GB"}
    response = post(service, "/v1/check", body)
    assert response.status_code == 200, response.text
    data = response.json()
    resolution, written, _ = check_file(config, "trtllm", model=model, device="H100-80GB")
    assert data["written"]["config"] == json.loads(json.dumps(written, default=str))
    assert data["changes"] == [
        {**c.to_json(), "decided_by": str(resolution.provenance(c.path))}
        for c in resolution.changes
    ]
    assert data["capacity"]["figures"]["kv_tokens"] == resolution.capacity.kv_tokens > 0
    mlc = json.load(open("examples/mlc/interactive_l4.json"))
    response = post(
        service, "/v1/check", {"dialect": "mlc", "config": mlc, "model": model, "device": "L4"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["written"]["config"]["mode"] == "interactive"
    assert response.json()["written"]["config"]["max_num_sequence"] == 1  # interactive: batch 1
    bad = post(
        service,
        "/v1/check",
        {"dialect": "trtllm", "config": {"kv_cache_config": {"enable_blok_reuse": True}}},
    )
    assert (
        bad.status_code == 422 and bad.json()["error"] == "invalid_config"
    )  # a key of the config, not a claim
    assert bad.json()["input_errors"][0]["path"] == "kv_cache_config.enable_blok_reuse"
    bad = post(service, "/v1/check", {"dialect": "tgi", "config": {}})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"


def many_perf_claims(n: int = 40) -> list[dict]:
    """Perf claims that collide pairwise, so many are dropped with reasons to work out."""
    rng = random.Random(3)
    paths = [
        "plugin_config.streamingllm",
        "kv_cache_config.enable_block_reuse",
        "plugin_config.use_paged_context_fmha",
        "scheduler_config.enable_chunked_context",
        "plugin_config.context_fmha",
    ]
    return [
        {
            "kind": "perf",
            "name": f"p{i:02d}",
            "weight": rng.randint(1, 9),
            "requires": {p: rng.choice([True, False]) for p in rng.sample(paths, 2)},
        }
        for i in range(n)
    ]


def test_drop_reasons_are_deterministic_under_a_check_budget():
    from arbiter.service.jobs import resolution_json

    claims = many_perf_claims()
    full = resolution_json(arbitrate(claims), None)
    assert full["reasons_cut"] is False and full["dropped"]
    assert all(d["reason"]["kind"] != "not_computed" for d in full["dropped"])
    cut = [resolution_json(arbitrate(claims), 3) for _ in range(2)]
    assert cut[0]["dropped"] == cut[1]["dropped"] and cut[0]["reasons_cut"] is True
    assert cut[0]["reasons_cut_by"] == "checks"
    late = resolution_json(arbitrate(claims), None, until=0.0)  # the safety net: said so
    assert late["reasons_cut_by"] == "deadline"
    kinds = [d["reason"]["kind"] for d in cut[0]["dropped"]]
    assert "not_computed" in kinds and kinds[0] != "not_computed"
    computed = [d for d in cut[0]["dropped"] if d["reason"]["kind"] != "not_computed"]
    assert computed == full["dropped"][: len(computed)]  # the same reasons, in order


def test_identical_requests_under_concurrency_get_identical_reasons(service):
    from concurrent.futures import ThreadPoolExecutor

    body = {"claims": many_perf_claims(20)}
    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(lambda _: post(service, "/v1/arbitrate", body), range(4)))
    assert all(r.status_code == 200 for r in responses), [r.text[:200] for r in responses]
    answers = [r.json() for r in responses]
    assert all(a["status"] == "optimal" for a in answers)
    assert all(a["dropped"] == answers[0]["dropped"] for a in answers)
    assert all(a["reasons_cut"] == answers[0]["reasons_cut"] for a in answers)


def test_a_conflict_explanation_gets_half_the_time_limit():
    from arbiter.service.jobs import solve_job

    claims = [
        {"kind": "func", "name": "a", "requires": {"plugin_config.streamingllm": True}},
        {"kind": "func", "name": "b", "requires": {"kv_cache_config.enable_block_reuse": True}},
    ]
    # StreamingLLM x block reuse: rules of TensorRT engines
    status, body = solve_job(claims, {"time_limit_s": 1.0, "profile": "trtllm-tensorrt"})
    assert status == 409
    assert body["report"]["search"]["time_budget_s"] == 0.5


def test_an_answer_says_where_its_time_went(service):
    body = {"claims": [claim_to_dict(c) for c in load_claims(SCENARIO)]}
    response = post(service, "/v1/arbitrate", body)
    assert response.status_code == 200
    timing = {}
    for part in response.headers["server-timing"].split(","):
        name, _, duration = part.strip().partition(";dur=")
        timing[name] = float(duration)
    assert list(timing) == ["queue", "worker", "solve", "report", "encode"]
    assert all(ms >= 0 for ms in timing.values())
    # the phases run inside the round trip to the solver process
    assert timing["solve"] + timing["report"] + timing["encode"] <= timing["worker"]
    conflict = post(
        service,
        "/v1/arbitrate",
        {
            "claims": [
                {"kind": "func", "name": "a", "requires": {"plugin_config.streamingllm": True}},
                {"kind": "func", "name": "b", "requires": {"plugin_config.streamingllm": False}},
            ]
        },
    )
    assert conflict.status_code == 409 and "solve;dur=" in conflict.headers["server-timing"]


def test_drop_reasons_are_worked_out_unless_the_request_says_not_to(service):
    claims = many_perf_claims(12)
    default = post(service, "/v1/arbitrate", {"claims": claims}).json()
    assert default["dropped"] and default["reasons_cut"] is False
    assert all(d["reason"]["kind"] != "not_computed" for d in default["dropped"])
    body = {"claims": claims, "options": {"reasons": False}}
    quick = post(service, "/v1/arbitrate", body).json()
    assert quick["reasons_cut"] is True and quick["reasons_cut_by"] == "request"
    assert [d["name"] for d in quick["dropped"]] == [d["name"] for d in default["dropped"]]
    assert all(d["reason"]["kind"] == "not_computed" for d in quick["dropped"])
    assert quick["config"] == default["config"] and quick["kept"] == default["kept"]
    # nothing dropped: nothing was cut
    kept_only = {"claims": claims[:1], "options": {"reasons": False}}
    assert post(service, "/v1/arbitrate", kept_only).json()["reasons_cut_by"] is None
    bad = post(service, "/v1/arbitrate", {"claims": claims, "options": {"reasons": "no"}})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"
