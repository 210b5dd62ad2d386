"""The capacity report counts the KV tokens TensorRT-LLM's KV cache manager holds per
sequence under speculative decoding (the overlap scheduler's token, the draft tokens,
one-model EAGLE-3's extra KV tokens; a TensorRT engine's grown max_seq_len), says so in
words, and leaves every other engine's report at max_seq_len."""

from __future__ import annotations

import pytest

from arbiter.engines.trtllm.native import check_trtllm
from constraints.engines.trtllm.rules.kv_cache import kv_sequence_tokens
from constraints.schema import EngineConfig
from constraints.shared.rules.memory import capacity

SEQ = 8192


def _values(**over):
    values = EngineConfig().flat()
    values.update(
        {
            "runtime_config.backend": "pytorch",
            "build_config.max_seq_len": SEQ,
            "runtime_config.disable_overlap_scheduler": False,
        }
    )
    values.update(over)
    return values


MTP = {"speculative_config.decoding_type": "MTP", "build_config.max_draft_len": 3}
EAGLE3_ONE = {
    "speculative_config.decoding_type": "Eagle",
    "speculative_config.eagle3": True,
    "speculative_config.eagle3_one_model": True,
    "build_config.max_draft_len": 4,
}


@pytest.mark.parametrize(
    ("over", "tokens", "words"),
    [
        ({"runtime_config.disable_overlap_scheduler": True}, SEQ, ""),
        ({}, SEQ + 1, "1 (overlap scheduler)"),
        (MTP, SEQ + 1 + 2 * 3, "2 x 3 draft tokens (MTP, overlap scheduler)"),
        (
            {**MTP, "runtime_config.disable_overlap_scheduler": True},
            SEQ + 3,
            "1 x 3 draft tokens (MTP)",
        ),
        (EAGLE3_ONE, SEQ + 1 + 2 * 4 + 3, "3 (one-model EAGLE-3's extra KV tokens)"),
        # a tree holds max_total_draft_tokens per step (1.2's create_py_executor)
        (
            {
                **EAGLE3_ONE,
                "speculative_config.eagle3_one_model": False,
                "speculative_config.max_total_draft_tokens": 10,
            },
            SEQ + 1 + 2 * 10,
            "2 x 10 draft tokens (Eagle, overlap scheduler)",
        ),
        (
            {"runtime_config.backend": "tensorrt", **MTP},
            SEQ + 3,
            "max_draft_len 3 (the TensorRT builder",
        ),
        (
            {
                "runtime_config.backend": "tensorrt",
                "speculative_config.decoding_type": "Eagle",
                "speculative_config.num_eagle_layers": 4,
                "build_config.max_draft_len": 63,
            },
            SEQ + 63 + 4,
            "num_eagle_layers 4",
        ),
        ({"runtime_config.backend": "tensorrt"}, SEQ, ""),
    ],
)
def test_tokens_per_sequence_and_the_reason(over, tokens, words):
    held, reason = kv_sequence_tokens(_values(**over))
    assert held == tokens
    assert words in reason
    assert bool(reason) == (tokens != SEQ)


def test_capacity_reports_the_held_sequence_and_clamps_against_it():
    values = _values(**MTP)
    held = kv_sequence_tokens(values)
    plain = capacity(values)
    counted = capacity(values, held=held)
    assert plain.sequence_tokens == SEQ and not plain.sequence_held
    assert counted.sequence_tokens == SEQ + 7
    assert "one sequence holds 8199 KV tokens" in str(counted)
    assert counted.kv_tokens == plain.kv_tokens  # the pool itself is the same size
    # a pool of 256 blocks x 32 holds a plain sequence but not the extended one
    tight = {**values, "kv_cache_config.max_tokens": SEQ}
    assert capacity(tight).clamped_to == 0
    assert capacity(tight, held=held).clamped_to == SEQ


def test_a_shorter_window_bounds_the_held_sequence():
    values = _values(**{**MTP, "kv_cache_config.max_attention_window": 4096})
    report = capacity(values, held=kv_sequence_tokens(values))
    assert report.sequence_tokens == 4096 and not report.sequence_held
    # a window between max_seq_len and the held length: the manager clamps it to the window
    values = _values(**{**MTP, "kv_cache_config.max_attention_window": SEQ + 2})
    assert capacity(values, held=kv_sequence_tokens(values)).sequence_tokens == SEQ + 2


def test_check_trtllm_counts_the_mtp_drafts_in_the_resolution_capacity():
    config = {
        "max_seq_len": 4096,
        "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 2},
    }
    verdict = check_trtllm(config, device="H100-80GB")
    report = verdict.resolution.capacity
    assert report.sequence_tokens == 4096 + 1 + 2 * 2
    assert "overlap scheduler" in report.sequence_held
    off = check_trtllm({**config, "disable_overlap_scheduler": True}, device="H100-80GB")
    assert off.resolution.capacity.sequence_tokens == 4096 + 2


def test_other_engines_keep_max_seq_len():
    from arbiter.engines.vllm.native import check_vllm  # noqa: PLC0415 (only this test needs it)

    verdict = check_vllm({"max_model_len": 4096}, device="H100-80GB")
    report = verdict.resolution.capacity
    assert report.sequence_tokens == 4096 and not report.sequence_held


TREE = [[0], [1], [2], [0, 0], [0, 1], [1, 0], [0, 0, 0], [0, 0]]  # 7 distinct, depth 3


def test_a_static_tree_counts_its_choices_and_resets_the_depth():
    spec = {"decoding_type": "Eagle3", "max_draft_len": 5, "speculative_model": "/d"}
    verdict = check_trtllm({"speculative_config": {**spec, "eagle_choices": TREE}})
    assert verdict.verdict == "adjust"
    assert verdict.changes == (
        "speculative_config.max_draft_len: 5 -> 3 (EagleDecodingConfig resets it to the "
        "depth of eagle_choices, with a warning)",
    )
    res = verdict.resolution
    assert res.value("speculative_config.max_total_draft_tokens") == 7
    held, words = kv_sequence_tokens(res.values)
    # overlap: + 1, 2 x 7 tree tokens, one-model EAGLE-3's extra: depth 3 - 1
    assert held == res.value("build_config.max_seq_len") + 1 + 2 * 7 + 2
    assert "2 x 7 draft tokens" in words
    assert "max_total_draft_tokens" not in verdict.config["speculative_config"]
    assert check_trtllm(verdict.config).verdict == "accept"  # a fixed point


def test_a_tree_given_as_a_string_is_parsed_as_the_engine_parses_it():
    spec = {"decoding_type": "Eagle3", "max_draft_len": 1, "speculative_model": "/d"}
    verdict = check_trtllm({"speculative_config": {**spec, "eagle_choices": "[[0], [1], [2]]"}})
    assert verdict.verdict == "accept"
    assert verdict.resolution.value("speculative_config.max_total_draft_tokens") == 3


def test_1_0_derives_no_tree_total():
    spec = {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/d"}
    verdict = check_trtllm(
        {"speculative_config": {**spec, "eagle_choices": TREE}}, profile="trtllm-1.0"
    )
    assert verdict.resolution.value("speculative_config.max_total_draft_tokens") == 0
