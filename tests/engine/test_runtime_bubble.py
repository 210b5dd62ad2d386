"""The sink bubble: positions past the sinks sit ``B`` slots later in the cache, and the
reference kernel maps them back and masks the empty bubble slots (dense fp64 oracle)."""

from __future__ import annotations

import pytest
import torch

from engine.kernels import AttentionBackend, AttentionMetadata, paged_attention, store_kv
from engine.kv import WindowLayout
from tests.engine.test_kernels_oracle import dense_attention


def _case(gen, ctx_lens, q_lens, bs, sinks, window, fill):
    layout = WindowLayout(bs, window, sinks)
    need = [layout.num_blocks_for(c) for c in ctx_lens]
    num_blocks = sum(need) + 2
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    tables, cursor = [], 0
    for n in need:
        tables.append(perm[cursor : cursor + n])
        cursor += n
    # Bubble slots are never written: whatever they hold must not reach the output.
    pool = torch.full((2, num_blocks, bs, 2, 8), fill, dtype=torch.float64)
    keys, values = [], []
    for table, ctx in zip(tables, ctx_lens, strict=True):
        k = torch.randn(ctx, 2, 8, generator=gen, dtype=torch.float64)
        v = torch.randn(ctx, 2, 8, generator=gen, dtype=torch.float64)
        slots = []
        for p in range(ctx):
            c = layout.cache_index(p)
            slots.append(table[c // bs] * bs + c % bs)
        store_kv(k, v, pool, torch.tensor(slots))
        keys.append(k)
        values.append(v)
    meta = AttentionMetadata.from_lists(
        block_tables=tables,
        context_lens=ctx_lens,
        query_lens=q_lens,
        tokens_per_block=bs,
        sliding_window=window,
        sink_tokens=sinks,
        sink_bubble=layout.bubble,
    )
    return pool, meta, keys, values, layout


@pytest.mark.parametrize("fill", [37.0, float("nan")])
@pytest.mark.parametrize(
    ("bs", "sinks", "window"), [(4, 3, 9), (4, 1, 6), (8, 5, 12), (4, 3, None)]
)
def test_bubble_is_masked_and_positions_mapped_back(bs, sinks, window, fill):
    gen = torch.Generator().manual_seed(bs * 100 + sinks)
    ctx_lens, q_lens = [17, 2, 11, 9], [17, 1, 4, 1]
    pool, meta, keys, values, layout = _case(gen, ctx_lens, q_lens, bs, sinks, window, fill)
    assert layout.bubble > 0
    # The metadata's slots are the layout's slots: writes skip the bubble.
    hq = 4
    query = torch.randn(sum(q_lens), hq, 8, generator=gen, dtype=torch.float64)
    sink_query = torch.randn(sum(q_lens), hq, 8, generator=gen, dtype=torch.float64)
    use_sink_query = sink_query if window is not None else None
    ours = paged_attention(
        query,
        pool[:, :, :, :, :],
        meta.block_tables,
        meta.context_lens,
        meta.query_start_loc,
        sliding_window=window,
        sink_tokens=sinks,
        sink_query=use_sink_query,
        sink_bubble=layout.bubble,
    )
    expected, start = [], 0
    for k, v, ctx, n in zip(keys, values, ctx_lens, q_lens, strict=True):
        pos = torch.arange(ctx - n, ctx)
        qs = sink_query[start : start + n] if window is not None else None
        expected.append(dense_attention(query[start : start + n], k, v, pos, window, sinks, qs))
        start += n
    torch.testing.assert_close(ours, torch.cat(expected), atol=1e-10, rtol=0)
    # The backend passes the bubble through from the metadata (it attends the trailing
    # decode rows apart from the prompt rows, so the sums run in another order).
    via_backend = AttentionBackend().attention(
        query, pool, meta, sliding_window=window, sink_query=use_sink_query
    )
    torch.testing.assert_close(via_backend, ours, atol=1e-12, rtol=0)


def test_without_bubble_masking_the_result_differs():
    gen = torch.Generator().manual_seed(3)
    pool, meta, _, _, layout = _case(gen, [13], [13], 4, 3, None, 37.0)
    query = torch.randn(13, 4, 8, generator=gen, dtype=torch.float64)
    args = (query, pool, meta.block_tables, meta.context_lens, meta.query_start_loc)
    masked = paged_attention(*args, sink_tokens=3, sink_bubble=layout.bubble)
    # Treating cache index as position reads the garbage bubble slot and shifts positions.
    span = torch.tensor([layout.cache_length(13)])
    unmasked = paged_attention(
        query, pool, meta.block_tables, span, torch.tensor([0, 13]), sink_tokens=3
    )
    assert (masked - unmasked).abs().max() > 1e-3


def test_bubble_that_does_not_pad_to_a_block_is_refused():
    gen = torch.Generator().manual_seed(0)
    pool, meta, _, _, _ = _case(gen, [9], [1], 4, 3, None, 0.0)
    query = torch.randn(1, 4, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="sink_bubble"):
        paged_attention(
            query,
            pool,
            meta.block_tables,
            meta.context_lens,
            meta.query_start_loc,
            sink_tokens=3,
            sink_bubble=2,
        )


def test_triton_choice_falls_back_to_the_reference_when_a_bubble_exists(monkeypatch):
    from engine.kernels import select, triton_paged

    def must_not_run(*args, **kwargs):
        raise AssertionError("the Triton kernels do not mask the sink bubble")

    monkeypatch.setattr(triton_paged, "supports", lambda *a, **k: True)
    monkeypatch.setattr(triton_paged, "paged_decode", must_not_run)
    monkeypatch.setattr(triton_paged, "paged_prefill", must_not_run)
    gen = torch.Generator().manual_seed(5)
    backend = AttentionBackend(decode=select.TRITON, prefill=select.TRITON)
    for q_lens in ([1, 1], [5, 1]):  # a pure decode step and a mixed step
        pool, meta, _, _, layout = _case(gen, [11, 7], q_lens, 4, 3, 9, 0.0)
        query = torch.randn(sum(q_lens), 4, 8, generator=gen, dtype=torch.float64)
        out = backend.attention(query, pool, meta, sliding_window=9)
        expected = AttentionBackend().attention(query, pool, meta, sliding_window=9)
        torch.testing.assert_close(out, expected, atol=0, rtol=0)
    # Without a bubble the Triton choice is honoured.
    pool, meta, _, _, _ = _case(gen, [11], [1], 4, 4, 9, 0.0)
    with pytest.raises(AssertionError, match="sink bubble"):
        backend.attention(torch.randn(1, 4, 8, dtype=torch.float64), pool, meta, sliding_window=9)
