"""A checkpoint that declares its KV quantization (issue 31, class 2).

NVIDIA's ModelOpt FP8 and NVFP4 checkpoints write `kv_cache_quant_algo: FP8` into their
`quantization_config`. vLLM resolves `kv-cache-dtype: auto` from it
(`resolve_kv_cache_dtype_string`, vllm/utils/torch_utils.py, read in the 0.24.0 wheel; the
same function serves 0.33), so the KV cache is FP8. arbiter pinned the `auto` default and
"no KV quantization" beside the checkpoint's own fact and reported that "the setup facts
contradict the rules on their own", naming no rule."""

from __future__ import annotations

import json

import pytest

from arbiter import check
from arbiter.dialects.protocol import Machine

FIXTURE = "tests/fixtures/models/llama-3.3-70b-fp8.json"


def _model(kv_algo: str | None) -> dict:
    config = json.loads(open(FIXTURE).read())
    config["quantization_config"]["kv_cache_quant_algo"] = kv_algo
    return config


@pytest.fixture(scope="module")
def verdicts():
    out = {}
    for kv in (None, "FP8"):
        machine = Machine.read(_model(kv), "H100", 2)
        out[kv] = check("vllm", {"tensor-parallel-size": 2}, machine=machine)
    return out


def test_the_declared_kv_quantization_is_accepted_as_vllm_resolves_it(verdicts):
    verdict = verdicts["FP8"]
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.values["kv_cache_config.dtype"] == "fp8"
    assert verdict.resolution.values["quant_config.kv_cache_quant_algo"] == "FP8"


def test_the_fp8_kv_cache_holds_twice_the_tokens_of_the_bf16_one(verdicts):
    plain = verdicts[None].resolution.capacity
    fp8 = verdicts["FP8"].resolution.capacity
    assert 1.9 < fp8.kv_tokens / plain.kv_tokens < 2.1


def test_an_explicit_kv_dtype_still_wins(verdicts):
    machine = Machine.read(_model("FP8"), "H100", 2)
    verdict = check(
        "vllm", {"tensor-parallel-size": 2, "kv-cache-dtype": "bfloat16"}, machine=machine
    )
    # a bf16 cache against a checkpoint whose KV scales are FP8: whatever the verdict, it
    # is never a conflict of setup facts alone
    assert "contradict the rules on their own" not in " ".join(verdict.reasons)
