"""Prefix hashes: a chained, deterministic hash of full blocks.

The hash of block k covers its parent's hash and its own tokens, so equal hashes mean equal
prefixes up to and including that block. blake2b keeps the value stable across runs and
processes (Python's `hash()` is salted per process), which keeps tests and block-stored
statistics reproducible. Hits are also checked against the block's recorded tokens, so a
collision can never return wrong KV.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

# The parent hash of a sequence's first block.
ROOT_HASH = 0


def hash_block(parent_hash: int, tokens: Sequence[int]) -> int:
    """The chained hash of one full block: blake2b-64 of parent hash and token ids."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(struct.pack("<Q", parent_hash))
    digest.update(struct.pack(f"<{len(tokens)}q", *tokens))
    return int.from_bytes(digest.digest(), "little")


def chain_hashes(token_ids: Sequence[int], tokens_per_block: int, num_tokens: int) -> list[int]:
    """Hashes of every full block within the first `num_tokens` tokens, in order."""
    hashes: list[int] = []
    parent = ROOT_HASH
    for start in range(0, num_tokens - tokens_per_block + 1, tokens_per_block):
        parent = hash_block(parent, token_ids[start : start + tokens_per_block])
        hashes.append(parent)
    return hashes


def extend_chain(
    hashes: list[int], token_ids: Sequence[int], tokens_per_block: int, num_tokens: int
) -> list[int]:
    """Append to `hashes` the hashes of full blocks within `num_tokens` not yet hashed."""
    parent = hashes[-1] if hashes else ROOT_HASH
    start = len(hashes) * tokens_per_block
    while start + tokens_per_block <= num_tokens:
        parent = hash_block(parent, token_ids[start : start + tokens_per_block])
        hashes.append(parent)
        start += tokens_per_block
    return hashes
