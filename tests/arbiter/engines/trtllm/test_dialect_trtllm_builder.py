"""The TensorRT builder covers speculative drafts by raising max_num_tokens to
max_batch_size x (max_draft_len + 1), never by lowering the batch (tensorrt_llm/builder.py
build(): "New max_num_tokens is set to ..."): arbiter makes the same adjustment where the
user left max_batch_size alone, and a hard limit on the batch still wins. A max_num_tokens
the user gives below that product is raised the same way (an adjustment, not a conflict)."""

from __future__ import annotations

from arbiter.engines.trtllm.native import check_trtllm

LOOKAHEAD = {"decoding_type": "Lookahead", "max_window_size": 4, "max_ngram_size": 3}


def test_lookahead_raises_the_token_budget_and_keeps_the_default_batch():
    verdict = check_trtllm({"backend": "tensorrt", "speculative_config": LOOKAHEAD})
    values = verdict.resolution
    assert values.value("build_config.max_batch_size") == 2048
    assert values.value("build_config.max_draft_len") == 15  # the Lookahead resource
    assert values.value("build_config.max_num_tokens") == 2048 * 16
    assert "max_num_tokens: 8192 -> 32768" in verdict.changes
    assert not any(c.startswith("max_batch_size") for c in verdict.changes)


def test_a_given_batch_is_kept_and_the_budget_raised_to_cover_it():
    config = {"backend": "tensorrt", "max_batch_size": 64, "speculative_config": LOOKAHEAD}
    verdict = check_trtllm(config)
    assert verdict.resolution.value("build_config.max_num_tokens") == 8192  # 64 x 16 fits
    assert verdict.resolution.value("build_config.max_batch_size") == 64


def test_a_hard_batch_limit_still_lowers_the_batch():
    spec = {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model": "draft"}
    verdict = check_trtllm({"backend": "tensorrt", "speculative_config": spec})
    assert verdict.resolution.value("build_config.max_batch_size") == 512  # EAGLE's limit
    assert "default.max_batch_size" in [d.name for d in verdict.resolution.dropped]


def test_the_pytorch_backend_is_untouched():
    spec = {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    verdict = check_trtllm({"speculative_config": spec})
    assert "default.max_batch_size" not in [c.name for c in verdict.resolution.kept]


MEDUSA = {"decoding_type": "Medusa", "max_draft_len": 4, "num_medusa_heads": 4}


def test_a_given_small_budget_is_raised_not_refused():
    config = {
        "backend": "tensorrt",
        "build_config": {"max_batch_size": 64, "max_num_tokens": 256},
        "speculative_config": {**MEDUSA, "speculative_model": "medusa"},
    }
    verdict = check_trtllm(config, profile="trtllm-tensorrt")
    assert verdict.verdict == "adjust", verdict.reasons
    assert verdict.resolution.value("build_config.max_num_tokens") == 320
    assert verdict.changes[0].startswith("build_config.max_num_tokens: 256 -> 320")
    assert verdict.config["build_config"]["max_num_tokens"] == 320  # in the user's field
    again = check_trtllm(verdict.config, profile="trtllm-tensorrt")
    assert not any("max_num_tokens" in c for c in again.changes)  # a fixed point


def test_the_1_0_tensorrt_backend_raises_it_too():
    config = {
        "backend": "tensorrt",
        "max_batch_size": 64,
        "max_num_tokens": 256,
        "speculative_config": {**MEDUSA, "speculative_model_dir": "medusa"},
    }
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert verdict.resolution.value("build_config.max_num_tokens") == 320
    assert "max_num_tokens: 256 -> 320" in verdict.changes[0]


def test_lookahead_budget_counts_the_default_verification_set():
    config = {"build_config": {"max_batch_size": 8, "max_num_tokens": 64}}
    verdict = check_trtllm({**config, "speculative_config": LOOKAHEAD}, profile="trtllm-tensorrt")
    # (3 - 2) + (4 - 1 + 4) x (3 - 1) = 15 drafts: 8 x 16 tokens
    assert verdict.resolution.value("build_config.max_num_tokens") == 128


def test_a_budget_that_covers_the_drafts_is_kept():
    config = {"build_config": {"max_batch_size": 64, "max_num_tokens": 321}}
    spec = {**MEDUSA, "speculative_model": "medusa"}
    verdict = check_trtllm({**config, "speculative_config": spec}, profile="trtllm-tensorrt")
    assert verdict.resolution.value("build_config.max_num_tokens") == 321
    assert not any("max_num_tokens" in c for c in verdict.changes)
