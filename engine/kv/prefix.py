"""Prefix matching: how much of a new prompt's KV the cache already holds.

Matching walks the chained hashes of the prompt's full blocks from the start and stops at
the first miss; a hit is a device block, or (with host offload) a host block to onboard.
It never covers the last token: the model must run on at least that token to produce the
logits of the next one, so a prompt found whole still computes one token.

With partial reuse, the block after the last full hit may match a cached block whose parent
is the same prefix on only its first k tokens. That block is taken over privately when no
one holds it and nothing extends it (its hash is dropped, since its tail will be
overwritten); otherwise its first k rows are copied into a fresh block, which requires
`copy_on_partial_reuse`. This mirrors TensorRT-LLM's `findMatchingBlock`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.kv.block_pool import BlockPool
from engine.kv.hashing import ROOT_HASH, chain_hashes
from engine.kv.layout import WindowLayout
from engine.kv.offload import HostCache


@dataclass
class PrefixMatch:
    tokens_per_block: int
    # One entry per matched full block, in order: a device block id, or None for a host hit.
    full: list[int | None] = field(default_factory=list)
    host: dict[int, int] = field(default_factory=dict)  # block index -> prefix hash on host
    hashes: list[int] = field(default_factory=list)  # chain hashes of the matched blocks
    partial_block: int | None = None
    partial_tokens: int = 0
    partial_copy: bool = False

    @property
    def num_cached_tokens(self) -> int:
        return len(self.full) * self.tokens_per_block + self.partial_tokens


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def match_prefix(
    pool: BlockPool,
    host: HostCache | None,
    token_ids: list[int],
    tokens_per_block: int,
    partial_reuse: bool,
    copy_on_partial_reuse: bool,
) -> PrefixMatch:
    """Find the cached prefix of `token_ids` (side-effect free)."""
    tpb = tokens_per_block
    match = PrefixMatch(tpb)
    limit = len(token_ids) - 1  # the last token is always recomputed
    for index, block_hash in enumerate(chain_hashes(token_ids, tpb, limit)):
        tokens = tuple(token_ids[index * tpb : (index + 1) * tpb])
        block = pool.lookup(block_hash, tokens)
        if block is not None:
            match.full.append(block.block_id)
        elif host is not None and host.lookup(block_hash, tokens) is not None:
            match.full.append(None)
            match.host[index] = block_hash
        else:
            break
        match.hashes.append(block_hash)
    start = len(match.full) * tpb
    if not partial_reuse or start >= limit:
        return match
    parent = match.hashes[-1] if match.hashes else ROOT_HASH
    wanted = tuple(token_ids[start : min(start + tpb, limit)])
    best: tuple[int, int] | None = None  # (-matched tokens, block id): smallest wins
    for block_id in pool.children.get(parent, ()):
        block = pool.blocks[block_id]
        private = block.ref_count == 0 and pool.is_leaf(block)
        if not private and not copy_on_partial_reuse:
            continue  # someone else needs it intact and copying is off
        matched = common_prefix_len(block.tokens, wanted)
        if matched > 0 and (best is None or (-matched, block_id) < best):
            best = (-matched, block_id)
    if best is not None:
        block = pool.blocks[best[1]]
        match.partial_block = block.block_id
        match.partial_tokens = -best[0]
        match.partial_copy = not (block.ref_count == 0 and pool.is_leaf(block))
    return match


def plan_admission(pool: BlockPool, layout: WindowLayout, match: PrefixMatch, num_new: int) -> int:
    """Free blocks that claiming `match` plus `num_new` more tokens costs.

    A held full hit is shared for nothing; an idle one leaves the free lists; a host hit
    needs a fresh device block to land in; a hit that is already out of the window is not
    claimed at all. May downgrade a partial copy to a takeover (see below).
    """
    cached = match.num_cached_tokens
    dead_end = layout.num_releasable_blocks(cached)
    cost = 0
    for index, block_id in enumerate(match.full):
        if layout.num_sink_blocks <= index < dead_end:
            continue
        if block_id is None or pool.blocks[block_id].ref_count == 0:
            cost += 1
    reused = len(match.full)
    if match.partial_block is not None:
        reused += 1
        idle = pool.blocks[match.partial_block].ref_count == 0
        # A takeover costs the idle block; a copy costs a fresh block, plus an idle source,
        # which stays pinned until the copy is done.
        cost += 1 + (1 if match.partial_copy and idle else 0)
    cost += max(0, layout.num_blocks_for(cached + num_new) - reused)
    if cost > pool.num_free and match.partial_copy and match.partial_block is not None:
        if pool.blocks[match.partial_block].ref_count == 0:
            # When the pinned source is the one block we lack, take it over instead: its
            # descendants lose their parent in the index, which costs future hits only.
            match.partial_copy = False
            cost -= 1
    return cost
