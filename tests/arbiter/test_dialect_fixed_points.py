"""Generated vLLM and SGLang configs: whatever the verdict, checking it twice gives the
same answer. A config that is accepted is written back as the user wrote it; one that is
adjusted is written back with the adjustment, and checking that again accepts it
unchanged (read -> write -> read is a fixed point); a refusal names a reason."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from arbiter.engines.sglang.native import check_sglang
from arbiter.engines.vllm.native import check_vllm

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests/fixtures/models/llama-3.1-8b.json"


def _optional(**fields: st.SearchStrategy) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({}, optional=fields)


VLLM = _optional(
    **{
        "max-num-seqs": st.sampled_from([1, 16, 128, 256, 1024]),
        "max-num-batched-tokens": st.sampled_from([512, 2048, 8192, "4K"]),
        "max-model-len": st.sampled_from([1024, 8192, 131072]),
        "gpu-memory-utilization": st.sampled_from([0.5, 0.85, 0.95]),
        "block-size": st.sampled_from([16, 32]),
        "enable-prefix-caching": st.booleans(),
        "enable-chunked-prefill": st.booleans(),
        "kv-cache-dtype": st.sampled_from(["auto", "fp8", "fp8_e5m2"]),
        "tensor-parallel-size": st.sampled_from([1, 2, 4]),
        "enforce-eager": st.booleans(),
        "dtype": st.sampled_from(["auto", "bfloat16", "float16"]),
        "compilation-config": st.sampled_from(
            [{"max_cudagraph_capture_size": 64}, {"max_cudagraph_capture_size": 2048}]
        ),
        "speculative-config": st.sampled_from(
            [
                '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}',
                '{"method":"ngram","num_speculative_tokens":5}',
            ]
        ),
    }
)

SGLANG = _optional(
    **{
        "tp-size": st.sampled_from([1, 2, 4]),
        "dp-size": st.sampled_from([1, 2]),
        "page-size": st.sampled_from([1, 16, 32]),
        "mem-fraction-static": st.sampled_from([0.7, 0.88]),
        "max-running-requests": st.sampled_from([16, 256]),
        "chunked-prefill-size": st.sampled_from([-1, 2048, 8192]),
        "context-length": st.sampled_from([4096, 8192]),
        "kv-cache-dtype": st.sampled_from(["auto", "fp8_e5m2"]),
        "disable-radix-cache": st.booleans(),
        "cuda-graph-max-bs-decode": st.sampled_from([8, 160]),
        "enable-mixed-chunk": st.booleans(),
        "schedule-policy": st.sampled_from(["fcfs", "lpm"]),
        "speculative-algorithm": st.sampled_from(["NGRAM", "EAGLE"]),
    }
)


def _stable(check, config: dict) -> None:
    first = check(config)
    event(first.verdict)
    assert first.verdict in ("accept", "adjust", "reject")
    if first.verdict == "reject":
        assert first.reasons
        assert check(config).reasons == first.reasons  # the same refusal again
        return
    if first.verdict == "accept":
        assert first.config == config, "an accepted config is written back as it was given"
    again = check(first.config)
    assert again.verdict == "accept", (first.config, again.reasons, again.changes)
    assert again.config == first.config


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VLLM)
def test_vllm_verdicts_are_fixed_points(config):
    _stable(lambda c: check_vllm(c, model=LLAMA, device="H100", gpus=4), config)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SGLANG)
def test_sglang_verdicts_are_fixed_points(config):
    _stable(lambda c: check_sglang(c, model=LLAMA, device="H100", gpus=4), config)
