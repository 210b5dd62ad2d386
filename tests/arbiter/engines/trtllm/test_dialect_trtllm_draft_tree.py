"""A chain of drafts on TensorRT-LLM 1.2 (an EAGLE linear or dynamic tree, NGram, MTP,
draft-target ...) holds max_draft_len draft tokens per step: each decoding config's
validator sets max_total_draft_tokens to it (EagleDecodingConfig.validate_eagle_config
before anything else; llm_args.py, the 139,423-character 1.2 source), so a given value
that differs is an adjustment, written back as the engine holds it."""

from __future__ import annotations

import pytest

from arbiter.engines.trtllm.native import check_trtllm
from constraints.engines.trtllm.rules.kv_cache import kv_sequence_tokens

TOTAL = "speculative_config.max_total_draft_tokens"
SPEC = {"decoding_type": "Eagle3", "max_draft_len": 4, "speculative_model": "/d"}
DYNAMIC = {**SPEC, "use_dynamic_tree": True, "dynamic_tree_max_topK": 10}


def _check(spec, **kw):
    return check_trtllm({"speculative_config": spec}, **kw)


@pytest.mark.parametrize(
    ("spec", "tree"),
    [
        ({**DYNAMIC, "max_total_draft_tokens": 60}, "dynamic"),
        ({**SPEC, "max_total_draft_tokens": 6}, "linear"),
    ],
)
def test_a_given_total_is_overwritten_with_max_draft_len(spec, tree):
    verdict = _check(spec)
    given = spec["max_total_draft_tokens"]
    assert verdict.verdict == "adjust"
    assert verdict.changes == (
        f"{TOTAL}: {given} -> 4 (a {tree} tree: EagleDecodingConfig.validate_eagle_config "
        "sets it to max_draft_len)",
    )
    assert verdict.resolution.value(TOTAL) == 4
    assert verdict.config["speculative_config"]["max_total_draft_tokens"] == 4
    again = check_trtllm(verdict.config)  # read -> write -> read: a fixed point
    assert again.verdict == "accept" and again.config == verdict.config


def test_the_kv_manager_counts_the_engine_total_not_the_given_one():
    values = _check({**DYNAMIC, "max_total_draft_tokens": 60}).resolution.values
    held, words = kv_sequence_tokens(values)
    # overlap scheduler: + 1 and 2 x 4 draft tokens; one-model EAGLE-3: + max_draft_len - 1
    assert held == values["build_config.max_seq_len"] + 1 + 2 * 4 + 3
    assert "2 x 4 draft tokens" in words


@pytest.mark.parametrize("total", [None, 4])
def test_a_total_left_out_or_equal_is_accepted_and_derived(total):
    spec = DYNAMIC if total is None else {**DYNAMIC, "max_total_draft_tokens": total}
    verdict = _check(spec)
    assert verdict.verdict == "accept" and verdict.changes == ()
    assert verdict.resolution.value(TOTAL) == 4
    assert verdict.config["speculative_config"] == spec  # nothing added


def test_a_zero_total_is_not_refused_since_the_engine_replaces_it():
    verdict = _check({**DYNAMIC, "max_total_draft_tokens": 0})
    assert verdict.verdict == "adjust"
    assert verdict.resolution.value(TOTAL) == 4


def test_a_zero_top_k_is_still_refused():
    verdict = _check({**DYNAMIC, "dynamic_tree_max_topK": 0})
    assert verdict.verdict == "reject"
    assert verdict.rules == ("speculative.dynamic-tree-settings",)


def test_1_0_has_no_total_to_overwrite():
    spec = {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/d"}
    verdict = _check(
        {**spec, "use_dynamic_tree": True, "dynamic_tree_max_topK": 2}, profile="trtllm-1.0"
    )
    assert verdict.verdict == "accept" and verdict.changes == ()
    assert "max_total_draft_tokens" not in verdict.config["speculative_config"]


@pytest.mark.parametrize(
    ("spec", "engine_total", "words"),
    [
        (
            {"decoding_type": "NGram", "max_draft_len": 3},
            3,
            "NGramDecodingConfig drafts a chain and sets it to max_draft_len",
        ),
        (
            {"decoding_type": "MTP", "num_nextn_predict_layers": 2},
            2,
            "MTPDecodingConfig drafts a chain and sets it to num_nextn_predict_layers",
        ),
    ],
)
def test_other_chains_hold_their_draft_length(spec, engine_total, words):
    verdict = _check({**spec, "max_total_draft_tokens": 9})
    assert verdict.changes == (f"{TOTAL}: 9 -> {engine_total} ({words})",)
    values = verdict.resolution.values
    held, _ = kv_sequence_tokens(values)
    # the overlap scheduler's token and twice the chain, not twice the given 9
    assert held == values["build_config.max_seq_len"] + 1 + 2 * engine_total
    assert check_trtllm(verdict.config).verdict == "accept"


def test_save_state_keeps_its_own_total():
    spec = {"decoding_type": "SaveState", "output_directory": "/o", "max_total_draft_tokens": 3}
    verdict = _check(spec)
    assert verdict.verdict == "accept" and verdict.resolution.value(TOTAL) == 3
