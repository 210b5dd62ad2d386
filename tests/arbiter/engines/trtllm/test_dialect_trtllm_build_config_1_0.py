"""1.0's TorchLlmArgs.build_config: a deprecated dummy that is still read (trtllm-serve's
YAML becomes a BuildConfig with BuildConfig.from_dict; init_build_config asserts one) and
that still decides the runtime sizes on the PyTorch backend
(set_runtime_knobs_from_build_config: its max_batch_size, max_num_tokens, max_seq_len,
max_input_len and max_beam_width, given or default, override the top-level ones)."""

from __future__ import annotations

from arbiter.engines.trtllm.native import check_trtllm


def test_a_given_build_size_overrides_the_top_level_one():
    config = {"max_num_tokens": 4096, "build_config": {"max_num_tokens": 2048}}
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert verdict.verdict == "adjust", verdict.reasons
    assert verdict.changes[0].startswith("max_num_tokens: 4096 -> 2048 (overridden by")
    assert verdict.resolution.value("build_config.max_num_tokens") == 2048
    assert "overridden by build_config" in verdict.not_arbitrated["max_num_tokens"]
    assert verdict.config["max_num_tokens"] == 4096  # carried as given


def test_a_build_default_overrides_the_top_level_size_too():
    config = {"max_batch_size": 16, "build_config": {"max_num_tokens": 4096}}
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert (
        "max_batch_size: 16 -> 2048 (overridden by build_config.max_batch_size, "
        in (verdict.changes[0])
    )
    assert verdict.resolution.value("build_config.max_batch_size") == 2048


def test_equal_sizes_and_a_left_out_max_seq_len_change_nothing():
    config = {"max_batch_size": 64, "max_seq_len": 4096, "build_config": {"max_batch_size": 64}}
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert verdict.verdict == "accept", verdict.changes  # BuildConfig.max_seq_len is None


def test_build_config_is_read_as_1_0_reads_it():
    dropped = check_trtllm({"build_config": {"max_batch_sise": 8}}, profile="trtllm-1.0")
    assert dropped.verdict == "accept"
    assert "did you mean 'build_config.max_batch_size'" in dropped.warnings[0]
    refused = check_trtllm({"build_config": 2048}, profile="trtllm-1.0")
    assert refused.verdict == "reject"
    assert refused.reasons == ("build_config: expected an object (BuildConfig), got int",)


def test_1_2_has_no_build_config_on_pytorch_and_tensorrt_keeps_its_own():
    assert check_trtllm({"build_config": {}}).verdict == "reject"  # no TorchLlmArgs field
    config = {"backend": "tensorrt", "max_num_tokens": 8192, "build_config": {}}
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert not any("overridden by build_config" in c for c in verdict.changes)
