"""Rule scope against the profile: only rules in scope are compiled, reports say why each
rule applied, and the listings (`arbiter rules`, GET /v1/rules) filter by profile."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arbiter import ConflictError, arbitrate, func, perf
from arbiter.cli import app
from arbiter.engines.trtllm import native as trtllm
from arbiter.service import create_app
from constraints.profiles import PROFILES, get_profile
from constraints.rules import every_rule, find_rules, get_rule, rules_for

MODEL = ["--model", "meta-llama/Meta-Llama-3-8B"]  # a check names its model
S = "speculative_config."
EAGLE3 = {
    S + "decoding_type": "Eagle",
    S + "eagle3": True,
    "build_config.max_draft_len": 3,
}
BIG_BATCH = {"build_config.max_batch_size": 1024}


def test_a_tensorrt_builder_limit_does_not_cut_a_pytorch_eagle3_batch():
    # the case: EAGLE's batch <= 512 is a TensorRT builder check (builder.py)
    r = arbitrate([func("eagle3", EAGLE3), perf("batch", BIG_BATCH, weight=5)])
    assert r.stats["profile"] == "trtllm-1.2"
    assert r.value("build_config.max_batch_size") == 1024 and not r.dropped
    assert not get_profile("trtllm-1.2").admits(get_rule("speculative.eagle-limits"))


def test_the_same_limit_holds_on_the_tensorrt_line():
    eagle = {S + "decoding_type": "Eagle", "build_config.max_draft_len": 3}
    r = arbitrate(
        [func("eagle", eagle), perf("batch", BIG_BATCH, weight=5)], profile="trtllm-tensorrt"
    )
    assert r.value("build_config.max_batch_size") <= 512
    assert [d.name for d in r.dropped] == ["batch"]
    with pytest.raises(ConflictError) as err:
        arbitrate([func("eagle", eagle), func("batch", BIG_BATCH)], profile="trtllm-tensorrt")
    assert err.value.conflicts[0].rules == ("speculative.eagle-limits",)


def test_only_rules_in_scope_are_compiled():
    for profile in PROFILES.values():
        compiled = rules_for(profile)
        assert compiled, profile.name
        in_scope = [
            r
            for r in every_rule()
            if r.scope.applies(profile.engine, profile.backend, profile.release)
        ]
        # an engine's own version of a shared rule stands in for it (Rule.replaces)
        replaced = {i for r in in_scope for i in r.replaces}
        for rule in every_rule():
            admitted = rule in in_scope and rule.id not in replaced
            assert (rule in compiled) == admitted, (profile.name, rule.id)
    # a vLLM matrix rule does not constrain TensorRT-LLM: MTP with LoRA solves on 1.2 ...
    claims = [
        func("mtp", {S + "decoding_type": "MTP"}),
        func("lora", {"runtime_config.enable_lora": True}),
    ]
    arbitrate(claims)
    # ... and the rule itself, passed in explicitly, does refuse it
    with pytest.raises(ConflictError):
        arbitrate(claims, rules=["pairs.v29.speculative-x-lora"])


def test_every_rule_has_a_scope_and_a_source():
    for rule in every_rule():
        assert rule.source.engine and rule.source.file, rule.id
        assert rule.scope.engine in ("trtllm", "vllm", "sglang", "mlc", "any"), rule.id
        # the memory model, the machine and model-shape limits span engines
        if not rule.id.startswith(("memory.", "machine.", "parallel.")):
            assert rule.scope.engine != "any", rule.id
        json.dumps(rule.to_json())  # serialisable, scope included
        assert rule.to_json()["scope"]["engine"] == rule.scope.engine
    assert all(r.scope.engine == "vllm" for r in every_rule() if ".v29." in r.id)
    assert all(r.scope.engine == "mlc" for r in every_rule() if r.id.startswith("mlc."))


def test_version_ranges_are_inclusive_and_compared_as_numbers():
    beam = get_rule("kv.beam-search-no-block-reuse")
    assert beam.scope.until == "0.12"
    assert beam.scope.applies("trtllm", "tensorrt", "0.12")
    assert beam.scope.applies("trtllm", "tensorrt", "0.9")
    assert not beam.scope.applies("trtllm", "tensorrt", "0.13")
    assert not beam.scope.applies("trtllm", "tensorrt", "1.2")
    assert not beam.scope.applies("trtllm", "tensorrt", "0.8")
    assert not beam.scope.applies("trtllm", "pytorch", "0.10")
    claims = [
        func("beam", {"build_config.max_beam_width": 4}),
        func("reuse", {"kv_cache_config.enable_block_reuse": True}),
    ]
    with pytest.raises(ConflictError) as err:
        arbitrate(claims, profile="trtllm-0.10")
    assert "kv.beam-search-no-block-reuse" in err.value.conflicts[0].rules
    r = arbitrate(claims, profile="trtllm-tensorrt")  # 1.2: no such rule any more
    assert r.value("kv_cache_config.enable_block_reuse") is True


def test_profile_backend_is_pinned_and_named_in_the_conflict():
    with pytest.raises(ConflictError) as err:
        arbitrate([func("trt", {"runtime_config.backend": "tensorrt"})])
    assert err.value.conflicts[0].rules == ("runtime.pytorch-profile-backend",)
    # Medusa is a TensorRT-engine method: refused on 1.2, fine on the TensorRT line
    medusa = func("medusa", {S + "decoding_type": "Medusa", "build_config.max_draft_len": 4})
    with pytest.raises(ConflictError) as err:
        arbitrate([medusa])
    # two rules state it (the backend pin with the decoding-type link, or the PyTorch
    # backend's own list of decoding types): the minimal core names either
    assert set(err.value.conflicts[0].rules) in (
        {"runtime.medusa-lookahead-need-tensorrt", "runtime.pytorch-profile-backend"},
        {"speculative.pytorch-backend-decoding-types"},
    )
    assert arbitrate([medusa], profile="trtllm-tensorrt").value("runtime_config.backend") == (
        "tensorrt"
    )


def test_reports_name_the_profile_and_why_each_rule_applied():
    claims = [
        func("streamingllm", {"plugin_config.streamingllm": True}),
        func("paged", {"plugin_config.use_paged_context_fmha": True}),
    ]
    with pytest.raises(ConflictError) as err:
        arbitrate(claims, profile="trtllm-tensorrt")
    data = err.value.explanation.to_json()
    assert data["profile"] == {
        "name": "trtllm-tensorrt",
        "line": "TensorRT-LLM 1.2, tensorrt backend",
    }
    (rule,) = data["conflicts"][0]["rules"]
    assert rule["scope"] == "trtllm (tensorrt backend)"
    assert rule["why"] == (
        "scope trtllm (tensorrt backend) covers trtllm-tensorrt (TensorRT-LLM 1.2, tensorrt backend)"
    )
    text = err.value.report("text")
    assert "profile: trtllm-tensorrt" in text and "applies: scope trtllm" in text
    assert "Profile: `trtllm-tensorrt`" in err.value.report("markdown")
    assert "applies: scope trtllm" in err.value.report("html")
    # under the default profile the plugin rule is not in scope: no conflict
    arbitrate(claims)


def test_dropped_claims_name_the_profile_too():
    r = arbitrate(
        [
            func("streaming", {"plugin_config.streamingllm": True}),
            perf("reuse", {"kv_cache_config.enable_block_reuse": True}),
        ],
        profile="trtllm-tensorrt",
    )
    data = r.explain().to_json()
    assert data["profile"]["name"] == "trtllm-tensorrt"
    assert all(rule["why"] for d in data["dropped"] for rule in d["rules"])


def test_cli_rules_lists_by_profile_with_scope():
    runner = CliRunner()
    res = runner.invoke(app, ["rules", "--profile", "trtllm-1.2", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    assert [r["id"] for r in listed] == [r.id for r in rules_for(get_profile("trtllm-1.2"))]
    assert all("tensorrt" not in r["scope"]["backends"] for r in listed)
    assert {r["kind"] for r in listed} == {"hard"}  # no default rule: the one warning is a warning
    engine = json.loads(
        runner.invoke(app, ["rules", "--profile", "trtllm-tensorrt", "--json"]).output
    )
    assert any(r["kind"] == "default" for r in engine)
    text = runner.invoke(app, ["rules", "--profile", "mlc"])
    assert "mlc.history-size-recurrent-only" in text.output and "kv.reuse" not in text.output
    bad = runner.invoke(app, ["rules", "--profile", "trtllm-9"])
    assert bad.exit_code == 2 and "trtllm-1.2" in bad.output
    everything = json.loads(runner.invoke(app, ["rules", "--json"]).output)
    assert len(everything) == len(every_rule())


def test_service_rules_agree_with_the_cli():
    client = TestClient(create_app())
    runner = CliRunner()
    for params, args in (
        ({}, []),
        ({"profile": "trtllm-tensorrt"}, ["--profile", "trtllm-tensorrt"]),
        ({"profile": "mlc", "grep": "prefill"}, ["--profile", "mlc", "--grep", "prefill"]),
    ):
        served = client.get("/v1/rules", params=params)
        assert served.status_code == 200, served.text
        listed = json.loads(runner.invoke(app, ["rules", "--json", *args]).output)
        assert served.json() == listed
    assert len(client.get("/v1/rules").json()) == len(find_rules())  # default rules too
    bad = client.get("/v1/rules", params={"profile": "nope"})
    assert bad.status_code == 400 and "trtllm-1.2" in bad.json()["message"]


def test_cli_check_and_solve_take_a_profile(tmp_path):
    runner = CliRunner()
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - {name: streamingllm, kind: func, requires: {plugin_config.streamingllm: true}}\n"
        "  - {name: reuse, kind: func, requires: {kv_cache_config.enable_block_reuse: true}}\n"
    )
    assert runner.invoke(app, ["solve", str(claims), "-q"]).exit_code == 0
    res = runner.invoke(app, ["solve", str(claims), "--profile", "trtllm-tensorrt"])
    assert res.exit_code == 1 and "kv.streamingllm-no-block-reuse" in res.output
    config = tmp_path / "llm.yaml"
    config.write_text("kv_cache_config:\n  enable_block_reuse: true\n")
    ok = runner.invoke(app, ["check", str(config), "--json", *MODEL])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["profile"] == "trtllm-1.2"
    trt = runner.invoke(
        app, ["check", str(config), "--json", "--profile", "trtllm-tensorrt", *MODEL]
    )
    assert json.loads(trt.output)["profile"] == "trtllm-tensorrt"
    res = runner.invoke(app, ["check", str(config), "--profile", "trtllm-2.0", *MODEL])
    assert res.exit_code == 2 and "unknown profile" in res.output


def test_a_tensorrt_configuration_picks_the_tensorrt_line():
    assert trtllm.read({"backend": "tensorrt"}).profile == "trtllm-tensorrt"
    assert trtllm.read({"backend": "pytorch"}).profile == "trtllm-1.2"
    assert trtllm.read({}).profile == "trtllm-1.2"
