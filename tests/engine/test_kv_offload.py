"""Host offload: evicted reusable blocks go to the CPU pool and come back exactly."""

from __future__ import annotations

import torch

from engine.kv import KvCacheManager
from engine.sequence import Sequence
from tests.engine.test_kv_support import assert_cache_content, make_spec, prefill


def _fill_random(kv: KvCacheManager, blocks: list[int]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    for layer in kv.storage.kv:
        for block in blocks:
            layer[:, block] = torch.randn(layer[:, block].shape, generator=gen)
    return [layer[:, blocks].clone() for layer in kv.storage.kv]


def test_offload_then_onboard_restores_exact_contents() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=2, num_blocks=4, host_cache_blocks=4))
    a = Sequence(1, [1, 2, 3, 4, 5])
    prefill(kv, a, next_token=None)
    blocks = a.block_table[:2]  # the two full, hashed blocks
    saved = _fill_random(kv, blocks)
    kv.free(a)
    b = Sequence(2, [9, 9, 9, 9, 9, 9, 9, 9])  # needs all 4 blocks: evicts a's prefix
    prefill(kv, b, next_token=None)
    assert kv.counters.evictions == 2 and kv.counters.offloads == 2
    assert len(kv.host) == 2
    kv.check_valid()
    kv.free(b)
    c = Sequence(3, [1, 2, 3, 4, 5])
    assert kv.match_prefix(c).num_cached_tokens == 4
    prefill(kv, c, next_token=None)
    assert kv.counters.onboards == 2
    # a's blocks left the host; making room for them pushed b's prefix there instead.
    assert {e.tokens for e in kv.host.entries.values()} == {(9, 9)} and len(kv.host) == 3
    assert c.num_cached_tokens == 4
    for layer, before in zip(kv.storage.kv, saved, strict=True):
        assert torch.equal(layer[:, c.block_table[:2]], before)
    kv.check_valid()


def test_fake_model_content_survives_offload_round_trip() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=2, num_blocks=3, host_cache_blocks=2))
    a = Sequence(1, [4, 4, 5, 5, 6])
    prefill(kv, a)
    kv.free(a)
    prefill(kv, Sequence(2, [1, 1, 1, 1, 1]))  # evicts everything of a
    kv.free(kv.seqs[2])
    c = Sequence(3, [4, 4, 5, 5, 6, 8])
    prefill(kv, c)
    assert c.num_cached_tokens == 4
    assert_cache_content(kv, c)
    kv.check_valid()


def test_host_pool_is_lru_too() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=1, num_blocks=2, host_cache_blocks=2))
    for seq_id, token in enumerate([10, 20, 30, 40]):
        seq = Sequence(seq_id, [token, 0])  # one full hashed block, then the recomputed token
        prefill(kv, seq, next_token=None)
        kv.free(seq)
    # Device keeps the two newest prefixes; the host got 10 and 20, which 30/40 pushed on.
    assert kv.counters.offloads >= 2
    assert kv.counters.host_evictions == kv.counters.offloads - 2
    on_host = {entry.tokens for entry in kv.host.entries.values()}
    assert len(on_host) == 2
    kv.check_valid()


def test_without_onboard_nothing_is_offloaded_or_restored() -> None:
    kv = KvCacheManager(
        make_spec(tokens_per_block=2, num_blocks=4, host_cache_blocks=4, onboard_blocks=False)
    )
    assert kv.host is None and kv.storage.host_kv == []
    a = Sequence(1, [1, 2, 3, 4, 5])
    prefill(kv, a, next_token=None)
    kv.free(a)
    prefill(kv, Sequence(2, [9] * 8), next_token=None)
    assert kv.counters.evictions == 2 and kv.counters.offloads == 0
    kv.free(kv.seqs[2])
    assert kv.match_prefix(Sequence(3, [1, 2, 3, 4, 5])).num_cached_tokens == 0
