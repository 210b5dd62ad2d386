"""Sliding window with sinks, the position layout, and copy-on-write beam forks."""

from __future__ import annotations

import pytest
import torch

from engine.kv import NULL_BLOCK, KvCacheManager, WindowLayout, slots_for
from engine.sequence import Sequence
from tests.engine.test_kv_support import assert_cache_content, decode, make_spec, prefill


def brute_visible(query: int, key: int, window: int | None, sinks: int) -> bool:
    if key > query:
        return False
    return window is None or key < sinks or query - key < window - sinks


@pytest.mark.parametrize("tpb", [1, 2, 4])
@pytest.mark.parametrize(("window", "sinks"), [(None, 0), (5, 0), (6, 2), (7, 3), (4, 1)])
def test_layout_maps_positions_and_visibility(tpb: int, window: int | None, sinks: int) -> None:
    layout = WindowLayout(tpb, window, sinks)
    indices = [layout.cache_index(p) for p in range(40)]
    assert len(set(indices)) == 40 and indices == sorted(indices)
    for p, c in enumerate(indices):
        assert layout.position_of(c) == p
        assert layout.cache_length(p + 1) == c + 1
        lo, hi = layout.block_positions(c // tpb)
        assert lo <= p < hi
    for entries in range(12):
        spans = [layout.block_positions(i) for i in range(entries)]
        assert layout.positions_covered(entries) == sum(hi - lo for lo, hi in spans)
    # Sink positions fill their own blocks; the first non-sink token starts a new block.
    if sinks:
        assert layout.cache_index(sinks) % tpb == 0
        bubble = [c for c in range(indices[-1]) if layout.position_of(c) is None]
        assert bubble == list(range(sinks, sinks + layout.bubble))
    for q in range(30):
        for k in range(30):
            assert layout.can_see(q, k) == brute_visible(q, k, window, sinks)
        # Every block the layout calls dead holds no key any query >= q can see.
        dead_end = layout.num_releasable_blocks(q)
        for block in range(layout.num_sink_blocks, dead_end):
            lo, hi = layout.block_positions(block)
            assert not any(layout.can_see(q2, k) for q2 in range(q, q + 30) for k in range(lo, hi))
        # ...and the first live block past the sinks does hold a visible key.
        lo, hi = layout.block_positions(dead_end)
        if dead_end >= layout.num_sink_blocks and lo <= q:
            assert any(layout.can_see(q, k) for k in range(lo, min(hi, q + 1)))


def test_window_releases_blocks_and_keeps_sinks() -> None:
    kv = KvCacheManager(
        make_spec(tokens_per_block=2, num_blocks=8, max_attention_window=6, sink_token_length=2)
    )
    seq = Sequence(1, [5, 6, 7, 8])
    prefill(kv, seq)
    sink_block = seq.block_table[0]
    for step in range(14):
        decode(kv, seq, 20 + step)
        kv.check_valid()
        assert seq.block_table[0] == sink_block  # sinks are never released
        q = seq.num_computed_tokens
        live = [b for b in seq.block_table if b != NULL_BLOCK]
        assert len(live) <= 1 + 2 + 1  # sink block + (W - S) / T + a straddling block
        for key in range(q):  # computed keys; q itself gets its slot on the next append
            index = kv.layout.cache_index(key) // 2
            if kv.layout.can_see(q, key):
                assert seq.block_table[index] != NULL_BLOCK, (q, key)
        assert_cache_content(kv, seq)
    live = [b for b in seq.block_table if b != NULL_BLOCK]
    assert kv.counters.window_releases == len(seq.block_table) - len(live) > 0
    assert kv.num_free_blocks == 8 - len(live)
    kv.free(seq)
    assert kv.num_free_blocks == 8


def test_sink_bubble_shifts_positions_and_turns_reuse_off() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, max_attention_window=8, sink_token_length=1))
    assert kv.layout.bubble == 3 and not kv.reuse
    seq = Sequence(1, [1, 2, 3])
    kv.allocate(seq, 3)
    # Position 0 is the sink in block 0; positions 1 and 2 start block 1.
    assert slots_for(kv.layout, seq.block_table, 0, 3) == [
        seq.block_table[0] * 4,
        seq.block_table[1] * 4,
        seq.block_table[1] * 4 + 1,
    ]
    aligned = KvCacheManager(
        make_spec(tokens_per_block=2, max_attention_window=8, sink_token_length=2)
    )
    assert aligned.layout.bubble == 0 and aligned.reuse


def test_fork_shares_blocks_and_copies_on_write() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=8))
    parent = Sequence(1, [1, 2, 3, 4, 5, 6])
    prefill(kv, parent, next_token=7)  # 6 computed: block 0 full, block 1 holds 2 rows
    child = parent.fork(2)
    kv.fork(parent, child)
    assert child.block_table == parent.block_table
    assert [kv.pool.blocks[b].ref_count for b in parent.block_table] == [2, 2]
    shared = parent.block_table[1]
    decode(kv, parent, 8)  # writes position 6 into the shared partial block
    assert parent.block_table[1] != shared
    assert child.block_table[1] == shared
    assert kv.counters.cow_copies == 1
    for layer in kv.storage.kv:
        assert torch.equal(layer[:, parent.block_table[1], :2], layer[:, shared, :2])
    child.token_ids[-1] = 9  # the child's beam sampled another token
    decode(kv, child, 10)  # the block is its own now: written in place
    assert child.block_table[1] == shared and kv.counters.cow_copies == 1
    assert kv.pool.blocks[parent.block_table[0]].ref_count == 2
    assert_cache_content(kv, parent)
    assert_cache_content(kv, child)
    kv.check_valid()
    kv.free(parent)
    kv.free(child)
    assert kv.num_free_blocks == 8
