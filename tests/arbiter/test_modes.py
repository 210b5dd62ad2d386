"""Capacity modes (MLC's interactive, local, server) as objective stages of arbitrate()."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, InvalidClaim, arbitrate, func, perf, setup
from constraints.specs import DeviceSpec

BATCH = "build_config.max_batch_size"
PREFILL = "build_config.max_num_tokens"
KV = "kv_cache_config.max_tokens"
SEQ = "build_config.max_seq_len"


def test_interactive_serves_one_sequence():
    r = arbitrate([], mode="interactive")
    assert r.value(BATCH) == 1
    assert r.value(KV) == r.value(SEQ) == 8192
    assert r.value(PREFILL) == 8192
    assert r.stats["mode"] == "interactive"


def test_local_caps_batch_at_four_and_kv_at_8k():
    r = arbitrate([func("short", {SEQ: 4096})], mode="local")
    assert r.value(BATCH) == 4
    assert r.value(KV) == 4096 and r.value(PREFILL) == 4096
    r = arbitrate([func("long", {SEQ: 65536})], mode="local")
    # MLC caps local capacity at 8192 tokens (catalog M6) even when a sequence may be
    # longer: neither MLC nor TensorRT-LLM refuses a pool shorter than one sequence (the
    # first caps the sequence, the second clamps the window; rules-audit section 2)
    assert r.value(BATCH) == 4
    assert r.value(KV) == 8192 and r.value(PREFILL) == 8192
    assert r.capacity.clamped_to == 8192  # the pool holds 8192 tokens of the sequence


def test_server_fills_memory():
    r = arbitrate([], mode="server")
    assert r.value(BATCH) == 2048  # the profile's max batch size
    cap = r.capacity
    assert cap.limited_by == "memory" or cap.kv_tokens >= r.value(KV) - 32
    # the inferred capacity is what memory allows, to a block
    assert abs(cap.kv_tokens - r.value(KV)) < cap.tokens_per_block
    assert cap.headroom < cap.kv_bytes_per_token * cap.tokens_per_block


def test_modes_leave_fixed_options_alone():
    r = arbitrate([func("batch", {BATCH: 64}), func("chunk", {PREFILL: 4096})], mode="server")
    assert r.value(BATCH) == 64 and r.value(PREFILL) == 4096
    assert r.value(KV) <= 64 * r.value(SEQ)
    r = arbitrate([func("kv", {KV: 10000})], mode="server")
    assert r.value(KV) == 10000  # a user's capacity is used as is (MLC M8)


def test_a_target_the_perf_claims_rule_out_gives_way_to_the_nearest_value():
    r = arbitrate([perf("wide", {BATCH: {"ge": 8}}, weight=5)], mode="interactive")
    assert r.kept_names == ("wide",) and r.value(BATCH) == 8


def test_modes_change_nothing_else():
    plain = arbitrate([])
    for mode in ("interactive", "local", "server"):
        r = arbitrate([], mode=mode)
        changed = {c.path for c in r.changes}
        assert changed <= {BATCH, PREFILL, KV}, (mode, changed)
    assert plain.changes == ()


def test_server_on_a_small_gpu_and_determinism():
    l4 = setup("gpu", DeviceSpec.named("L4").facts())
    a = arbitrate([l4], mode="server")
    b = arbitrate([l4], mode="server")
    assert a.values == b.values
    # the default profile's terms are TensorRT-LLM's: its fraction of the memory the
    # weights and workspace leave (tensorrt_llm/_torch/pyexecutor/_util.py
    # KvCacheCreator._cal_max_memory), 0.1 x (weights + workspace) more pool than a
    # fraction of the whole L4 left (under 40,000 tokens then, 41,669 now)
    assert 0 < a.value(KV) < 45000


def test_mode_conflicts_still_explain_memory():
    with pytest.raises(ConflictError) as err:
        arbitrate(
            [
                setup("gpu", {"device.memory_mib": 8192}),
                func(
                    "one_gpu",
                    {
                        "parallel_config.tensor_parallel_size": 1,
                        "parallel_config.pipeline_parallel_size": 1,
                    },
                ),
                func("bf16", {"quant_config.quant_algo": None}),
            ],
            mode="server",
        )
    assert "memory" in str(err.value)


def test_unknown_mode_and_profile():
    with pytest.raises(InvalidClaim, match="unknown mode 'batch'"):
        arbitrate([], mode="batch")
    with pytest.raises(InvalidClaim, match="unknown profile"):
        arbitrate([], profile="trtllm-0.9")
