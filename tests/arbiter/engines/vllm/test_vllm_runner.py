"""Prefill context parallelism and vLLM's model runners (vLLM 0.33.0, vllm/config/vllm.py):
V2 serves PCP, V1 refuses it, and vLLM falls back to V1 for what V2 lacks
(`_get_v2_model_runner_unsupported_features`). The oracle's verdicts on such arguments
are corpus cases (vllm-pcp-*); these tests pin each fallback the dialect derives."""

from __future__ import annotations

import pytest

from arbiter.engines.vllm.fields import read_args
from arbiter.engines.vllm.native import check_vllm, read, v1_fallback

PCP = {"tensor-parallel-size": 2, "prefill-context-parallel-size": 2}
EAGLE3 = {"method": "eagle3", "model": "draft", "num_speculative_tokens": 3}
FALLBACKS = {
    "suffix speculation": {"speculative-config": {"method": "suffix", "num_speculative_tokens": 4}},
    "EAGLE parallel drafting": {"speculative-config": {**EAGLE3, "parallel_drafting": True}},
    "dual batch overlap": {"enable-dbo": True},
    "micro-batches": {"ubatch-size": 2},
    "PP under external_launcher": {
        "distributed-executor-backend": "external_launcher",
        "pipeline-parallel-size": 2,
    },
}
V2 = {
    "EAGLE-3 without parallel drafting": {"speculative-config": EAGLE3},
    "external_launcher without PP": {"distributed-executor-backend": "external_launcher"},
    "dflash parallel drafting": {
        "speculative-config": {
            "method": "dflash",
            "model": "draft",
            "num_speculative_tokens": 3,
            "parallel_drafting": True,
        }
    },
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_a_feature_v2_lacks_falls_back_to_v1(name):
    assert v1_fallback(read_args(FALLBACKS[name]))


@pytest.mark.parametrize("name", sorted(V2))
def test_v2_serves_the_rest(name):
    assert v1_fallback(read_args(V2[name])) == []


@pytest.mark.parametrize("name", ["dual batch overlap", "EAGLE parallel drafting"])
def test_pcp_on_v1_is_refused(name):
    verdict = check_vllm({**PCP, **FALLBACKS[name]}, device="H100-80GB", gpus=8)
    assert verdict.verdict == "reject"
    assert "vllm.parallel.pcp-needs-model-runner-v2" in verdict.rules


def test_pcp_on_v2_is_served_and_v1_is_named():
    assert check_vllm(PCP, device="H100-80GB", gpus=8).verdict == "accept"
    dbo = check_vllm(FALLBACKS["dual batch overlap"], device="H100-80GB")
    assert dbo.verdict == "accept"
    assert any("V1 model runner" in w and "dual batch overlap" in w for w in dbo.warnings)


# async scheduling on the V1 runner (VllmConfig.__post_init__): explicit -> refused,
# unset -> vLLM turns it off and says so
DBO_PP = {"enable-dbo": True, "pipeline-parallel-size": 2}


def test_unset_async_scheduling_on_v1_is_turned_off_with_a_note():
    notes = read(DBO_PP).native.notes
    assert any("async_scheduling = False" in n and "pipeline parallelism" in n for n in notes)
    assert not any("async_scheduling" in n for n in read({"enable-dbo": True}).native.notes)
    explicit = read({**DBO_PP, "async-scheduling": False}).native.notes
    assert not any("async_scheduling" in n for n in explicit)


def test_async_scheduling_is_a_claim_and_unset_is_pinned_off():
    claims = {c.name: c for c in read({"async-scheduling": True}).claims}
    assert "vllm.async_scheduling" in claims
    pins = next(c for c in read({}).claims if c.name == "vLLM defaults of the fields left open")
    assert pins.expr.paths() >= {"vllm_config.async_scheduling", "vllm_config.speculative_method"}


@pytest.mark.slow
def test_async_suffix_speculation_on_v1_is_refused():
    """suffix decoding needs arctic-inference, which the CPU oracle lacks: the rule's
    own examples and this check stand for it."""
    spec = {"speculative-config": {"method": "suffix", "num_speculative_tokens": 4}}
    verdict = check_vllm({**spec, "async-scheduling": True}, device="H100-80GB")
    assert verdict.verdict == "reject"
    assert "vllm.runner.v1-async-speculation-method" in verdict.rules
    assert check_vllm(spec, device="H100-80GB").verdict == "accept"
