"""The block manager: block tables of sequences over a shared, ref-counted block pool.

Check-then-act API, one pair per transition of a sequence:

- `can_allocate(seq, n)` / `allocate(seq, n)`: first admission. Matches the cached prefix
  (setting `num_cached_tokens` and `num_computed_tokens`), then gives the sequence blocks
  for its first `n` tokens to compute. `match_prefix(seq)` previews the hit.
- `can_append(seq, n)` / `append_slot(seq, n)`: slots for the next `n` tokens (a decode
  is n = 1; a later prompt chunk is larger). A write into a block shared with a forked beam
  copies it first (copy-on-write). `group_blocks_needed(beams, n)` is what all beams of a
  group need together (the last holder of a shared block keeps it).
- `mark_computed(seq, n)`: after the model ran, the next `n` tokens have KV: full blocks get
  their prefix hash, and blocks that left the attention window are released.
- `fork(parent, child)`: the child shares all the parent's blocks.
- `free(seq)`: releases every block at once (finish, abort, preemption), tail first, so
  the tail of a freed prefix is evicted before its head.

An act called without room raises `OutOfBlocks`; the checks never change state.
"""

from __future__ import annotations

from engine.kv.block_pool import BlockPool
from engine.kv.errors import OutOfBlocks, SequenceStateError
from engine.kv.hashing import ROOT_HASH, extend_chain
from engine.kv.invariants import check_manager
from engine.kv.layout import NULL_BLOCK, WindowLayout
from engine.kv.offload import HostCache, HostEntry
from engine.kv.prefix import PrefixMatch, match_prefix, plan_admission
from engine.kv.spec import KvCacheSpec
from engine.kv.stats import KvCacheStats, KvCounters, snapshot
from engine.kv.storage import KvStorage
from engine.sequence import Sequence


class KvCacheManager:
    """Owns the pool tensors, the block pool, the host cache and every sequence's table."""

    def __init__(self, spec: KvCacheSpec, storage: KvStorage | None = None) -> None:
        """``storage`` replaces the pool tensors (tensor parallelism: the ranks hold them
        and ``engine.parallel.group.RemoteStorage`` forwards the copies)."""
        self.spec = spec
        self.layout = WindowLayout.from_spec(spec)
        self.counters = KvCounters()
        self.storage = KvStorage(spec) if storage is None else storage
        self.host: HostCache | None = None
        if spec.host_offload_enabled:
            self.host = HostCache(spec.host_cache_blocks, self.storage, self.counters)
        self.pool = BlockPool(
            spec.num_blocks, self.counters, self.host.store if self.host is not None else None
        )
        # Reuse hashes blocks by token content; a sink bubble shifts positions off block
        # boundaries, so (as in TensorRT-LLM) reuse is off whenever the bubble is non-zero.
        self.reuse = spec.enable_block_reuse and self.layout.bubble == 0
        self.seqs: dict[int, Sequence] = {}
        self._hashes: dict[int, list[int]] = {}  # seq_id -> chain hashes of its full blocks

    # -- admission ---------------------------------------------------------------------

    def match_prefix(self, seq: Sequence) -> PrefixMatch:
        """Preview the cached prefix of a not-yet-allocated sequence (of the tokens its
        context phase computes, `seq.context_end`)."""
        if not self.reuse:
            return PrefixMatch(self.spec.tokens_per_block)
        return match_prefix(
            self.pool,
            self.host,
            seq.token_ids[: seq.context_end],
            self.spec.tokens_per_block,
            self.spec.enable_partial_reuse,
            self.spec.copy_on_partial_reuse,
        )

    def _plan(self, seq: Sequence, num_new: int) -> tuple[PrefixMatch, int]:
        """The prefix match to claim and its cost in free blocks."""
        self._check_new(seq, num_new)
        match = self.match_prefix(seq)
        end = seq.context_end
        if match.num_cached_tokens + num_new > end:
            raise SequenceStateError(
                seq.seq_id,
                "allocate",
                f"{match.num_cached_tokens} cached + {num_new} new tokens exceed its {end}",
            )
        return match, plan_admission(self.pool, self.layout, match, num_new)

    def can_allocate(self, seq: Sequence, num_new_tokens: int) -> bool:
        return self._plan(seq, num_new_tokens)[1] <= self.pool.num_free

    def allocate(self, seq: Sequence, num_new_tokens: int) -> None:
        """Claim the cached prefix and blocks for the first `num_new_tokens` tokens."""
        match, cost = self._plan(seq, num_new_tokens)
        if cost > self.pool.num_free:
            raise OutOfBlocks(seq.seq_id, cost, self.pool.num_free)
        cached = match.num_cached_tokens
        dead_end = self.layout.num_releasable_blocks(cached)
        sinks = self.layout.num_sink_blocks
        table: list[int] = []
        # Claim device hits before taking fresh blocks, so eviction cannot pick them.
        host = self.host
        pending_host: list[tuple[int, HostEntry]] = []
        for index, block_id in enumerate(match.full):
            if sinks <= index < dead_end:
                table.append(NULL_BLOCK)
            elif block_id is None:
                if host is None:  # a host hit without a host cache: matching is broken
                    raise SequenceStateError(seq.seq_id, "allocate", "host hit without host cache")
                # Checked out before any take(), so a nested offload cannot evict it.
                pending_host.append((index, host.check_out(match.host[index])))
                table.append(NULL_BLOCK)
            else:
                self.pool.touch(block_id)
                table.append(block_id)
        partial = match.partial_block
        if partial is not None:
            self.pool.touch(partial)
        for index, entry in pending_host:
            block_id = self.pool.take()
            host.onboard(entry, block_id)  # type: ignore[union-attr]
            self.pool.register(block_id, entry.block_hash, entry.parent_hash, entry.tokens)
            table[index] = block_id
        if partial is not None:
            self.counters.partial_hits += 1
            if match.partial_copy:
                fresh = self.pool.take()
                self.storage.copy_block(partial, fresh, match.partial_tokens)
                self.pool.release(partial)
                self.counters.partial_copies += 1
                table.append(fresh)
            else:
                self.pool.unregister(partial)  # its tail is about to be overwritten
                table.append(partial)
        while len(table) < self.layout.num_blocks_for(cached + num_new_tokens):
            table.append(self.pool.take())
        self.counters.hit_blocks += len(match.full)
        self.counters.cached_hit_tokens += cached
        self.counters.missed_blocks += max(0, len(table) - len(match.full))
        seq.block_table = table
        seq.num_cached_tokens = seq.num_computed_tokens = cached
        self.seqs[seq.seq_id] = seq
        self._hashes[seq.seq_id] = list(match.hashes)

    def _check_new(self, seq: Sequence, num_new_tokens: int) -> None:
        if seq.seq_id in self.seqs or seq.block_table:
            raise SequenceStateError(seq.seq_id, "allocate", "it already holds blocks")
        if not 1 <= num_new_tokens <= len(seq.token_ids):
            raise SequenceStateError(
                seq.seq_id, "allocate", f"{num_new_tokens} new tokens of {len(seq.token_ids)}"
            )

    # -- growth ------------------------------------------------------------------------

    def _growth(self, seq: Sequence, num_new: int) -> tuple[int, list[int], int]:
        """(new blocks, shared entries to copy, blocks the window trim would free)."""
        if seq.seq_id not in self.seqs:
            raise SequenceStateError(seq.seq_id, "append to", "it holds no blocks")
        start = seq.num_computed_tokens
        if num_new < 1 or start + num_new > len(seq.token_ids):
            raise SequenceStateError(
                seq.seq_id, "append to", f"{num_new} new tokens past {len(seq.token_ids)} known"
            )
        table = seq.block_table
        need_len = self.layout.num_blocks_for(start + num_new)
        first = self.layout.cache_index(start) // self.spec.tokens_per_block
        blocks = self.pool.blocks
        shared = [
            i
            for i in range(first, min(len(table), need_len))
            if table[i] != NULL_BLOCK and blocks[table[i]].ref_count > 1
        ]
        dead = self._dead_entries(seq)
        freed = sum(1 for i in dead if blocks[table[i]].ref_count == 1) if dead else 0
        return max(0, need_len - len(table)), shared, freed

    def blocks_needed(self, seq: Sequence, num_new_tokens: int = 1) -> int:
        """Net free blocks `append_slot(seq, n)` would consume (negative if it frees some)."""
        fresh, shared, freed = self._growth(seq, num_new_tokens)
        return fresh + len(shared) - freed

    def group_blocks_needed(self, beams: list[Sequence], num_new_tokens: int = 1) -> int:
        """Free blocks that `append_slot(beam, n)` for each of `beams` in turn needs at its
        peak. Beams of one group share blocks: a shared block is copied only while another
        holder is left (the last holder keeps it), and a block the window trims is freed by
        the last beam that lets go of it, so the sum of each beam's `blocks_needed` would
        count one copy too many per shared block."""
        blocks = self.pool.blocks
        released: dict[int, int] = {}  # block -> references the earlier beams dropped

        def holders(block: int) -> int:
            return blocks[block].ref_count - released.get(block, 0)

        balance = peak = 0
        for seq in beams:
            fresh, shared, _ = self._growth(seq, num_new_tokens)
            table = seq.block_table
            for index in self._dead_entries(seq):  # the trim comes first
                block = table[index]
                balance -= holders(block) == 1
                released[block] = released.get(block, 0) + 1
            for index in shared:
                block = table[index]
                if holders(block) > 1:
                    balance += 1
                    released[block] = released.get(block, 0) + 1
            balance += fresh
            peak = max(peak, balance)
        return peak

    def can_append(self, seq: Sequence, num_new_tokens: int = 1) -> bool:
        return self.blocks_needed(seq, num_new_tokens) <= self.pool.num_free

    def append_slot(self, seq: Sequence, num_new_tokens: int = 1) -> None:
        """Make slots for tokens [num_computed, num_computed + n), copying shared blocks."""
        fresh, shared, freed = self._growth(seq, num_new_tokens)
        if fresh + len(shared) > self.pool.num_free + freed:
            raise OutOfBlocks(seq.seq_id, fresh + len(shared), self.pool.num_free + freed)
        self._trim(seq)
        tpb = self.spec.tokens_per_block
        written_from = self.layout.cache_index(seq.num_computed_tokens)
        for index in shared:
            old = seq.block_table[index]
            new = self.pool.take()
            rows = max(0, min(tpb, written_from - index * tpb))
            self.storage.copy_block(old, new, rows)
            self.pool.release(old)
            seq.block_table[index] = new
            self.counters.cow_copies += 1
        for _ in range(fresh):
            seq.block_table.append(self.pool.take())

    def append_decode_slot(self, seq: Sequence) -> bool:
        """``append_slot(seq, 1)`` where that only ever appends a fresh block: no window
        (nothing to trim) and the block written to is not shared (nothing to copy). Returns
        False, changing nothing, where the general path must decide (a window, a shared
        block, no free block, or a state ``append_slot`` refuses)."""
        if self.layout.window is not None or seq.seq_id not in self.seqs:
            return False
        start = seq.num_computed_tokens
        if start >= len(seq.token_ids):
            return False
        index = self.layout.cache_index(start) // self.spec.tokens_per_block
        table = seq.block_table
        if index < len(table):
            block_id = table[index]
            return block_id != NULL_BLOCK and self.pool.blocks[block_id].ref_count == 1
        if index > len(table) or self.pool.num_free < 1:
            return False
        table.append(self.pool.take())
        return True

    def reserve_decode_window(self, seq: Sequence, steps: int, ahead: int = 0) -> int:
        """Slots for the next ``steps`` decode positions of ``seq`` (from
        ``num_computed_tokens``), whose tokens are not known yet: a multi-step decode window
        samples them on the device. The first position must have its slot already (a
        scheduled decode); later ones take fresh blocks while the pool has free ones.
        Returns how many positions have a slot (1 to ``steps``, 1 when ``steps`` < 1);
        without a sink bubble only, and only blocks this sequence holds alone are written
        (the count stops at a shared one). With an attention window nothing is trimmed
        here: blocks that leave it go back to the pool when the tokens are marked
        computed, as in single steps.

        ``ahead`` > 0: the positions start ``ahead`` past ``num_computed_tokens`` (a
        chained window, planned before the window in front of it has been marked
        computed); the first of them needs a slot too, so the count may be 0."""
        layout = self.layout
        if layout.bubble or seq.seq_id not in self.seqs:
            return 0 if ahead else 1
        tpb = self.spec.tokens_per_block
        table = seq.block_table
        start = seq.num_computed_tokens + ahead
        blocks = self.pool.blocks
        covered = 0 if ahead else 1
        while covered < steps:
            index = layout.cache_index(start + covered) // tpb
            if index < len(table):
                block_id = table[index]
                if block_id == NULL_BLOCK or blocks[block_id].ref_count != 1:
                    break
            elif self.pool.num_free < 1:
                break
            else:
                table.append(self.pool.take())
            covered += 1
        return covered

    def mark_computed(self, seq: Sequence, num_new_tokens: int) -> None:
        """Record that the model wrote KV for the next `num_new_tokens` tokens."""
        end = seq.num_computed_tokens + num_new_tokens
        covered = self.layout.positions_covered(len(seq.block_table))
        if seq.seq_id not in self.seqs or num_new_tokens < 0 or end > min(covered, len(seq)):
            raise SequenceStateError(
                seq.seq_id, "mark computed", f"{end} tokens exceed its slots or tokens"
            )
        seq.num_computed_tokens = end
        tpb = self.spec.tokens_per_block
        if self.reuse and (len(self._hashes[seq.seq_id]) + 1) * tpb <= end:
            self._hash_full_blocks(seq)  # a block filled up
        if self.layout.window is not None:
            self._trim(seq)

    def _hash_full_blocks(self, seq: Sequence) -> None:
        tpb = self.spec.tokens_per_block
        hashes = self._hashes[seq.seq_id]
        done = len(hashes)
        extend_chain(hashes, seq.token_ids, tpb, seq.num_computed_tokens)
        for index in range(done, len(hashes)):
            block_id = seq.block_table[index]
            if block_id == NULL_BLOCK or self.pool.blocks[block_id].hash is not None:
                continue
            parent = hashes[index - 1] if index else ROOT_HASH
            tokens = tuple(seq.token_ids[index * tpb : (index + 1) * tpb])
            if (
                self.pool.register(block_id, hashes[index], parent, tokens)
                and self.host is not None
            ):
                self.host.discard(hashes[index])  # one home per hash: the device wins

    def _dead_entries(self, seq: Sequence) -> list[int]:
        if self.layout.window is None:
            return []  # without a window no block ever leaves it
        dead_end = self.layout.num_releasable_blocks(seq.num_computed_tokens)
        start = self.layout.num_sink_blocks
        table = seq.block_table
        return [i for i in range(start, min(dead_end, len(table))) if table[i] != NULL_BLOCK]

    def _trim(self, seq: Sequence) -> None:
        """Release blocks no future query of `seq` can see (sliding window)."""
        for index in reversed(self._dead_entries(seq)):
            self.pool.release(seq.block_table[index])
            seq.block_table[index] = NULL_BLOCK
            self.counters.window_releases += 1

    # -- beams and release -------------------------------------------------------------

    def fork(self, parent: Sequence, child: Sequence) -> None:
        """Share every block of `parent` with `child` (a new beam); writes copy later."""
        if parent.seq_id not in self.seqs:
            raise SequenceStateError(parent.seq_id, "fork", "the parent holds no blocks")
        if child.seq_id in self.seqs or child.block_table:
            raise SequenceStateError(child.seq_id, "fork into", "it already holds blocks")
        done = parent.num_computed_tokens
        if child.token_ids[:done] != parent.token_ids[:done]:
            raise SequenceStateError(
                child.seq_id, "fork into", "its tokens differ from the parent's"
            )
        for block_id in parent.block_table:
            if block_id != NULL_BLOCK:
                self.pool.touch(block_id)
        child.block_table = list(parent.block_table)
        child.num_cached_tokens = parent.num_cached_tokens
        child.num_computed_tokens = done
        self.seqs[child.seq_id] = child
        self._hashes[child.seq_id] = list(self._hashes[parent.seq_id])

    def free(self, seq: Sequence) -> None:
        """Release all blocks of `seq` now; a no-op for a sequence holding none."""
        if self.seqs.pop(seq.seq_id, None) is None:
            return
        for block_id in reversed(seq.block_table):
            if block_id != NULL_BLOCK:
                self.pool.release(block_id)
        seq.block_table = []
        seq.num_computed_tokens = 0
        del self._hashes[seq.seq_id]

    # -- inspection --------------------------------------------------------------------

    @property
    def num_free_blocks(self) -> int:
        """Blocks obtainable now: free plus evictable cached-free."""
        return self.pool.num_free

    def peak_blocks(
        self, seq: Sequence, max_chunk: int | None = None, max_seq_len: int | None = None
    ) -> int:
        """Upper bound on the blocks one beam of `seq` holds at once until it finishes.

        `max_chunk` bounds the tokens computed in one step (None: a whole prompt at once);
        `max_seq_len`, where the sequence is cut, bounds its length.
        """
        total = max(seq.num_prompt_tokens + seq.max_new_tokens, len(seq))
        if max_seq_len is not None:
            total = min(total, max(max_seq_len, len(seq)))
        return self.layout.peak_blocks(total, total if max_chunk is None else max_chunk)

    def stats(self) -> KvCacheStats:
        """Counters plus gauges of the pool right now (blocks in use, slot waste)."""
        return snapshot(self)

    def check_valid(self) -> None:
        """Raise `InvariantViolation` naming the first broken invariant; else do nothing."""
        check_manager(self)
