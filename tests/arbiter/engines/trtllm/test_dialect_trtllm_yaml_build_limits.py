"""A TensorRT-backend YAML with a build_config and top-level runtime sizes: the build
limits come from build_config (given or BuildConfig's default) and the runtime sizes are
checked against them as beside a prebuilt engine
(BaseLlmArgs.validate_build_config_with_runtime_params: 1.0 refuses a larger runtime batch
or token budget, later lines clamp it; a smaller one is what the engine runs with)."""

from __future__ import annotations

import pytest

from arbiter.engines.trtllm.native import check_trtllm

SMALLER = {"backend": "tensorrt", "max_batch_size": 8, "build_config": {"max_batch_size": 64}}
LARGER = {"backend": "tensorrt", "max_batch_size": 128, "build_config": {"max_batch_size": 64}}


@pytest.mark.parametrize("profile", ["trtllm-1.0", "trtllm-tensorrt"])
def test_a_smaller_runtime_batch_is_no_conflict(profile):
    verdict = check_trtllm(SMALLER, profile=profile)
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("build_config.max_batch_size") == 64
    assert verdict.config == SMALLER  # written back as given


def test_a_larger_runtime_batch_is_clamped_on_1_2_and_refused_on_1_0():
    clamped = check_trtllm(LARGER, profile="trtllm-tensorrt")
    assert clamped.changes == ("max_batch_size [128] clamped to build_config.max_batch_size [64]",)
    assert clamped.config["max_batch_size"] == 64
    assert check_trtllm(LARGER, profile="trtllm-1.0").verdict == "reject"


def test_the_build_default_is_the_limit_where_build_config_leaves_it_out():
    config = {"backend": "tensorrt", "max_batch_size": 4096, "build_config": {}}
    verdict = check_trtllm(config, profile="trtllm-tensorrt")
    assert "clamped to build_config.max_batch_size [2048]" in verdict.changes[0]
    assert check_trtllm(config, profile="trtllm-1.0").verdict == "reject"


def test_without_build_config_the_top_level_sizes_build_the_engine():
    config = {"backend": "tensorrt", "max_batch_size": 8, "max_num_tokens": 64}
    verdict = check_trtllm(config, profile="trtllm-tensorrt")
    assert verdict.verdict == "accept"
    assert verdict.resolution.value("build_config.max_batch_size") == 8
