"""`--quantization fp8` on a block-scaled FP8 checkpoint (issue 31, class 4).

vLLM checks only that the argument names the checkpoint's own `quant_method`
(`ModelConfig._verify_quantization`, vllm/config/model.py, v0.33.0) and then reads the
scales the checkpoint declares: `Fp8Config.from_config` takes `weight_block_size`
(vllm/model_executor/layers/quantization/fp8.py, v0.33.0), so DeepSeek-R1-0528's FP8
checkpoint (`quant_method: fp8`, `weight_block_size: [128, 128]`, as its Hugging Face
config.json declares) is served block-scaled with `--quantization fp8`. arbiter read the
argument as per-tensor FP8 and reported a false conflict with the checkpoint."""

from __future__ import annotations

import pytest

from arbiter import check
from arbiter.dialects.protocol import Machine

R1 = "tests/fixtures/models/deepseek-r1-0528-fp8.json"


@pytest.fixture(scope="module")
def machine():
    return Machine.read(R1, "H200", 8)


def test_the_checkpoints_own_method_is_accepted_and_written_back_as_given(machine):
    config = {"quantization": "fp8", "tensor-parallel-size": 8}
    verdict = check("vllm", config, machine=machine)
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.config == config
    assert verdict.resolution.values["quant_config.quant_algo"] == "FP8_BLOCK_SCALES"


def test_another_method_on_that_checkpoint_is_still_refused_by_its_rule(machine):
    verdict = check("vllm", {"quantization": "awq", "tensor-parallel-size": 8}, machine=machine)
    assert verdict.verdict == "reject"
    assert "vllm.quant.matches-checkpoint" in verdict.rules
