"""A mixed step attended in runs (``engine.kernels.segments``) equals the dense oracle."""

from __future__ import annotations

import torch

from engine.kernels import AttentionBackend
from engine.kernels.segments import segments
from tests.engine.test_kernels_oracle import build_case, dense_reference


def _step_kv(case):
    """This step's own K/V rows in packed order (the last ``q_len`` keys of each sequence)."""
    ks, vs = [], []
    for k, v, pos in zip(case.keys, case.values, case.q_positions, strict=True):
        ks.append(k[pos])
        vs.append(v[pos])
    return torch.cat(ks), torch.cat(vs)


def test_fresh_prompts_chunks_and_decodes_in_one_step():
    # fresh prompt, continued chunk, fresh prompt, then three decodes
    ctx, q_lens = [12, 30, 7, 9, 21, 5], [12, 10, 7, 1, 1, 1]
    case = build_case(
        torch.Generator().manual_seed(2),
        ctx,
        q_lens,
        tokens_per_block=4,
        num_kv_heads=2,
        group=3,
        head_dim=8,
        fill=float("nan"),
    )
    kinds = [s.kind for s in segments(case.meta)]
    assert kinds == ["fresh", "chunk", "fresh", "decode"]
    key, value = _step_kv(case)
    backend = AttentionBackend()
    out = backend.attention(case.query, case.pool, case.meta, key=key, value=value)
    torch.testing.assert_close(out, dense_reference(case), atol=1e-10, rtol=1e-10)
    # without this step's K/V the same step goes through the pool only: same result
    again = backend.attention(case.query, case.pool, case.meta)
    torch.testing.assert_close(again, out, atol=1e-10, rtol=1e-10)


def test_a_window_keeps_the_pool_path():
    """With a sliding window the runs are not used (the fresh keys would ignore it)."""
    ctx, q_lens = [20, 3], [20, 1]
    case = build_case(
        torch.Generator().manual_seed(8),
        ctx,
        q_lens,
        tokens_per_block=4,
        num_kv_heads=1,
        group=2,
        head_dim=8,
    )
    key, value = _step_kv(case)
    out = AttentionBackend().attention(
        case.query, case.pool, case.meta, sliding_window=6, key=key, value=value
    )
    assert "segments" not in case.meta.plan_cache
    torch.testing.assert_close(out, dense_reference(case, window=6), atol=1e-10, rtol=1e-10)
