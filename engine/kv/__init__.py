"""Paged KV cache: pool tensors, block manager, prefix reuse, sliding window, host offload."""

from __future__ import annotations

from engine.kv.errors import (
    InvalidKvSpec,
    InvariantViolation,
    KvCacheError,
    OutOfBlocks,
    SequenceStateError,
)
from engine.kv.hashing import ROOT_HASH, hash_block
from engine.kv.layout import NULL_BLOCK, WindowLayout
from engine.kv.manager import KvCacheManager
from engine.kv.spec import KvCacheSpec, blocks_for_bytes, bytes_per_block
from engine.kv.stats import KvCacheStats, KvCounters
from engine.kv.storage import KvStorage, block_table_tensor, slot_mapping, slots_for

__all__ = [
    "NULL_BLOCK",
    "ROOT_HASH",
    "InvalidKvSpec",
    "InvariantViolation",
    "KvCacheError",
    "KvCacheManager",
    "KvCacheSpec",
    "KvCacheStats",
    "KvCounters",
    "KvStorage",
    "OutOfBlocks",
    "SequenceStateError",
    "WindowLayout",
    "block_table_tensor",
    "blocks_for_bytes",
    "bytes_per_block",
    "hash_block",
    "slot_mapping",
    "slots_for",
]
