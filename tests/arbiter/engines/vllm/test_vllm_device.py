"""vLLM's GPU limits through the dialect (issue 31, class 3): `--dtype` as the compute
dtype (bfloat16 refused below sm 80, vllm/platforms/cuda.py check_if_supports_dtype,
v0.33.0), each quantization's minimum capability, and a block-scaled FP8 MoE whose
per-rank expert share must be whole weight blocks, the MoE group being tp x dp ranks
without expert parallelism (FusedMoEParallelConfig.make flattens data parallelism into
it, vllm/model_executor/layers/fused_moe/config.py, v0.33.0)."""

from __future__ import annotations

import pytest

from arbiter import check
from arbiter.dialects.protocol import Machine

FIXTURES = "tests/fixtures/models"
LLAMA = f"{FIXTURES}/llama-3.1-8b.json"
QWEN_FP8 = f"{FIXTURES}/qwen3-235b-a22b-fp8.json"
SHORT = {"max-model-len": 8192, "no-enable-chunked-prefill": True, "no-enable-prefix-caching": True}
BLOCK_RULE = "vllm.quant.block-fp8-moe-shards-whole-blocks"


@pytest.mark.parametrize("spelled", ["half", "float16"])
def test_half_on_volta_is_accepted_and_written_back_as_spelled(spelled):
    config = {"dtype": spelled, **SHORT}
    verdict = check("vllm", config, machine=Machine.read(LLAMA, "V100-32GB", 1))
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.config == config
    assert verdict.resolution.values["build_config.dtype"] == "float16"


def test_bfloat16_is_refused_on_volta_and_accepted_on_ampere():
    config = {"dtype": "bfloat16", **SHORT}
    volta = check("vllm", config, machine=Machine.read(LLAMA, "V100-32GB", 1))
    assert volta.verdict == "reject"
    assert volta.rules == ("vllm.device.bfloat16-needs-ampere",)
    ampere = check("vllm", config, machine=Machine.read(LLAMA, "A100-80GB", 1))
    assert ampere.verdict == "accept", ampere.reasons


def test_a_method_below_its_minimum_capability_names_the_rule():
    config = {"quantization": "mxfp4", "dtype": "half", **SHORT}
    verdict = check("vllm", config, machine=Machine.read(LLAMA, "V100-32GB", 1))
    assert verdict.verdict == "reject"
    assert "vllm.quant.method-min-capability" in verdict.rules


@pytest.mark.parametrize(
    ("tp", "dp", "ep", "refused"),
    [
        (4, 2, False, True),  # 1536 / 8 = 192: not whole blocks of 128
        (2, 2, False, False),  # 1536 / 4 = 384
        (4, 2, True, False),  # experts whole on each rank
    ],
)
def test_the_moe_group_is_tensor_times_data_ranks(tp, dp, ep, refused):
    config = {
        "tensor-parallel-size": tp,
        "data-parallel-size": dp,
        "enable-expert-parallel": ep,
        "max-model-len": 8192,
    }
    verdict = check("vllm", config, machine=Machine.read(QWEN_FP8, "H200", tp * dp))
    assert (BLOCK_RULE in verdict.rules) is refused, (verdict.verdict, verdict.reasons)
    assert (verdict.verdict == "reject") is refused
