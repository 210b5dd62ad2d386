"""Counters of the KV cache, for statistics and the KV-waste benchmark.

The event counters only grow; `KvCacheStats` snapshots add the gauges (blocks in use,
allocated versus used slots) measured at the moment of the snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.kv.manager import KvCacheManager


@dataclass
class KvCounters:
    """Monotonic event counts, shared by the block pool, host cache and manager."""

    cached_hit_tokens: int = 0  # prompt tokens whose KV came from the cache
    hit_blocks: int = 0  # full blocks matched on the device
    partial_hits: int = 0  # partially matching blocks reused (shared or copied)
    partial_copies: int = 0  # of those, how many were copied
    missed_blocks: int = 0  # prompt blocks that had to be computed
    evictions: int = 0  # cached-free device blocks handed out to new owners
    offloads: int = 0  # device blocks copied to the host pool on eviction
    onboards: int = 0  # host blocks copied back to the device on a hit
    host_evictions: int = 0  # host blocks dropped to make room for newer ones
    cow_copies: int = 0  # shared blocks copied before a write (beam fork)
    window_releases: int = 0  # blocks released because they left the window


@dataclass(frozen=True)
class KvCacheStats:
    """A snapshot: the counters plus gauges of the pool at this moment."""

    counters: KvCounters
    num_blocks: int
    blocks_in_use: int
    free_blocks: int  # never-used or unhashed free blocks
    cached_free_blocks: int  # free but still holding a reusable prefix
    host_blocks_in_use: int
    allocated_slots: int  # slots in blocks held by sequences
    used_slots: int  # of those, slots holding (or about to hold) a token

    @property
    def slot_waste(self) -> float:
        """Fraction of held slots that hold no token (0.0 when nothing is held)."""
        if self.allocated_slots == 0:
            return 0.0
        return 1.0 - self.used_slots / self.allocated_slots


def snapshot(manager: KvCacheManager) -> KvCacheStats:
    """Measure the pool now. A block shared by several tables counts once, as used as its
    fullest holder uses it."""
    live: dict[int, int] = {}
    for seq in manager.seqs.values():
        for index, block_id in enumerate(seq.block_table):
            if block_id < 0:
                continue  # released out-of-window entry
            lo, hi = manager.layout.block_positions(index)
            used = max(0, min(hi, len(seq)) - lo)
            live[block_id] = max(live.get(block_id, 0), used)
    host = manager.host
    return KvCacheStats(
        counters=KvCounters(**vars(manager.counters)),
        num_blocks=manager.spec.num_blocks,
        blocks_in_use=len(live),
        free_blocks=len(manager.pool.free),
        cached_free_blocks=len(manager.pool.cached_free),
        host_blocks_in_use=len(host) if host is not None else 0,
        allocated_slots=len(live) * manager.spec.tokens_per_block,
        used_slots=sum(live.values()),
    )
