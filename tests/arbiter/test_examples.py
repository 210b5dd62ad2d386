"""The example configurations in examples/ and their expected outcomes, through
`arbiter check` (exit 0: solved, with the changes; exit 1: the conflict report)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LLAMA = "models/llama-3-8b.json"

# file, dialect, model, device, engine, exit code, strings the output must contain
CASES = [
    (
        "trtllm/reuse_on_volta.yaml",
        "trtllm",
        LLAMA,
        "V100-32GB",
        None,
        1,
        ["llm_args.kv_cache_config.enable_block_reuse", "device.pre-ampere-no-block-reuse"],
    ),
    (
        "trtllm/streamingllm.yaml",
        "trtllm",
        LLAMA,
        "A100-80GB",
        None,
        0,
        [
            "streamingllm: true",
            "use_paged_context_fmha: false",
            "dropped default.enable_block_reuse",
        ],
    ),
    (
        "trtllm/streamingllm_with_reuse.yaml",
        "trtllm",
        LLAMA,
        "A100-80GB",
        None,
        1,
        ["kv.streamingllm-no-block-reuse"],
    ),
    (
        "trtllm/int8_kv_with_reuse.yaml",
        "trtllm",
        LLAMA,
        "A100-80GB",
        None,
        1,
        ["attention.int8-kv-no-paged-context-fmha", "kv.reuse-needs-paged-context-fmha"],
    ),
    (
        "trtllm/eagle_fp8_h100.yaml",
        "trtllm",
        LLAMA,
        "H100-80GB",
        None,
        0,
        ["decoding_type: Eagle", "use_fp8_context_fmha: true", "capacity: KV pool"],
    ),
    (
        "trtllm/long_prompt_unchunked.yaml",
        "trtllm",
        LLAMA,
        "H100-80GB",
        None,
        1,
        ["runtime.unchunked-prompt-fits-token-budget"],
    ),
    (
        "trtllm/long_prompt.yaml",
        "trtllm",
        LLAMA,
        "H100-80GB",
        None,
        0,
        ["enable_chunked_prefill: true", "scheduler_config.enable_chunked_context: False -> True"],
    ),
    (
        "trtllm/long_context_l4.yaml",
        "trtllm",
        LLAMA,
        "L4",
        None,
        0,
        # TensorRT-LLM's fraction of the memory the weights leave on the L4
        # (KvCacheCreator._cal_max_memory / calculateFreeMemBytes): 41664 tokens, 27872
        # when the fraction was taken of the whole device
        ["one sequence of 131072 tokens does not fit", "clamped to 41664 tokens"],
    ),
    (
        "trtllm/engine_fp16_no_paged_fmha",
        "trtllm",
        None,
        "A100-80GB",
        None,
        0,
        ["tokens_per_block: 128", "dropped default.enable_block_reuse"],
    ),
    (
        "trtllm/engine_runtime_reuse.yaml",
        "trtllm",
        None,
        "A100-80GB",
        "trtllm/engine_fp16_no_paged_fmha",
        1,
        ["kv.reuse-needs-paged-context-fmha"],
    ),
    (
        "mlc/server_llama3_h100.json",
        "mlc",
        LLAMA,
        "H100-80GB",
        None,
        0,
        [
            '"max_total_sequence_length": 420162',
            '"prefill_chunk_size": 8192',
            '"max_num_sequence": 128',
        ],
    ),
    (
        "mlc/eagle_hybrid.json",
        "mlc",
        LLAMA,
        "H100-80GB",
        None,
        0,
        ['"prefill_mode": "chunked"', "mlc.speculative-needs-chunked-prefill"],
    ),
    (
        "mlc/interactive_l4.json",
        "mlc",
        "models/mistral-7b-v0.3.json",
        "L4",
        None,
        0,
        ['"max_num_sequence": 1', '"max_total_sequence_length": 16384'],
    ),
    (
        "trtllm/moe_attention_dp.yaml",
        "trtllm",
        LLAMA,
        "H100-80GB",
        None,
        0,
        ["# not arbitrated (written back as given): print_iter_log", "decoding_type: MTP"],
    ),
    (
        "trtllm/moe_bad_grid.yaml",
        "trtllm",
        LLAMA,
        "H100-80GB",
        None,
        1,
        ["moe.grid-equals-tensor-parallel"],
    ),
    (
        "mlc/server_user_capacity_l4.json",
        "mlc",
        LLAMA,
        "L4",
        None,
        0,
        ['"max_total_sequence_length": 524288', "limited by memory"],
    ),
]


# The release line each TensorRT-engine example is written for (`--profile`); the others
# take the dialect's: trtllm-1.2 (PyTorch), trtllm-tensorrt for a prebuilt engine, mlc.
# The pre-Ampere limits belong to the 0.9-0.12 LLM API; plugins and StreamingLLM to engines.
PROFILE = {
    "trtllm/reuse_on_volta.yaml": "trtllm-0.10",
    "trtllm/streamingllm.yaml": "trtllm-tensorrt",
    "trtllm/streamingllm_with_reuse.yaml": "trtllm-tensorrt",
    "trtllm/int8_kv_with_reuse.yaml": "trtllm-tensorrt",
    "trtllm/eagle_fp8_h100.yaml": "trtllm-tensorrt",
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_example(case):
    file, dialect, model, device, engine, code, wanted = case
    # --verbose: the derivation (arbiter's options and the solve's changes) is what the
    # cases assert; the default, engine-word text is held by tests/arbiter/test_engine_words.py
    args = ["check", str(EXAMPLES / file), "--dialect", dialect, "--device", device, "-v"]
    if file in PROFILE:
        args += ["--profile", PROFILE[file]]
    if model:
        args += ["--model", str(EXAMPLES / model)]
    if engine:
        args += ["--engine", str(EXAMPLES / engine)]
    result = CliRunner().invoke(app, args)
    output = result.output + (result.stderr if result.stderr_bytes else "")
    assert result.exit_code == code, output
    for text in wanted:
        assert text in output, (text, output)


def test_there_are_at_least_ten_examples():
    assert len(CASES) >= 10
    files = {c[0] for c in CASES}
    for path in (EXAMPLES / "trtllm").iterdir():
        assert f"trtllm/{path.name}" in files
    for path in (EXAMPLES / "mlc").iterdir():
        assert f"mlc/{path.name}" in files


def test_bad_input_exits_2():
    result = CliRunner().invoke(
        app, ["check", str(EXAMPLES / "models/llama-3-8b.json"), "--dialect", "trtllm"]
    )
    assert result.exit_code == 2
    result = CliRunner().invoke(
        app, ["check", str(EXAMPLES / "mlc/eagle_hybrid.json"), "--dialect", "vllm"]
    )
    assert result.exit_code == 2
