"""`check_mlc`: the MLC checker with the dialects' shared contract (what `compare` runs
for MLC). Its verdicts agree with the corpus adapter's path (`mlc.read` + `arbitrate`)
on every MLC corpus case, and it answers bad input with a reject, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.dialects import Verdict
from arbiter.engines.mlc.native import check_mlc
from tests.corpus.adapter import our_verdict
from tests.corpus.cases import load_cases

MODEL = Path(__file__).parents[3] / "fixtures" / "models" / "llama-3.1-8b.json"
MLC_CASES = [case for case in load_cases() if case.engine == "mlc"]


@pytest.mark.parametrize("case", MLC_CASES, ids=lambda c: c.id)
def test_agrees_with_the_corpus_path(case):
    verdict = check_mlc(
        dict(case.config), model=case.model_path, device=case.device, gpus=case.gpus
    )
    expected = our_verdict(case)
    assert expected.verdict != "error"
    assert verdict.verdict == expected.verdict, (verdict.reasons, expected.reasons)


def test_accept_adjust_and_reject():
    accepted = check_mlc({"mode": "server"}, model=MODEL, device="H100-80GB")
    assert accepted.verdict == "accept" and accepted.config["mode"] == "server"
    assert accepted.resolution.capacity.kv_tokens > 0
    speculative = {
        "mode": "server",
        "speculative_mode": "small_draft",
        "spec_draft_length": 4,
        "prefill_mode": "hybrid",
    }
    adjusted = check_mlc(speculative, model=MODEL, device="H100-80GB")
    assert adjusted.verdict == "adjust"
    assert adjusted.changes[0].startswith("mlc.default.prefill_mode dropped")
    assert "mlc.speculative-needs-chunked-prefill" in adjusted.changes[0]
    assert adjusted.config["prefill_mode"] == "chunked"
    paged = check_mlc({"kv_cache_page_size": 32}, model=MODEL, device="H100-80GB")
    assert paged.verdict == "reject" and paged.rules == ("mlc.kv-page-size-16",)


def test_mode_and_gpus():
    interactive = check_mlc({"mode": "server"}, model=MODEL, device="L4", mode="interactive")
    assert interactive.config["mode"] == "interactive"
    assert interactive.config["max_num_sequence"] == 1
    sharded = {"tensor_parallel_shards": 2}
    refused = check_mlc(sharded, model=MODEL, device="H100-80GB")
    assert refused.verdict == "reject" and "machine.parallel-fits-devices" in refused.rules
    assert check_mlc(sharded, model=MODEL, device="H100-80GB", gpus=2).verdict == "accept"
    assert check_mlc(sharded, model=MODEL, device="2xH100-80GB", gpus=2).verdict == "accept"
    assert check_mlc(sharded, model=MODEL, gpus=2).verdict == "accept"


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"kv_cache_page_sise": 16}, "did you mean 'kv_cache_page_size'"),
        ({"mode": "batch"}, "mode must be one of local, interactive, server"),
        ({"speculative_mode": "ngram"}, "speculative_mode must be one of"),
        ({"max_num_sequence": -4}, "max_num_sequence"),
        ("/no/such/engine_config.json", "cannot read"),
    ],
)
def test_bad_input_is_a_reject_naming_the_culprit(config, words):
    verdict = check_mlc(config, model=MODEL, device="H100-80GB")
    assert isinstance(verdict, Verdict) and verdict.verdict == "reject"
    assert words in verdict.reasons[0]


def test_bad_machine_facts_are_a_reject():
    assert check_mlc({}, device="H1000").verdict == "reject"
    assert "unknown device" in check_mlc({}, device="H1000").reasons[0]
