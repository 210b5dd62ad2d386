"""`check_valid()` names each broken invariant; the spec and sizing helpers validate input."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from engine.kv import (
    InvalidKvSpec,
    InvariantViolation,
    KvCacheManager,
    block_table_tensor,
    blocks_for_bytes,
    bytes_per_block,
    slot_mapping,
)
from engine.sequence import Sequence
from tests.engine.test_kv_support import make_spec, prefill


def _busy_manager() -> KvCacheManager:
    kv = KvCacheManager(make_spec(tokens_per_block=2, num_blocks=8, host_cache_blocks=2))
    a = Sequence(1, [1, 2, 3, 4, 5])
    prefill(kv, a)
    b = Sequence(2, [7, 7, 7])
    prefill(kv, b)
    kv.free(b)
    kv.check_valid()
    return kv


def _bump_ref(kv: KvCacheManager) -> None:
    kv.pool.blocks[kv.seqs[1].block_table[0]].ref_count += 1


def _leak_block(kv: KvCacheManager) -> None:
    kv.pool.free.append(kv.seqs[1].block_table[0])


def _forget_free_block(kv: KvCacheManager) -> None:
    kv.pool.free.popleft()


def _corrupt_tokens(kv: KvCacheManager) -> None:
    block = kv.pool.blocks[kv.seqs[1].block_table[0]]
    block.tokens = (block.tokens[0] + 1,) + block.tokens[1:]


def _duplicate_entry(kv: KvCacheManager) -> None:
    table = kv.seqs[1].block_table
    table[1] = table[0]


def _host_leak(kv: KvCacheManager) -> None:
    kv.host.free_ids.append(0)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("corrupt", "invariant"),
    [
        (_bump_ref, "ref-count"),
        (_leak_block, "pool-partition"),
        (_forget_free_block, "pool-partition"),
        (_corrupt_tokens, "hash-chain"),
        (_duplicate_entry, "table-unique"),
        (_host_leak, "host-partition"),
    ],
)
def test_check_valid_names_the_broken_invariant(
    corrupt: Callable[[KvCacheManager], None], invariant: str
) -> None:
    kv = _busy_manager()
    corrupt(kv)
    with pytest.raises(InvariantViolation) as err:
        kv.check_valid()
    assert err.value.invariant == invariant
    assert invariant in str(err.value)


def test_blocks_for_bytes_uses_the_documented_formula() -> None:
    per_block = 2 * 4 * 16 * 8 * 64 * 2
    assert bytes_per_block(4, 16, 8, 64, torch.bfloat16) == per_block
    assert blocks_for_bytes(10 * per_block + per_block - 1, 4, 16, 8, 64, torch.bfloat16) == 10
    assert blocks_for_bytes(per_block, 4, 16, 8, 64, torch.float8_e4m3fn) == 2
    assert blocks_for_bytes(0, 1, 1, 1, 1, torch.float32) == 0
    with pytest.raises(InvalidKvSpec, match="budget_bytes"):
        blocks_for_bytes(-1, 1, 1, 1, 1, torch.float32)


def test_pool_layout_and_fp8_storage() -> None:
    kv = KvCacheManager(
        make_spec(num_layers=3, num_kv_heads=2, head_dim=8, dtype=torch.float8_e4m3fn)
    )
    assert len(kv.storage.kv) == 3
    assert kv.storage.kv[0].shape == (2, 8, 4, 2, 8)
    assert kv.storage.kv[0].dtype == torch.float8_e4m3fn
    assert kv.spec.bytes_per_block == 2 * 3 * 4 * 2 * 8


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"tokens_per_block": 0}, "tokens_per_block"),
        ({"num_blocks": -3}, "num_blocks"),
        ({"sink_token_length": -1}, "sink_token_length"),
        ({"max_attention_window": 4, "sink_token_length": 4}, "max_attention_window"),
        ({"host_cache_blocks": -1}, "host_cache_blocks"),
    ],
)
def test_spec_rejects_bad_values(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidKvSpec) as err:
        make_spec(**overrides)
    assert err.value.field == field and field in str(err.value)


def test_block_table_tensor_and_slot_mapping() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=8))
    a, b = Sequence(1, list(range(6))), Sequence(2, [9, 9])
    kv.allocate(a, 6)
    kv.allocate(b, 2)
    tables = block_table_tensor([a.block_table, b.block_table])
    assert tables.dtype == torch.int32
    assert tables.tolist() == [a.block_table, b.block_table + [-1]]
    slots = slot_mapping(kv.layout, [(a.block_table, 4, 2), (b.block_table, 0, 2)])
    assert slots.dtype == torch.int64
    assert slots.tolist() == [
        a.block_table[1] * 4,
        a.block_table[1] * 4 + 1,
        b.block_table[0] * 4,
        b.block_table[0] * 4 + 1,
    ]


def test_stats_count_allocated_and_used_slots() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=8))
    a = Sequence(1, [1, 2, 3, 4, 5])
    kv.allocate(a, 5)
    stats = kv.stats()
    assert (stats.blocks_in_use, stats.allocated_slots, stats.used_slots) == (2, 8, 5)
    assert stats.slot_waste == 3 / 8
    b = a.fork(2)
    kv.fork(a, b)
    stats = kv.stats()
    assert (stats.blocks_in_use, stats.allocated_slots) == (2, 8)  # shared blocks count once
    kv.free(a)
    kv.free(b)
    assert kv.stats().slot_waste == 0.0 and kv.stats().blocks_in_use == 0
