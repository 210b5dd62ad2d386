"""Dense attention oracle and paged-case builder shared by the kernel tests (no tests here)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.kernels import AttentionMetadata, store_kv


def dense_attention(q, k, v, q_pos, window=None, sinks=0, q_sink=None, scale=None):
    """Loop-free but SDPA-free oracle for one sequence.

    q: [nq, Hq, D]; k, v: [nk, Hkv, D] (key j at position j); q_pos: [nq] positions.
    Sink keys (j < sinks, with a window) are scored with ``q_sink`` when given.
    """
    nq, hq, dim = q.shape
    nk, hkv, _ = k.shape
    group = hq // hkv
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    kk = k.repeat_interleave(group, dim=1)
    vv = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, kk) * scale
    j = torch.arange(nk)[None, :]
    i = q_pos[:, None]
    visible = j <= i
    if window is not None:
        visible &= (j < sinks) | (i - j < window - sinks)
        if q_sink is not None and sinks > 0:
            sink_scores = torch.einsum("qhd,khd->hqk", q_sink, kk) * scale
            scores = torch.where((j < sinks)[None], sink_scores, scores)
    scores = scores.masked_fill(~visible[None], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqk,khd->qhd", probs, vv)


@dataclass
class PagedCase:
    pool: torch.Tensor
    meta: AttentionMetadata
    query: torch.Tensor
    sink_query: torch.Tensor
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    q_positions: list[torch.Tensor]


def build_case(
    gen: torch.Generator,
    ctx_lens: list[int],
    q_lens: list[int],
    *,
    tokens_per_block: int,
    num_kv_heads: int,
    group: int,
    head_dim: int,
    dtype: torch.dtype = torch.float64,
    cache_dtype: torch.dtype | None = None,
    spare_blocks: int = 3,
    sliding_window: int | None = None,
    sink_tokens: int = 0,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    fill: float = 0.0,
) -> PagedCase:
    """Random K/V per sequence stored through randomly permuted block tables."""
    cache_dtype = dtype if cache_dtype is None else cache_dtype
    bs = tokens_per_block
    need = [-(-c // bs) for c in ctx_lens]
    num_blocks = sum(need) + spare_blocks
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    tables, cursor = [], 0
    for n in need:
        tables.append(perm[cursor : cursor + n])
        cursor += n
    # ``fill`` stands in for uninitialised pool memory (NaN must never leak into outputs).
    pool = torch.full((2, num_blocks, bs, num_kv_heads, head_dim), fill, dtype=cache_dtype)
    hq = num_kv_heads * group
    keys, values, q_positions = [], [], []
    for b, ctx in enumerate(ctx_lens):
        k = torch.randn(ctx, num_kv_heads, head_dim, generator=gen, dtype=torch.float64)
        v = torch.randn(ctx, num_kv_heads, head_dim, generator=gen, dtype=torch.float64)
        slots = torch.tensor([tables[b][p // bs] * bs + p % bs for p in range(ctx)])
        store_kv(k.to(dtype), v.to(dtype), pool, slots, k_scale, v_scale)
        keys.append(k)
        values.append(v)
        q_positions.append(torch.arange(ctx - q_lens[b], ctx))
    total_q = sum(q_lens)
    query = torch.randn(total_q, hq, head_dim, generator=gen, dtype=torch.float64)
    sink_query = torch.randn(total_q, hq, head_dim, generator=gen, dtype=torch.float64)
    meta = AttentionMetadata.from_lists(
        block_tables=tables,
        context_lens=ctx_lens,
        query_lens=q_lens,
        tokens_per_block=bs,
        sliding_window=sliding_window,
        sink_tokens=sink_tokens,
    )
    return PagedCase(pool, meta, query, sink_query, keys, values, q_positions)


def dense_reference(case: PagedCase, window=None, sinks=0, use_sink_query=False):
    """Concatenate per-sequence dense oracle outputs in packed order (float64)."""
    outs = []
    start = 0
    for k, v, pos in zip(case.keys, case.values, case.q_positions, strict=True):
        n = len(pos)
        q = case.query[start : start + n]
        qs = case.sink_query[start : start + n] if use_sink_query else None
        outs.append(dense_attention(q, k, v, pos, window, sinks, qs))
        start += n
    return torch.cat(outs)
