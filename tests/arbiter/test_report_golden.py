"""Golden reports for canonical conflicts: text for each, markdown and json for a few.

Regenerate after an intended change with `ARBITER_UPDATE_GOLDEN=1 pytest
tests/arbiter/test_report_golden.py` and read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arbiter import ConflictError, arbitrate, func, perf, setup
from arbiter.explain import explain

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ARBITER_UPDATE_GOLDEN") == "1"

STREAMING = func("streamingllm", {"plugin_config.streamingllm": True}, source="serve.yaml:3")
REUSE = func("block_reuse", {"kv_cache_config.enable_block_reuse": True}, source="serve.yaml:4")

CASES = {
    "streamingllm_vs_block_reuse": [STREAMING, REUSE],
    "beam_search_vs_block_reuse": [func("beam_search", {"build_config.max_beam_width": 4}), REUSE],
    "int8_kv_vs_chunked_context": [
        func("int8_kv", {"quant_config.kv_cache_quant_algo": "INT8"}),
        func("chunked_context", {"scheduler_config.enable_chunked_context": True}),
    ],
    "speculative_token_budget": [
        func(
            "medusa",
            {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 4},
        ),
        func("batch", {"build_config.max_batch_size": 64}),
        func("budget", {"build_config.max_num_tokens": 256}),
    ],
    "pre_ampere_bfloat16": [
        setup("gpu", {"device.sm": 75}, source="nvidia-smi"),
        func("bf16", {"build_config.dtype": "bfloat16"}),
    ],
    "two_independent_conflicts": [
        STREAMING,
        REUSE,
        func(
            "medusa",
            {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 4},
        ),
        func("batch", {"build_config.max_batch_size": 64}),
        func("budget", {"build_config.max_num_tokens": 256}),
    ],
    "three_claim_chain": [
        func("chunked_context", {"scheduler_config.enable_chunked_context": True}),
        func("fp8_kv", {"quant_config.kv_cache_quant_algo": "FP8"}),
        func("no_fp8_fmha", {"plugin_config.use_fp8_context_fmha": False}),
    ],
    "memory_overflow": [
        setup("gpu", {"device.memory_mib": 8192, "device.sm": 89}, source="nvidia-smi"),
        func("bf16_weights", {"quant_config.quant_algo": None}),
        func(
            "one_gpu",
            {
                "parallel_config.tensor_parallel_size": 1,
                "parallel_config.pipeline_parallel_size": 1,
            },
        ),
    ],
    "dropped_perf_claims": [
        func("beam_search", {"build_config.max_beam_width": 4}),
        perf("block_reuse", {"kv_cache_config.enable_block_reuse": True}, weight=3),
        perf("chunked_context", {"scheduler_config.enable_chunked_context": True}, priority=1),
        perf("no_paged_fmha", {"plugin_config.use_paged_context_fmha": False}, weight=2),
    ],
}
EXTRA_FORMATS = {"streamingllm_vs_block_reuse", "speculative_token_budget", "dropped_perf_claims"}
# the profile each case is a conflict under: TensorRT-engine rules need the TensorRT line,
# beam search x block reuse the 0.9-0.12 LLM API; the rest hold on the default (1.2)
PROFILE = {
    "streamingllm_vs_block_reuse": "trtllm-tensorrt",
    "int8_kv_vs_chunked_context": "trtllm-tensorrt",
    "speculative_token_budget": "trtllm-tensorrt",
    "two_independent_conflicts": "trtllm-tensorrt",
    "three_claim_chain": "trtllm-tensorrt",
    "beam_search_vs_block_reuse": "trtllm-0.10",
    "dropped_perf_claims": "trtllm-0.10",
}


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"golden file {path} is missing; run with ARBITER_UPDATE_GOLDEN=1")
        path.write_text(text)
        return
    assert text == path.read_text(), f"{name} differs from its golden file"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_reports(case):
    explanation = explain(CASES[case], profile=PROFILE.get(case))
    check(f"{case}.txt", explanation.render("text"))
    if case in EXTRA_FORMATS:
        check(f"{case}.md", explanation.render("markdown"))
        check(f"{case}.json", explanation.render("json"))


def test_conflict_error_report_is_the_same_explanation():
    with pytest.raises(ConflictError) as err:
        arbitrate(CASES["streamingllm_vs_block_reuse"], profile="trtllm-tensorrt")
    assert err.value.report("text") == (GOLDEN / "streamingllm_vs_block_reuse.txt").read_text()
    assert {fix for fix in err.value.corrections} == {("block_reuse",), ("streamingllm",)}


def test_resolution_explain_matches_the_golden_drop_report():
    resolution = arbitrate(CASES["dropped_perf_claims"], profile="trtllm-0.10")
    assert resolution.explain("text") == (GOLDEN / "dropped_perf_claims.txt").read_text()
