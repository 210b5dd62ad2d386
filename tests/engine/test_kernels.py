"""Reference paged attention against a dense oracle (float64), plus low-precision caches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernels import (
    FP8_DTYPE,
    AttentionMetadata,
    fp8_scale_for,
    paged_attention,
    select_backend,
    store_kv,
    visibility_mask,
)
from engine.kernels.reference import gather_kv
from tests.engine.test_kernels_oracle import build_case, dense_reference


def _run(case, window=None, sinks=0, use_sink_query=False, dtype=None):
    m = case.meta
    q = case.query if dtype is None else case.query.to(dtype)
    sq = case.sink_query if dtype is None else case.sink_query.to(dtype)
    return paged_attention(
        q,
        case.pool,
        m.block_tables,
        m.context_lens,
        m.query_start_loc,
        max_query_len=m.max_query_len,
        sliding_window=window,
        sink_tokens=sinks,
        sink_query=sq if use_sink_query else None,
    )


@st.composite
def attention_cases(draw):
    num_seqs = draw(st.integers(1, 3))
    ctx = [draw(st.integers(1, 40)) for _ in range(num_seqs)]
    decode = draw(st.booleans())
    q_lens = [1 if decode else draw(st.integers(1, c)) for c in ctx]
    window = draw(st.one_of(st.none(), st.integers(2, 24)))
    sinks = 0 if window is None else draw(st.integers(0, min(4, window - 1)))
    return dict(
        ctx=ctx,
        q_lens=q_lens,
        bs=draw(st.sampled_from([1, 2, 4, 16])),
        hkv=draw(st.sampled_from([1, 2])),
        group=draw(st.sampled_from([1, 2, 4])),
        dim=draw(st.sampled_from([8, 16])),
        window=window,
        sinks=sinks,
        sink_query=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


@settings(max_examples=60)
@given(attention_cases())
def test_paged_equals_dense_float64(c):
    gen = torch.Generator().manual_seed(c["seed"])
    case = build_case(
        gen,
        c["ctx"],
        c["q_lens"],
        tokens_per_block=c["bs"],
        num_kv_heads=c["hkv"],
        group=c["group"],
        head_dim=c["dim"],
        fill=float("nan"),
    )
    out = _run(case, c["window"], c["sinks"], c["sink_query"])
    ref = dense_reference(case, c["window"], c["sinks"], c["sink_query"])
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_mixed_prefill_chunk_and_decode_in_one_batch():
    gen = torch.Generator().manual_seed(1)
    # A whole prompt, a chunk continuing a 13-token cached prefix, and a decode step.
    case = build_case(
        gen, [9, 20, 31], [9, 7, 1], tokens_per_block=4, num_kv_heads=2, group=3, head_dim=16
    )
    assert case.meta.is_prefill
    torch.testing.assert_close(_run(case), dense_reference(case), atol=1e-10, rtol=0)


def test_visibility_rule_with_window_and_sinks():
    # W=4 with S=1: query 5 sees the sink 0 and the last W - S = 3 keys (3, 4, 5).
    row = visibility_mask(torch.tensor(5), torch.arange(8), window=4, sinks=1)
    assert row.nonzero().flatten().tolist() == [0, 3, 4, 5]
    full = visibility_mask(torch.tensor(5), torch.arange(8), window=None, sinks=0)
    assert full.nonzero().flatten().tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="must exceed"):
        visibility_mask(torch.tensor(5), torch.arange(8), window=2, sinks=2)


def test_dropped_out_of_window_blocks_are_masked():
    gen = torch.Generator().manual_seed(2)
    window, sinks, bs = 8, 2, 4
    case = build_case(gen, [30], [1], tokens_per_block=bs, num_kv_heads=1, group=2, head_dim=8)
    before = _run(case, window, sinks)
    # Query 29 sees 0, 1 (block 0) and 23..29 (blocks 5..7); drop blocks 1..4 and poison them.
    dropped = case.meta.block_tables[0, 1:5].clone()
    case.meta.block_tables[0, 1:5] = -1
    case.pool[:, dropped.long()] = float("nan")
    after = _run(case, window, sinks)
    torch.testing.assert_close(after, before, atol=0, rtol=0)
    torch.testing.assert_close(after, dense_reference(case, window, sinks), atol=1e-10, rtol=0)


def test_store_kv_skips_negative_slots():
    pool = torch.zeros(2, 3, 2, 1, 4)
    key = torch.ones(3, 1, 4)
    value = 2 * torch.ones(3, 1, 4)
    store_kv(key, value, pool, torch.tensor([5, -1, 0]))
    assert pool[0].reshape(6, 4).sum(-1).tolist() == [4, 0, 0, 0, 0, 4]
    assert pool[1].reshape(6, 4).sum(-1).tolist() == [8, 0, 0, 0, 0, 8]


@pytest.mark.parametrize(("dtype", "atol"), [(torch.float16, 3e-3), (torch.bfloat16, 3e-2)])
def test_half_precision_caches_within_tolerance(dtype, atol):
    gen = torch.Generator().manual_seed(3)
    case = build_case(
        gen,
        [33, 17],
        [33, 1],
        tokens_per_block=8,
        num_kv_heads=2,
        group=2,
        head_dim=16,
        dtype=dtype,
    )
    assert case.pool.dtype == dtype
    out = _run(case, 12, 2, dtype=dtype)
    assert out.dtype == dtype
    ref = dense_reference(case, 12, 2)
    err = (out.double() - ref).abs().max().item()
    assert err < atol
    assert err > 0  # the low-precision path really ran in low precision


def test_fp32_cache_with_fp32_queries():
    gen = torch.Generator().manual_seed(4)
    case = build_case(
        gen, [21], [5], tokens_per_block=4, num_kv_heads=2, group=2, head_dim=8,
        dtype=torch.float32,
    )  # fmt: skip
    out = _run(case, dtype=torch.float32)
    torch.testing.assert_close(out.double(), dense_reference(case), atol=1e-5, rtol=0)


def test_fp8_round_trip_within_documented_error():
    """e4m3 keeps 3 mantissa bits: |x - deq(q(x))| <= 2**-4 |x| + 2**-9 * scale
    (relative rounding on normal numbers; the subnormal step below that)."""
    gen = torch.Generator().manual_seed(5)
    k = 3 * torch.randn(12, 2, 16, generator=gen)
    v = 0.2 * torch.randn(12, 2, 16, generator=gen)
    k_scale, v_scale = fp8_scale_for(k.abs().max()), fp8_scale_for(v.abs().max())
    pool = torch.zeros(2, 3, 4, 2, 16, dtype=FP8_DTYPE)
    store_kv(k, v, pool, torch.arange(12), k_scale, v_scale)
    table = torch.tensor([[0, 1, 2]])
    k_back, v_back, _ = gather_kv(pool, table, 3, torch.float32, k_scale, v_scale)
    k_back = k_back.transpose(1, 2)[0]
    v_back = v_back.transpose(1, 2)[0]
    assert (k_back - k).abs().le(k.abs() * 2**-4 + k_scale * 2**-9 + 1e-7).all()
    assert (v_back - v).abs().le(v.abs() * 2**-4 + v_scale * 2**-9 + 1e-7).all()
    assert not torch.equal(k_back, k)  # really quantized
    # The largest magnitude lands on e4m3's maximum exactly.
    assert k_back.abs().max().item() == pytest.approx(k.abs().max().item(), rel=2**-4)


def test_fp8_cache_attention_within_tolerance():
    gen = torch.Generator().manual_seed(6)
    kw = dict(tokens_per_block=4, num_kv_heads=2, group=2, head_dim=16)
    exact = build_case(gen, [25, 9], [1, 9], **kw)
    # Same data in an fp8 pool with a calibrated per-layer scale (randn: |x| < 6).
    gen = torch.Generator().manual_seed(6)
    scale = fp8_scale_for(6.0)
    quant = build_case(
        gen, [25, 9], [1, 9], cache_dtype=FP8_DTYPE, k_scale=scale, v_scale=scale, **kw
    )
    m = quant.meta
    out = paged_attention(
        quant.query.float(),
        quant.pool,
        m.block_tables,
        m.context_lens,
        m.query_start_loc,
        k_scale=scale,
        v_scale=scale,
    )
    ref = dense_reference(exact)
    err = (out.double() - ref).abs().max().item()
    assert 0 < err < 0.1


def test_metadata_positions_and_slots():
    meta = AttentionMetadata.from_lists(
        block_tables=[[7, 2], [4]], context_lens=[6, 3], query_lens=[2, 1], tokens_per_block=4
    )
    assert meta.slot_mapping.tolist() == [2 * 4 + 0, 2 * 4 + 1, 4 * 4 + 2]
    assert meta.query_positions().tolist() == [4, 5, 2]
    assert meta.last_token_indices().tolist() == [1, 2]
    assert meta.block_tables.tolist() == [[7, 2], [4, -1]]
    assert meta.is_prefill
    with pytest.raises(ValueError, match="short"):
        AttentionMetadata.from_lists(
            block_tables=[[1]], context_lens=[5], query_lens=[1], tokens_per_block=4
        )


def test_select_backend_from_plugin_options():
    cpu = select_backend(use_paged_context_fmha=True, device="cpu", triton_ok=True)
    assert (cpu.decode, cpu.prefill) == ("reference", "reference")
    fused = select_backend(use_paged_context_fmha=True, device="cuda", triton_ok=True)
    assert (fused.decode, fused.prefill) == ("triton", "triton")
    unpaged = select_backend(use_paged_context_fmha=False, device="cuda", triton_ok=True)
    assert (unpaged.decode, unpaged.prefill) == ("triton", "reference")
    unfused = select_backend(
        use_paged_context_fmha=True, context_fmha=False, device="cuda", triton_ok=True
    )
    assert unfused.prefill == "reference"
    no_triton = select_backend(use_paged_context_fmha=True, device="cuda", triton_ok=False)
    assert (no_triton.decode, no_triton.prefill) == ("reference", "reference")


def test_backend_attention_dispatch_on_cpu_matches_reference():
    gen = torch.Generator().manual_seed(7)
    case = build_case(gen, [10, 5], [1, 1], tokens_per_block=2, num_kv_heads=1, group=2, head_dim=8)
    backend = select_backend(use_paged_context_fmha=True, device="cuda", triton_ok=True)
    # CPU tensors: the Triton choice falls back to the reference per call.
    out = backend.attention(case.query, case.pool, case.meta)
    torch.testing.assert_close(out, dense_reference(case), atol=1e-10, rtol=0)
