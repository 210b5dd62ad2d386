"""`check_valid()`: every invariant of the KV cache, checked from scratch.

Meant for tests (a Hypothesis state machine calls it after every step) and for debugging:
when everything works it is an expensive no-op. Each failure raises `InvariantViolation`
with a stable invariant name.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from engine.kv.errors import InvariantViolation
from engine.kv.hashing import hash_block
from engine.kv.layout import NULL_BLOCK

if TYPE_CHECKING:
    from engine.kv.manager import KvCacheManager


def _fail(invariant: str, detail: str) -> None:
    raise InvariantViolation(invariant, detail)


def check_pool_partition(manager: KvCacheManager) -> None:
    pool = manager.pool
    free, cached = set(pool.free), set(pool.cached_free)
    # A block never used has no reference and no hash: only made blocks can be in use.
    used = {b.block_id for b in pool.blocks.made() if b.ref_count > 0}
    if len(free) != len(pool.free):
        _fail("free-list-unique", f"free list {list(pool.free)} repeats a block")
    for name, a, b in (
        ("free/cached", free, cached),
        ("free/used", free, used),
        ("cached/used", cached, used),
    ):
        if a & b:
            _fail("pool-partition", f"blocks {sorted(a & b)} are in both {name}")
    if len(free) + len(cached) + len(used) != len(pool.blocks):
        missing = set(range(len(pool.blocks))) - free - cached - used
        _fail("pool-partition", f"blocks {sorted(missing)} are neither free, cached-free nor used")
    for block_id in free:
        block = pool.blocks.peek(block_id)
        if block is not None and block.hash is not None:
            _fail("free-unhashed", f"plain free block {block_id} still carries a prefix hash")
    for block_id in cached:
        block = pool.blocks.peek(block_id)
        if block is None or block.hash is None:
            _fail("cached-free-hashed", f"cached-free block {block_id} has no prefix hash")


def check_ref_counts(manager: KvCacheManager) -> None:
    refs: Counter[int] = Counter()
    for seq_id, seq in manager.seqs.items():
        live = [b for b in seq.block_table if b != NULL_BLOCK]
        # Forked beams share blocks across tables, never within one table.
        if len(live) != len(set(live)):
            _fail("table-unique", f"sequence {seq_id} lists a block twice: {seq.block_table}")
        refs.update(live)
    blocks = manager.pool.blocks
    # Blocks never used count no reference; a table listing one is caught here too.
    for block_id in {b.block_id for b in blocks.made()} | set(refs):
        block = blocks.peek(block_id)
        count = 0 if block is None else block.ref_count
        if count != refs[block_id]:
            _fail(
                "ref-count",
                f"block {block_id} has ref_count {count} but "
                f"{refs[block_id]} block-table references",
            )


def check_hash_index(manager: KvCacheManager) -> None:
    pool, tpb = manager.pool, manager.spec.tokens_per_block
    for block_hash, block_id in pool.hash_to_block.items():
        block = pool.blocks[block_id]
        if block.hash != block_hash:
            _fail(
                "hash-index",
                f"hash {block_hash:#x} points to block {block_id} holding {block.hash}",
            )
        if len(block.tokens) != tpb or block.parent_hash is None:
            _fail("hash-full-block", f"hashed block {block_id} records {len(block.tokens)} tokens")
        if hash_block(block.parent_hash, block.tokens) != block_hash:
            _fail(
                "hash-chain", f"block {block_id} tokens and parent do not hash to {block_hash:#x}"
            )
        if block_id not in pool.children.get(block.parent_hash, ()):
            _fail("hash-children", f"block {block_id} missing from its parent's children")
    for block in pool.blocks.made():
        if block.hash is not None and pool.hash_to_block.get(block.hash) != block.block_id:
            _fail("hash-index", f"block {block.block_id} carries an unindexed hash")
    for parent, kids in pool.children.items():
        for block_id in kids:
            if pool.blocks[block_id].parent_hash != parent:
                _fail("hash-children", f"block {block_id} filed under a foreign parent")


def check_tables(manager: KvCacheManager) -> None:
    layout, pool = manager.layout, manager.pool
    for seq_id, seq in manager.seqs.items():
        table = seq.block_table
        computed = seq.num_computed_tokens
        if not seq.num_cached_tokens <= computed <= len(seq.token_ids):
            _fail(
                "progress",
                f"sequence {seq_id}: cached {seq.num_cached_tokens}, computed {computed}",
            )
        if len(table) < layout.num_blocks_for(computed):
            _fail("table-covers", f"sequence {seq_id}: {len(table)} blocks for {computed} tokens")
        dead_end = layout.num_releasable_blocks(computed)
        for index, block_id in enumerate(table):
            dead = layout.num_sink_blocks <= index < dead_end
            if dead and block_id != NULL_BLOCK:
                _fail("window-released", f"sequence {seq_id} keeps out-of-window block {block_id}")
            if not dead and block_id == NULL_BLOCK:
                _fail("window-kept", f"sequence {seq_id} lost in-window entry {index}")
            if block_id != NULL_BLOCK and not 0 <= block_id < len(pool.blocks):
                _fail("table-range", f"sequence {seq_id} lists unknown block {block_id}")
        if manager.reuse:
            tpb = manager.spec.tokens_per_block
            for index, block_id in enumerate(table[: computed // tpb]):
                block = pool.blocks.peek(block_id) if block_id != NULL_BLOCK else None
                tokens = tuple(seq.token_ids[index * tpb : (index + 1) * tpb])
                if block is not None and block.hash is not None and block.tokens != tokens:
                    _fail("hash-content", f"sequence {seq_id} block {block_id} holds other tokens")


def check_manager(manager: KvCacheManager) -> None:
    check_pool_partition(manager)
    check_ref_counts(manager)
    check_hash_index(manager)
    check_tables(manager)
    if manager.host is not None:
        manager.host.check_valid(set(manager.pool.hash_to_block))
