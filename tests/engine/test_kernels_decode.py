"""The CPU decode path (``engine.kernels.decode``) against the dense float64 oracle."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernels import FP8_DTYPE, AttentionMetadata, fp8_scale_for, paged_attention
from engine.kernels.decode import (
    Workspace,
    decode_attention,
    decode_plan,
    length_groups,
)
from tests.engine.test_kernels_oracle import build_case, dense_reference


def _decode(case, ws, window=None, sinks=0):
    m = case.meta
    plan = decode_plan(m.block_tables, m.context_lens, case.pool.shape[2], window, sinks, 0)
    scale = 1.0 / math.sqrt(case.query.shape[-1])
    return decode_attention(case.query, case.pool, plan, ws, scale=scale)


@settings(max_examples=40, deadline=None)
@given(
    ctx=st.lists(st.integers(1, 50), min_size=1, max_size=5),
    bs=st.sampled_from([1, 4, 16]),
    hkv=st.sampled_from([1, 2, 4, 6]),
    group=st.sampled_from([1, 3]),
    window=st.one_of(st.none(), st.integers(2, 30)),
    sinks=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_decode_equals_dense_over_head_counts_and_windows(ctx, bs, hkv, group, window, sinks, seed):
    """Both product forms (block-diagonal up to 4 KV heads, per head above), windows and
    sinks scored with the plain query, over a NaN-filled pool with permuted blocks."""
    sinks = 0 if window is None else min(sinks, window - 1)
    case = build_case(
        torch.Generator().manual_seed(seed),
        ctx,
        [1] * len(ctx),
        tokens_per_block=bs,
        num_kv_heads=hkv,
        group=group,
        head_dim=8,
        fill=float("nan"),
    )
    out = _decode(case, Workspace(), window, sinks)
    torch.testing.assert_close(out, dense_reference(case, window, sinks), atol=1e-10, rtol=1e-10)


def test_workspace_reused_across_shapes_and_layers_stays_correct():
    """One workspace serves calls of different batch and key counts, in any order."""
    ws = Workspace()
    gen = torch.Generator().manual_seed(3)
    shapes = [[9, 30, 2], [40], [9, 30, 2], [5, 5, 5, 5, 5, 5], [40]]
    for ctx in shapes:
        case = build_case(
            gen, ctx, [1] * len(ctx), tokens_per_block=4, num_kv_heads=2, group=2, head_dim=8
        )
        for _ in range(2):  # two "layers" of one step share the workspace
            torch.testing.assert_close(
                _decode(case, ws), dense_reference(case), atol=1e-10, rtol=1e-10
            )


def test_dropped_out_of_window_blocks_are_masked_in_decode():
    gen = torch.Generator().manual_seed(11)
    case = build_case(
        gen, [20, 13], [1, 1], tokens_per_block=4, num_kv_heads=2, group=2, head_dim=8
    )
    m = case.meta
    tables = m.block_tables.clone()
    tables[0, :2] = -1  # positions 0-7 left a window of 8 at query 19
    tables[1, 0] = -1  # positions 0-3 left it at query 12
    # A -1 entry reads block 0: move block 0's data to a spare block, then poison it.
    used = set(tables[tables >= 0].tolist())
    if 0 in used:
        spare = next(i for i in range(case.pool.shape[1]) if i not in used)
        case.pool[:, spare] = case.pool[:, 0]
        tables[tables == 0] = spare
    case.pool[:, 0].fill_(float("nan"))
    plan = decode_plan(tables, m.context_lens, 4, 8, 0, 0)
    out = decode_attention(case.query, case.pool, plan, Workspace(), scale=8**-0.5)
    torch.testing.assert_close(out, dense_reference(case, window=8), atol=1e-10, rtol=1e-10)


def test_sink_bubble_slots_are_never_seen():
    """Sinks 3 with blocks of 4: one bubble slot after the sinks, filled with NaN."""
    bs, sinks, bubble, window = 4, 3, 1, 9
    gen = torch.Generator(device="cpu").manual_seed(5)
    ctx = [14, 6]
    k = [torch.randn(n, 1, 8, generator=gen, dtype=torch.float64) for n in ctx]
    v = [torch.randn(n, 1, 8, generator=gen, dtype=torch.float64) for n in ctx]
    pool = torch.full((2, 10, bs, 1, 8), float("nan"), dtype=torch.float64)
    tables = [[2, 7, 1, 4], [6, 0]]
    for b, n in enumerate(ctx):
        for p in range(n):
            c = p if p < sinks else p + bubble
            pool[0, tables[b][c // bs], c % bs] = k[b][p]
            pool[1, tables[b][c // bs], c % bs] = v[b][p]
    meta = AttentionMetadata.from_lists(
        block_tables=tables,
        context_lens=ctx,
        query_lens=[1, 1],
        tokens_per_block=bs,
        sliding_window=window,
        sink_tokens=sinks,
        sink_bubble=bubble,
    )
    q = torch.randn(2, 2, 8, generator=gen, dtype=torch.float64)
    plan = decode_plan(meta.block_tables, meta.context_lens, bs, window, sinks, bubble)
    out = decode_attention(q, pool, plan, Workspace(), scale=8**-0.5)
    from tests.engine.test_kernels_oracle import dense_attention

    for b, n in enumerate(ctx):
        ref = dense_attention(q[b : b + 1], k[b], v[b], torch.tensor([n - 1]), window, sinks)
        torch.testing.assert_close(out[b : b + 1], ref, atol=1e-10, rtol=1e-10)


def test_paged_attention_takes_the_decode_path_on_cpu_and_agrees_with_the_padded_one():
    """The public entry point routes one-token steps to the decode path; a sink query
    (scored apart) keeps the padded SDPA path. Both agree with the oracle."""
    gen = torch.Generator().manual_seed(9)
    case = build_case(
        gen, [17, 3, 33], [1, 1, 1], tokens_per_block=4, num_kv_heads=2, group=4, head_dim=16
    )
    m = case.meta
    common = dict(max_query_len=1, plan_cache={}, workspace=Workspace())
    out = paged_attention(
        case.query, case.pool, m.block_tables, m.context_lens, m.query_start_loc, **common
    )
    assert any(isinstance(k, tuple) and k[0] == "decode" for k in common["plan_cache"])
    torch.testing.assert_close(out, dense_reference(case), atol=1e-10, rtol=1e-10)
    out = paged_attention(
        case.query,
        case.pool,
        m.block_tables,
        m.context_lens,
        m.query_start_loc,
        sliding_window=10,
        sink_tokens=2,
        sink_query=case.sink_query,
        max_query_len=1,
    )
    ref = dense_reference(case, window=10, sinks=2, use_sink_query=True)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("hkv", [2, 5])
def test_fp8_pool_in_decode_within_tolerance(hkv):
    gen = torch.Generator().manual_seed(4)
    amax = 4.0
    case = build_case(
        gen,
        [21, 9],
        [1, 1],
        tokens_per_block=4,
        num_kv_heads=hkv,
        group=2,
        head_dim=16,
        dtype=torch.float32,
        cache_dtype=FP8_DTYPE,
        k_scale=fp8_scale_for(amax),
        v_scale=fp8_scale_for(amax),
    )
    m = case.meta
    plan = decode_plan(m.block_tables, m.context_lens, 4, None, 0, 0)
    scale = fp8_scale_for(amax)
    out = decode_attention(
        case.query.float(), case.pool, plan, Workspace(), scale=0.25, k_scale=scale, v_scale=scale
    )
    ref = dense_reference(case).float()
    torch.testing.assert_close(out, ref, atol=0.15, rtol=0.1)


def test_length_groups_split_only_where_padding_costs_more_than_a_call():
    assert length_groups([5, 5, 5, 5]) == [[0, 1, 2, 3]]
    assert length_groups([1, 40, 2, 41], cost=10) == [[0, 2], [1, 3]]
    assert length_groups([1, 3, 2], cost=10) == [[0, 2, 1]]  # saving 4 pairs < cost
    groups = length_groups([1, 2, 30, 31, 60, 61, 90, 91], cost=5)
    assert len(groups) == 4 and sorted(i for g in groups for i in g) == list(range(8))
    assert length_groups([]) == []


def test_grouped_decode_of_very_different_lengths_equals_dense():
    ctx = [3, 200, 5, 190, 7, 120]
    case = build_case(
        torch.Generator().manual_seed(21),
        ctx,
        [1] * len(ctx),
        tokens_per_block=4,
        num_kv_heads=2,
        group=2,
        head_dim=8,
        fill=float("nan"),
    )
    m = case.meta
    plan = decode_plan(m.block_tables, m.context_lens, 4, None, 0, 0)
    assert len(plan.groups) > 1
    ws = Workspace()
    for _ in range(2):  # two layers of one step
        out = decode_attention(case.query, case.pool, plan, ws, scale=8**-0.5)
        torch.testing.assert_close(out, dense_reference(case), atol=1e-10, rtol=1e-10)
