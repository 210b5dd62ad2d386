"""A large pool starts without one block object per block or a zero-filling pass: block
metadata is made on first use, CPU pool tensors come zero-filled from the operating system."""

from __future__ import annotations

import pytest
import torch

from engine.kv import InvariantViolation, KvCacheManager
from engine.kv.block_pool import Blocks
from engine.kv.storage import zeros
from engine.sequence import Sequence
from tests.engine.test_kv_support import make_spec, prefill


def test_blocks_are_made_on_first_use() -> None:
    blocks = Blocks(5)
    assert len(blocks) == 5 and list(blocks.made()) == []
    assert blocks.peek(3) is None
    block = blocks[3]
    block.ref_count += 2
    assert blocks[3] is block and blocks.peek(3) is block and blocks[3].ref_count == 2
    assert [b.block_id for b in blocks] == [0, 1, 2, 3, 4]
    assert [b.ref_count for b in blocks] == [0, 0, 0, 2, 0]
    assert list(blocks.made()) == [block]  # iterating made nothing
    for bad in (-1, 5):
        with pytest.raises(IndexError, match="outside the pool of 5"):
            blocks[bad]


def test_a_large_pool_makes_only_the_blocks_it_uses() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=50_000))
    seq = Sequence(1, list(range(1, 11)))
    prefill(kv, seq)
    kv.check_valid()
    made = sorted(b.block_id for b in kv.pool.blocks.made())
    assert made == sorted(seq.block_table) == [0, 1, 2]
    kv.free(seq)
    kv.check_valid()
    assert kv.pool.num_free == 50_000


def test_a_table_listing_a_block_never_taken_breaks_the_ref_count() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=64))
    seq = Sequence(1, [1, 2, 3, 4, 5])
    prefill(kv, seq)
    seq.block_table[1] = 40  # never taken: still in the free list, no object made
    with pytest.raises(InvariantViolation) as err:
        kv.check_valid()
    assert err.value.invariant == "ref-count"
    assert kv.pool.blocks.peek(40) is None  # the check made no block


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cpu_pool_tensors_read_as_zeros_and_take_writes(dtype: torch.dtype) -> None:
    pool = zeros((2, 64, 4, 2, 8), dtype, torch.device("cpu"))
    assert pool.shape == (2, 64, 4, 2, 8) and pool.dtype == dtype and pool.is_contiguous()
    assert not bool(pool.any())
    pool[1, 63, 3] = 1.5
    assert float(pool.sum()) == 1.5 * 16
    assert zeros((0, 4), dtype, torch.device("cpu")).shape == (0, 4)
