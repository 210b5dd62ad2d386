"""Host (CPU) offload: a second, LRU-managed pool for evicted reusable blocks.

When the device pool evicts a cached-free block that holds a prefix hash, its K/V rows are
copied into a host block instead of being lost. A later prompt whose prefix chain reaches
that hash *onboards* it: the rows are copied into a fresh device block, the hash moves back
to the device index, and the host block is freed. A hash lives in at most one place.

Offload happens only with `onboard_blocks` set (`KvCacheSpec.host_offload_enabled`):
without onboarding a host copy could never be read again, so eviction simply drops the
block, as TensorRT-LLM does. Partial matches are searched on the device only.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from engine.kv.block_pool import Block
from engine.kv.errors import InvariantViolation
from engine.kv.hashing import hash_block
from engine.kv.stats import KvCounters
from engine.kv.storage import KvStorage


@dataclass(frozen=True)
class HostEntry:
    host_id: int
    block_hash: int
    parent_hash: int
    tokens: tuple[int, ...]


class HostCache:
    """Host blocks keyed by prefix hash; the first entry is the least recently offloaded."""

    def __init__(self, capacity: int, storage: KvStorage, counters: KvCounters) -> None:
        self.capacity = capacity
        self.storage = storage
        self.counters = counters
        self.entries: OrderedDict[int, HostEntry] = OrderedDict()
        self.free_ids: list[int] = list(range(capacity - 1, -1, -1))
        # Entries taken out for an onboard in progress: their host ids stay reserved so a
        # nested offload cannot overwrite them before the copy.
        self.checked_out: dict[int, HostEntry] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def lookup(self, block_hash: int, tokens: tuple[int, ...]) -> HostEntry | None:
        entry = self.entries.get(block_hash)
        if entry is None or entry.tokens != tokens:
            return None
        return entry

    def store(self, block: Block) -> None:
        """Offload an evicted hashed device block (called by the pool before it forgets it)."""
        if self.capacity == 0 or block.hash is None or block.parent_hash is None:
            return
        if block.hash in self.entries:
            self.entries.move_to_end(block.hash)
            return
        if not self.free_ids:
            if not self.entries:
                return  # every host block is checked out for an onboard in progress
            _, oldest = self.entries.popitem(last=False)
            self.free_ids.append(oldest.host_id)
            self.counters.host_evictions += 1
        host_id = self.free_ids.pop()
        self.storage.offload(block.block_id, host_id)
        self.entries[block.hash] = HostEntry(host_id, block.hash, block.parent_hash, block.tokens)
        self.counters.offloads += 1

    def check_out(self, block_hash: int) -> HostEntry:
        """Reserve an entry for onboarding; it leaves the LRU so it cannot be evicted."""
        entry = self.entries.pop(block_hash)
        self.checked_out[block_hash] = entry
        return entry

    def onboard(self, entry: HostEntry, block_id: int) -> None:
        """Copy a checked-out entry into device block `block_id` and free its host block."""
        self.storage.onboard(entry.host_id, block_id)
        del self.checked_out[entry.block_hash]
        self.free_ids.append(entry.host_id)
        self.counters.onboards += 1

    def discard(self, block_hash: int) -> None:
        """Drop a host copy because the device now holds the same prefix again."""
        entry = self.entries.pop(block_hash, None)
        if entry is not None:
            self.free_ids.append(entry.host_id)

    def check_valid(self, device_hashes: set[int]) -> None:
        ids = [e.host_id for e in self.entries.values()]
        ids += [e.host_id for e in self.checked_out.values()]
        if sorted(ids + self.free_ids) != list(range(self.capacity)):
            raise InvariantViolation(
                "host-partition",
                f"host ids in use {sorted(ids)} and free {sorted(self.free_ids)} "
                f"do not partition range({self.capacity})",
            )
        if self.checked_out:
            raise InvariantViolation(
                "host-checkout", f"onboards left unfinished: {sorted(self.checked_out)}"
            )
        for block_hash, entry in self.entries.items():
            if entry.block_hash != block_hash:
                raise InvariantViolation(
                    "host-index", f"host entry {entry} filed under {block_hash}"
                )
            if hash_block(entry.parent_hash, entry.tokens) != block_hash:
                raise InvariantViolation(
                    "host-hash-chain", f"host block {entry.host_id} tokens do not hash to its key"
                )
            if block_hash in device_hashes:
                raise InvariantViolation(
                    "hash-single-home", f"hash {block_hash:#x} is on both device and host"
                )
