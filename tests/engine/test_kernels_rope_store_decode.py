"""The grouped decode kernel with RoPE and the K/V store in front
(``triton_paged.paged_decode_rope_store``, through ``fused.decode_rope_store``) against
the two launches it replaces (``fused.rope_store_``, then the grouped decode kernel): the
same output and the same pool, bit for bit, in fp32, fp16 and bf16, with windows, sinks
and a sink query, a padding row and slot -1; the fallback to the two launches where the
one kernel cannot run.

On CUDA; without a GPU Triton's interpreter runs them on CPU tensors (``TRITON_INTERPRET=1``,
set by the conftest when Triton is importable).
"""

from __future__ import annotations

import os

import pytest
import torch

from engine.kernels import fused, triton_paged
from engine.model.config import ModelArgs
from engine.model.rope import RotaryEmbedding
from tests.engine.test_kernels_oracle import build_case
from tests.engine.test_kernels_triton import BrokenKernel

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1" and triton_paged.triton_available()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    not ((torch.cuda.is_available() and triton_paged.triton_available()) or INTERPRET),
    reason="Triton kernels need CUDA (or TRITON_INTERPRET=1 with Triton installed)",
)
HKV, GROUP, DIM = 2, 3, 32
HQ = HKV * GROUP


def _step(dtype, ctx_lens, *, tokens_per_block=16, window=None, sinks=0, seed=0):
    """A decode step: the pool holding every sequence's earlier keys, the step's raw qkv
    rows, their cos/sin rows, slots, tables, lengths and a sink query."""
    gen = torch.Generator().manual_seed(seed)
    case = build_case(
        gen, ctx_lens, [1] * len(ctx_lens), tokens_per_block=tokens_per_block,
        num_kv_heads=HKV, group=GROUP, head_dim=DIM, dtype=torch.float32,
    )  # fmt: skip
    m = case.meta
    n = len(ctx_lens)
    qkv = torch.randn(n, (HQ + 2 * HKV) * DIM, generator=gen).to(DEVICE, dtype)
    args = ModelArgs(
        architecture="LlamaForCausalLM", hidden_size=HQ * DIM, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=HQ, num_key_value_heads=HKV,
        vocab_size=16, head_dim=DIM,
    )  # fmt: skip
    positions = torch.tensor([c - 1 for c in ctx_lens], device=DEVICE)
    cos, sin = RotaryEmbedding(args).cos_sin(positions, dtype)
    return dict(
        qkv=qkv, cos=cos, sin=sin, pool=case.pool.to(DEVICE, dtype),
        slots=m.slot_mapping.to(DEVICE), tables=m.block_tables.to(DEVICE),
        ctx=m.context_lens.to(DEVICE), window=window, sinks=sinks,
        sink_query=torch.randn(n, HQ, DIM, generator=gen).to(DEVICE, dtype),
    )  # fmt: skip


def _one_kernel(t, pool, qkv, use_sq, api=None):
    return (api or fused.decode_rope_store)(
        qkv, t["cos"], t["sin"], pool, t["slots"], t["tables"], t["ctx"],
        num_heads=HQ, num_kv_heads=HKV, head_dim=DIM, sliding_window=t["window"],
        sink_tokens=t["sinks"], sink_query=t["sink_query"] if use_sq else None,
    )  # fmt: skip


def _two_launches(t, pool, qkv, use_sq):
    fused.rope_store_(
        qkv, t["cos"], t["sin"], pool, t["slots"], num_heads=HQ, num_kv_heads=HKV, head_dim=DIM
    )
    return triton_paged.paged_decode(
        qkv[:, : HQ * DIM].view(-1, HQ, DIM), pool, t["tables"], t["ctx"], kernel="grouped",
        sliding_window=t["window"], sink_tokens=t["sinks"],
        sink_query=t["sink_query"] if use_sq else None,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    ("window", "sinks", "use_sq"), [(None, 0, False), (12, 0, False), (12, 3, True)]
)
def test_one_kernel_equals_rope_store_then_grouped_decode(dtype, window, sinks, use_sq):
    t = _step(dtype, [1, 37, 70, 16], window=window, sinks=sinks, seed=len(str(window)))
    pool_a, pool_b = t["pool"].clone(), t["pool"].clone()
    qkv_b = t["qkv"].clone()
    got = _one_kernel(t, pool_a, t["qkv"].clone(), use_sq)
    want = _two_launches(t, pool_b, qkv_b, use_sq)
    assert got.dtype == dtype and got.shape == (4, HQ, DIM)
    assert torch.equal(got, want)
    assert torch.equal(pool_a, pool_b)  # the same rotated keys and values stored
    assert not torch.equal(pool_a, t["pool"])  # and stored they were


def test_a_padding_row_stores_nothing_and_reads_nothing():
    """A CUDA-graph padding row: slot -1, context length 0 (zeros out)."""
    t = _step(torch.float32, [20, 33], seed=5)
    t["slots"] = t["slots"].clone()
    t["slots"][0] = -1
    t["ctx"] = t["ctx"].clone()
    t["ctx"][0] = 0
    pool = t["pool"].clone()
    out = _one_kernel(t, pool, t["qkv"].clone(), False)
    assert bool((out[0] == 0).all())
    want_pool = t["pool"].clone()
    want = _two_launches(t, want_pool, t["qkv"].clone(), False)
    assert torch.equal(pool, want_pool) and torch.equal(out, want)


def test_the_two_launches_serve_where_the_one_kernel_cannot(monkeypatch):
    """The per-head kernel chosen, or a first launch that fails (warned once): the two
    launches run instead, with the same result; once the kernel has run, a failure is
    raised as it is."""
    from engine.kernels import _triton_kernels

    t = _step(torch.float32, [9, 40], seed=2)
    want = _two_launches(t, t["pool"].clone(), t["qkv"].clone(), False)
    monkeypatch.setenv("ENGINE_TRITON_DECODE", "per-head")
    assert not triton_paged.rope_store_decode_ok(GROUP)
    one = triton_paged.paged_decode_rope_store
    assert _one_kernel(t, t["pool"].clone(), t["qkv"].clone(), False, one) is None
    got = _one_kernel(t, t["pool"].clone(), t["qkv"].clone(), False)
    torch.testing.assert_close(got, want, atol=2e-5, rtol=0)  # the per-head kernel
    monkeypatch.delenv("ENGINE_TRITON_DECODE")
    assert not triton_paged.rope_store_decode_ok(1)  # no GQA group: per-head anyway
    broken = BrokenKernel("out of shared memory")
    monkeypatch.setattr(_triton_kernels, "paged_decode_rope_store_kernel", broken)
    monkeypatch.setitem(triton_paged._ROPE_STORE, "ran", False)
    monkeypatch.setitem(triton_paged._ROPE_STORE, "failed", None)
    with pytest.warns(RuntimeWarning, match="RoPE and the K/V store failed to run"):
        got = _one_kernel(t, t["pool"].clone(), t["qkv"].clone(), False)
    assert torch.equal(got, want)
    assert triton_paged.rope_store_failure() == "RuntimeError: out of shared memory"
    assert not triton_paged.rope_store_decode_ok(GROUP)
    monkeypatch.setitem(triton_paged._ROPE_STORE, "ran", True)
    monkeypatch.setitem(triton_paged._ROPE_STORE, "failed", None)
    with pytest.raises(RuntimeError, match="out of shared memory"):
        _one_kernel(t, t["pool"].clone(), t["qkv"].clone(), False)


def test_bad_inputs_are_refused():
    t = _step(torch.float32, [9], seed=1)
    with pytest.raises(ValueError, match="pool must be contiguous and of qkv's dtype"):
        _one_kernel(t, t["pool"].half(), t["qkv"].clone(), False)
    with pytest.raises(ValueError, match="hold q, k and v heads"):
        _one_kernel(t, t["pool"].clone(), t["qkv"][:, : HQ * DIM].clone(), False)
