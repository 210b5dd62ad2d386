"""TensorRT-LLM's `fail_fast_on_attention_window_too_large`: without it a sequence that
does not fit clamps the attention window (the capacity report says so); with it the
engine raises, and so does arbitration (memory.fail-fast-needs-one-sequence)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter import ConflictError
from arbiter.application.check import check_file

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
ARGS = {"backend": "tensorrt", "max_seq_len": 131072}


def _model(name: str) -> dict:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return data


def _check(model: str = "llama-3.1-8b", device: str = "L4", **extra):
    return check_file({**ARGS, **extra}, "trtllm", model=_model(model), device=device)


def test_the_window_is_clamped_by_default():
    resolution, _, _ = _check()
    assert 0 < resolution.capacity.clamped_to < 131072


def test_fail_fast_needs_a_configuration_that_holds_one_sequence():
    # left free, the arbiter finds one (a window, FP8 KV or a larger fraction): no clamp
    resolution, _, _ = _check(fail_fast_on_attention_window_too_large=True)
    assert resolution.capacity.clamped_to == 0
    # Llama-3.3-70B FP8 on one H100 at the engine's fraction and the full window: no KV
    # precision holds a 128k sequence beside 66 GiB of weights, so it is a memory conflict
    # TensorRT-LLM takes its fraction of what the weights and workspace leave
    # (constraints/engines/trtllm/memory.py): 0.9 x 11 GiB would hold a 128k sequence in
    # NVFP4 KV (10 GiB) if the solver could shrink the batch and the token budget; the
    # engine runs its defaults for them (2048 sequences, 8192 tokens), which leave 8.4 GiB
    pinned = {"free_gpu_memory_fraction": 0.9, "max_attention_window": [131072]}
    big = {
        "model": "llama-3.3-70b-fp8",
        "device": "H100",
        "kv_cache_config": pinned,
        "max_batch_size": 2048,
        "max_num_tokens": 8192,
    }
    with pytest.raises(ConflictError) as err:
        _check(fail_fast_on_attention_window_too_large=True, **big)
    rules = {r for c in err.value.conflicts for r in c.rules}
    assert "memory.fail-fast-needs-one-sequence" in rules
    assert "llm_args.fail_fast_on_attention_window_too_large" in str(err.value)
    # without fail-fast the same configuration runs, its window clamped
    resolution, _, _ = _check(**big)
    assert 0 < resolution.capacity.clamped_to < 131072
