"""Exact tests of prefix reuse: hit counts, LRU eviction order, partial reuse."""

from __future__ import annotations

import pytest
import torch

from engine.kv import KvCacheManager, OutOfBlocks, SequenceStateError
from engine.sequence import Sequence
from tests.engine.test_kv_support import assert_cache_content, make_spec, prefill


def test_full_prompt_hit_still_recomputes_last_token() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16, enable_partial_reuse=False))
    first = Sequence(1, list(range(10)))
    prefill(kv, first)
    kv.free(first)
    again = Sequence(2, list(range(10)))
    assert kv.match_prefix(again).num_cached_tokens == 8  # 2 full blocks of the first 9
    prefill(kv, again)
    assert again.num_cached_tokens == 8
    assert kv.counters.cached_hit_tokens == 8
    assert kv.counters.hit_blocks == 2
    assert_cache_content(kv, again)
    # An 8-token prompt fills two blocks exactly, yet only the first can be a hit:
    # the last token must run, and without partial reuse its whole block is recomputed.
    exact = Sequence(3, list(range(8)))
    assert kv.match_prefix(exact).num_cached_tokens == 4


def test_hit_shares_blocks_with_a_running_sequence() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16, enable_partial_reuse=False))
    first = Sequence(1, list(range(9)))
    prefill(kv, first)
    second = Sequence(2, list(range(9)) + [50, 51])
    prefill(kv, second)
    assert second.block_table[:2] == first.block_table[:2]
    assert [kv.pool.blocks[b].ref_count for b in first.block_table[:2]] == [2, 2]
    assert second.block_table[2] != first.block_table[2]
    kv.check_valid()


def test_reuse_off_never_hits() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16, enable_block_reuse=False))
    first = Sequence(1, list(range(9)))
    prefill(kv, first)
    kv.free(first)
    assert not kv.pool.hash_to_block
    assert list(kv.pool.cached_free) == []
    assert kv.match_prefix(Sequence(2, list(range(9)))).num_cached_tokens == 0


def test_lru_eviction_takes_plain_free_first_then_the_tail() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=2, num_blocks=6, enable_partial_reuse=False))
    a = Sequence(1, [1, 2, 3, 4, 5, 6, 7])  # blocks 0,1,2 full and hashed, block 3 partial
    prefill(kv, a, next_token=None)
    assert a.block_table == [0, 1, 2, 3]
    kv.free(a)
    # Freed tail first: the head is the most recently freed, hence evicted last.
    assert list(kv.pool.cached_free) == [2, 1, 0]
    assert list(kv.pool.free) == [4, 5, 3]
    b = Sequence(2, [9, 9, 9, 9, 9])  # needs 3 blocks: exactly the plain free ones
    prefill(kv, b, next_token=None)
    assert b.block_table == [4, 5, 3]
    assert kv.counters.evictions == 0
    c = Sequence(3, [8, 8, 8])  # needs 2 more: evicts block 2, then block 1
    prefill(kv, c, next_token=None)
    assert c.block_table == [2, 1]
    assert kv.counters.evictions == 2
    assert list(kv.pool.cached_free) == [0]
    kv.free(c)
    d = Sequence(4, [1, 2, 3, 4, 5, 6, 7])
    assert kv.match_prefix(d).num_cached_tokens == 2  # only the head block survived
    kv.check_valid()


def test_partial_reuse_takes_an_idle_leaf_block_without_copy() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16))
    a = Sequence(1, list(range(10)))
    prefill(kv, a)
    kv.free(a)
    b = Sequence(2, [0, 1, 2, 3, 4, 5, 6, 60, 61])  # shares 7 tokens: 1 block + 3 rows
    match = kv.match_prefix(b)
    assert (match.partial_tokens, match.partial_copy) == (3, False)
    idle_block = match.partial_block
    prefill(kv, b)
    assert b.num_cached_tokens == 7
    assert b.block_table[1] == idle_block
    # Its old hash was dropped when taken over; once full again it holds b's tokens.
    assert kv.pool.blocks[idle_block].tokens == (4, 5, 6, 60)
    assert kv.match_prefix(Sequence(3, list(range(10)))).num_cached_tokens == 4 + 3
    assert kv.counters.partial_hits == 1 and kv.counters.partial_copies == 0
    assert_cache_content(kv, b)
    kv.check_valid()


def test_partial_reuse_copies_a_block_still_in_use() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16, copy_on_partial_reuse=True))
    a = Sequence(1, list(range(10)))
    prefill(kv, a)
    b = Sequence(2, [0, 1, 2, 3, 4, 5, 60, 61])  # 1 block + 2 rows of a's second block
    prefill(kv, b)
    assert b.num_cached_tokens == 6
    assert b.block_table[0] == a.block_table[0]
    assert b.block_table[1] != a.block_table[1]
    assert kv.counters.partial_copies == 1
    for layer in kv.storage.kv:
        assert torch.equal(layer[:, b.block_table[1], :2], layer[:, a.block_table[1], :2])
    assert_cache_content(kv, a)
    assert_cache_content(kv, b)
    kv.check_valid()


def test_partial_reuse_without_copy_skips_a_block_in_use() -> None:
    kv = KvCacheManager(make_spec(num_blocks=16, copy_on_partial_reuse=False))
    a = Sequence(1, list(range(10)))
    prefill(kv, a)
    b = Sequence(2, [0, 1, 2, 3, 4, 5, 60, 61])
    assert kv.match_prefix(b).num_cached_tokens == 4
    kv.free(a)
    # Idle and a leaf now: taken over privately, even without copying.
    assert kv.match_prefix(b).num_cached_tokens == 6


def test_acts_without_room_raise_named_errors() -> None:
    kv = KvCacheManager(make_spec(num_blocks=2))
    seq = Sequence(5, list(range(12)))
    assert not kv.can_allocate(seq, 12)
    with pytest.raises(OutOfBlocks) as err:
        kv.allocate(seq, 12)
    assert (err.value.seq_id, err.value.needed, err.value.available) == (5, 3, 2)
    assert "sequence 5" in str(err.value)
    small = Sequence(6, [1, 2, 3])
    kv.allocate(small, 3)
    with pytest.raises(SequenceStateError, match="sequence 6"):
        kv.allocate(small, 3)


def test_free_releases_every_block_at_once() -> None:
    kv = KvCacheManager(make_spec(num_blocks=8))
    seqs = [Sequence(i, [i] * 9) for i in range(2)]
    for seq in seqs:
        prefill(kv, seq)
    assert kv.num_free_blocks == 2
    for seq in seqs:
        kv.free(seq)
    assert kv.num_free_blocks == 8
    assert kv.stats().blocks_in_use == 0
    kv.check_valid()
