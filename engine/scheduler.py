"""Continuous batching over the paged KV cache: capacity policies and context chunking.

The step API, as the runtime drives it::

    scheduler = Scheduler(SchedulerConfig(...), kv_manager)
    scheduler.add(seq)                              # queue a request (may raise PromptTooLong)
    while scheduler.has_unfinished:
        out = scheduler.schedule()                  # SchedulerOutput
        # Run the model on out.scheduled, in order. Each entry is (seq, num_new_tokens,
        # is_prefill): compute KV for seq.token_ids[c : c + num_new_tokens], with
        # c = seq.num_computed_tokens, into the slots of seq.block_table (see
        # engine.kv.slot_mapping), and sample one token for each sequence in
        # out.needs_token (those whose step reaches their last known token).
        finished = scheduler.on_step_done(out, {seq_id: token_id, ...})

`schedule()` has already claimed the KV slots of every entry; `on_step_done` records the
KV as computed, appends the sampled tokens and finishes sequences (EOS, max_new_tokens,
max_seq_len), freeing their blocks. `abort(seq_id)` frees a request's blocks at once.
`fork(parent, child)` adds a beam that shares the parent's blocks. Sequences in
`out.preempted` lost their blocks this step and wait to be recomputed from scratch.

Each step schedules running decodes first (oldest first; a beam group is one request and
costs one token per beam), then context work: running prompts that are mid-chunk, then
waiting requests, within `max_batch_size` requests and `max_num_tokens` tokens. Context
entries come first in the output, as packed-input kernels expect.

Capacity policies (TensorRT-LLM's capacity scheduler):

- GUARANTEED_NO_EVICT: admit a request only if the blocks it needs until it finishes (prompt
  + max_new_tokens, window-capped, times its beam width) fit after reserving what every
  running request may still need. Never preempts.
- MAX_UTILIZATION: admit greedily for one step; when a running request cannot get its next
  blocks, preempt the most recently started request (free its blocks, keep its tokens, put
  it at the front of the queue).
- STATIC_BATCH: as GUARANTEED_NO_EVICT, but admits only when nothing is running.

A preempted beam group comes back whole. Its first beam (the carrier) is queued with the
others in `pending_beams`; it recomputes only the prefix all beams share, and there the
others are forked from it again (sharing those blocks) and recompute their own tails. Each
beam's context stops one token short (`context_stop`): the last token of every beam is
computed by the group's next decode step, which samples all beams together, exactly as the
uninterrupted search would have.

Chunking (`enable_chunked_context`): prompts split to fit the token budget; every chunk but
a prompt's last is a multiple of `tokens_per_block`. FIRST_COME_FIRST_SERVED gives each
prompt in order what fits, rounded down; EQUAL_PROGRESS hands out one block's worth per
prompt per pass. Without chunking a prompt runs whole or waits, and one longer than
`max_num_tokens` is refused at `add()`; only a recompute after preemption (whose tokens
may have outgrown the budget) is then cut, first come first served. `add()` also refuses
a request whose blocks could never fit the pool, whatever the policy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from constraints.schema import CAPACITY_POLICIES as SCHEMA_CAPACITY_POLICIES
from constraints.schema import CHUNKING_POLICIES as SCHEMA_CHUNKING_POLICIES
from engine.kv.errors import SequenceStateError
from engine.kv.manager import KvCacheManager
from engine.kv.prefix import common_prefix_len
from engine.sequence import Sequence, SequenceStatus

# the errors live in engine.errors; importable from here as before
from .errors import DuplicateSequence as DuplicateSequence
from .errors import InvalidSchedulerConfig as InvalidSchedulerConfig
from .errors import MissingSampledToken as MissingSampledToken
from .errors import PromptTooLong as PromptTooLong
from .errors import SchedulerError as SchedulerError
from .errors import UnknownSequence as UnknownSequence

# the policies are the schema's domains (scheduler_config), defined there once
CAPACITY_POLICIES = SCHEMA_CAPACITY_POLICIES
CHUNKING_POLICIES = SCHEMA_CHUNKING_POLICIES


@dataclass(frozen=True)
class SchedulerConfig:
    max_batch_size: int = 8
    max_num_tokens: int = 8192
    capacity_policy: str = "GUARANTEED_NO_EVICT"
    enable_chunked_context: bool = False
    chunking_policy: str = "FIRST_COME_FIRST_SERVED"
    max_seq_len: int | None = None
    eos_token_id: int | None = None

    def __post_init__(self) -> None:
        if self.capacity_policy not in CAPACITY_POLICIES:
            raise InvalidSchedulerConfig(
                "capacity_policy", self.capacity_policy, f"not one of {CAPACITY_POLICIES}"
            )
        if self.chunking_policy not in CHUNKING_POLICIES:
            raise InvalidSchedulerConfig(
                "chunking_policy", self.chunking_policy, f"not one of {CHUNKING_POLICIES}"
            )
        for name in ("max_batch_size", "max_num_tokens"):
            if getattr(self, name) < 1:
                raise InvalidSchedulerConfig(name, getattr(self, name), "must be >= 1")


class ScheduledSequence(NamedTuple):
    seq: Sequence
    num_new_tokens: int
    is_prefill: bool


@dataclass
class SchedulerOutput:
    """One step: what to run (contexts first, then decodes) and who lost their blocks."""

    scheduled: list[ScheduledSequence] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)
    # Sequences whose step ends at their last known token: sample one token for each.
    needs_token: list[Sequence] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return sum(entry.num_new_tokens for entry in self.scheduled)

    @property
    def num_requests(self) -> int:
        return len({entry.seq.group_id for entry in self.scheduled})


def _first_groups(seqs: list[Sequence], limit: int) -> list[Sequence]:
    """The leading `seqs` that belong to at most `limit` beam groups."""
    groups: set[int] = set()
    taken: list[Sequence] = []
    for seq in seqs:
        if seq.group_id not in groups:
            if len(groups) >= limit:
                break
            groups.add(seq.group_id)
        taken.append(seq)
    return taken


def assign_chunks(
    remaining: list[int],
    budget: int,
    unit: int,
    policy: str | None,
    splittable: list[bool] | None = None,
) -> list[int]:
    """Tokens each context request computes this step.

    `policy` None means no chunking: a prompt runs whole or waits, except the requests
    marked `splittable` (recomputes after preemption, which may have outgrown the token
    budget), which are cut first-come-first-served.
    """
    chunks = [0] * len(remaining)
    if policy == "EQUAL_PROGRESS":
        progress = True
        while progress:
            progress = False
            for i, left in enumerate(remaining):
                step = min(unit, left - chunks[i])
                if 0 < step <= budget:
                    chunks[i] += step
                    budget -= step
                    progress = True
        return chunks
    for i, left in enumerate(remaining):
        if left <= budget:
            chunks[i] = left
        elif policy is not None or (splittable is not None and splittable[i]):
            chunks[i] = budget // unit * unit
        else:
            break  # whole prompts only, in order
        budget -= chunks[i]
    return chunks


class Scheduler:
    """Decides, step by step, which sequences run and how many tokens each computes."""

    def __init__(self, config: SchedulerConfig, kv: KvCacheManager) -> None:
        self.config = config
        self.kv = kv
        self.waiting: deque[Sequence] = deque()
        # group_id -> live beams; insertion order is start order (newest last).
        self.running: dict[int, list[Sequence]] = {}
        self._arrivals = 0
        self.num_preemptions = 0

    @property
    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    # -- requests ----------------------------------------------------------------------

    def add(self, seq: Sequence) -> None:
        """Queue a new request; refuse one that could never be scheduled."""
        cfg = self.config
        if not cfg.enable_chunked_context and len(seq) > cfg.max_num_tokens:
            raise PromptTooLong(seq.seq_id, len(seq), "max_num_tokens", cfg.max_num_tokens)
        if cfg.max_seq_len is not None and len(seq) > cfg.max_seq_len:
            raise PromptTooLong(seq.seq_id, len(seq), "max_seq_len", cfg.max_seq_len)
        if not seq.token_ids:
            raise PromptTooLong(seq.seq_id, 0, "the minimum prompt length", 1)
        if any(q.seq_id == seq.seq_id for q in self.waiting) or any(
            q.seq_id == seq.seq_id for beams in self.running.values() for q in beams
        ):
            raise DuplicateSequence(seq.seq_id)
        peak = self._peak(seq)
        if peak > self.kv.spec.num_blocks:
            raise PromptTooLong(seq.seq_id, peak, "num_blocks", self.kv.spec.num_blocks)
        seq.arrival = self._arrivals
        self._arrivals += 1
        seq.status = SequenceStatus.WAITING
        self.waiting.append(seq)

    def abort(self, seq_id: int) -> Sequence:
        """Cancel a sequence (one beam, or a queued request) and free its blocks now."""
        carriers = list(self.waiting) + [seq for beams in self.running.values() for seq in beams]
        for carrier in carriers:
            for seq in carrier.pending_beams:
                if seq.seq_id == seq_id:  # a beam waiting to be forked again
                    carrier.pending_beams.remove(seq)
                    if not carrier.pending_beams:  # nothing left to fork: recompute it all
                        carrier.context_stop = len(carrier) - 1
                    self._retire(seq, "aborted")
                    return seq
        for seq in self.waiting:
            if seq.seq_id == seq_id:
                self.waiting.remove(seq)
                self._retire(seq, "aborted")
                self._requeue_pending(seq)
                return seq
        for beams in self.running.values():
            for seq in beams:
                if seq.seq_id == seq_id:
                    self._retire(seq, "aborted")
                    self._requeue_pending(seq)
                    return seq
        raise UnknownSequence(seq_id, "abort")

    def _requeue_pending(self, carrier: Sequence) -> None:
        """An aborted carrier hands the beams it was to fork to the first of them, which
        starts their recompute afresh at the front of the queue."""
        if carrier.pending_beams:
            group, carrier.pending_beams = carrier.pending_beams, []
            self.waiting.appendleft(self._make_carrier(group))

    def fork(self, parent: Sequence, child: Sequence) -> None:
        """Add `child` (from `parent.fork(...)`) as a beam sharing the parent's blocks."""
        beams = self.running.get(parent.group_id)
        if beams is None or parent not in beams:
            raise UnknownSequence(parent.seq_id, "fork")
        if not parent.in_decode:
            # Beams of one group are scheduled together; only decodes can be.
            raise SequenceStateError(parent.seq_id, "fork", "its prompt is not computed yet")
        self.kv.fork(parent, child)
        child.group_id = parent.group_id
        child.status = SequenceStatus.RUNNING
        beams.append(child)

    def _retire(self, seq: Sequence, reason: str) -> None:
        self.kv.free(seq)
        seq.status = SequenceStatus.FINISHED
        seq.finish_reason = reason
        beams = self.running.get(seq.group_id)
        if beams is not None and seq in beams:
            beams.remove(seq)
            if not beams:
                del self.running[seq.group_id]

    def _preempt(self, group_id: int, out: SchedulerOutput) -> None:
        beams = self.running.pop(group_id)
        group: list[Sequence] = []
        for seq in beams:
            self.kv.free(seq)
            seq.num_cached_tokens = 0
            out.preempted.append(seq)
            group += [seq, *seq.pending_beams]
            seq.pending_beams = []
        out.scheduled[:] = [e for e in out.scheduled if e.seq.group_id != group_id]
        self.waiting.appendleft(self._make_carrier(group))  # recomputed, ahead of new work
        self.num_preemptions += 1

    @staticmethod
    def _make_carrier(group: list[Sequence]) -> Sequence:
        """Set up the recompute of a group's beams; returns the one to queue."""
        carrier, *others = group
        for seq in group:
            seq.status = SequenceStatus.PREEMPTED
            seq.context_stop = len(seq) - 1 if others else None
        if others:
            # Beams of one group have equal lengths and differ, so they share < len tokens.
            shared = min(common_prefix_len(carrier.token_ids, o.token_ids) for o in others)
            carrier.context_stop = min(shared, len(carrier) - 1)
        carrier.pending_beams = others
        return carrier

    def _refork(self, carrier: Sequence) -> None:
        """The carrier's recompute reached the shared prefix: fork the waiting beams."""
        beams = self.running[carrier.group_id]
        for seq in carrier.pending_beams:
            self.kv.fork(carrier, seq)
            seq.status = SequenceStatus.RUNNING
            beams.append(seq)
        carrier.pending_beams = []
        carrier.context_stop = len(carrier) - 1

    # -- one step ----------------------------------------------------------------------

    def _budget(self, out: SchedulerOutput) -> tuple[int, int]:
        return (
            self.config.max_batch_size - out.num_requests,
            self.config.max_num_tokens - out.num_tokens,
        )

    def _grow(
        self, group_id: int, num_new: int, out: SchedulerOutput, only: Sequence | None = None
    ) -> bool:
        """Claim slots for every beam of a running group (or for its beam `only`),
        preempting if the policy says so."""
        while group_id in self.running:
            beams = self.running[group_id] if only is None else [only]
            needed = self.kv.group_blocks_needed(beams, num_new)
            if needed <= self.kv.num_free_blocks:
                for seq in beams:
                    self.kv.append_slot(seq, num_new)
                return True
            if self.config.capacity_policy != "MAX_UTILIZATION":
                return False  # within its reservation this cannot happen; wait a step
            self._preempt(next(reversed(self.running)), out)
        return False

    def _reserved_blocks(self) -> int:
        """Blocks running requests may still claim before they finish (no-evict policies)."""
        reserved = 0
        for beams in self.running.values():
            tables = [b for seq in beams for b in seq.block_table if b >= 0]
            own = sum(1 for b in set(tables) if self.kv.pool.blocks[b].ref_count == tables.count(b))
            reserved += max(0, self._peak(beams[0]) - own)
        return reserved

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        cfg = self.config
        was_idle = not self.running
        # The budget left is kept as a running count (recounted only after a preemption,
        # which takes scheduled entries back): recounting it per group costs O(batch^2).
        requests, tokens = self._budget(out)
        scheduled = out.scheduled
        kv = self.kv
        contexts: list[Sequence] = []
        for group_id in list(self.running):
            beams = self.running.get(group_id)
            if beams is None:
                continue  # preempted earlier in this loop
            if len(beams) == 1:  # the common case, without the general path's calls
                seq = beams[0]
                computed = seq.num_computed_tokens
                if not (computed >= seq.num_prompt_tokens and len(seq.token_ids) - computed == 1):
                    contexts.append(seq)  # not in decode
                    continue
                if seq.pending_beams:
                    continue
                if requests < 1 or tokens < 1:
                    continue
                if kv.append_decode_slot(seq):
                    scheduled.append(ScheduledSequence(seq, 1, False))
                    requests, tokens = requests - 1, tokens - 1
                    continue
            elif beams[0].pending_beams or not all(s.in_decode for s in beams):
                contexts.extend(s for s in beams if not s.in_decode)
                continue
            if requests < 1 or len(beams) > tokens:
                continue
            preemptions = self.num_preemptions
            if self._grow(group_id, 1, out):
                scheduled.extend(ScheduledSequence(seq, 1, False) for seq in beams)
                requests, tokens = requests - 1, tokens - len(beams)
            if self.num_preemptions != preemptions:
                requests, tokens = self._budget(out)
        # A preemption later in the loop may have sent a group seen earlier back to the queue.
        contexts = [seq for seq in contexts if seq.group_id in self.running]
        contexts = _first_groups(contexts, requests)
        admit_room = requests - len({seq.group_id for seq in contexts})
        if cfg.capacity_policy == "MAX_UTILIZATION":
            contexts += list(self.waiting)[: max(0, admit_room)]
        elif (
            self.waiting
            and admit_room > 0
            and (cfg.capacity_policy == "GUARANTEED_NO_EVICT" or was_idle)
        ):
            available = self.kv.num_free_blocks - self._reserved_blocks()
            for seq in list(self.waiting)[: max(0, admit_room)]:
                need = self._peak(seq)
                if need > available:
                    break
                available -= need
                contexts.append(seq)
        remaining = [
            seq.context_end - (seq.num_computed_tokens if seq.block_table else self._cached(seq))
            for seq in contexts
        ]
        policy = cfg.chunking_policy if cfg.enable_chunked_context else None
        # A recompute may be longer than max_num_tokens; it is chunked even without chunking.
        splittable = [
            bool(seq.block_table) or seq.status is SequenceStatus.PREEMPTED for seq in contexts
        ]
        chunks = assign_chunks(remaining, tokens, self.kv.spec.tokens_per_block, policy, splittable)
        prefills: list[ScheduledSequence] = []
        for seq, chunk in zip(contexts, chunks, strict=True):
            if any(seq is victim for victim in out.preempted):
                continue  # lost its blocks to an older request in this very step
            if chunk == 0:
                if seq.status is SequenceStatus.WAITING or seq.status is SequenceStatus.PREEMPTED:
                    break  # keep queue order: nothing behind it jumps ahead
                continue
            if seq.block_table:
                if seq.group_id in self.running and self._grow(seq.group_id, chunk, out, seq):
                    prefills.append(ScheduledSequence(seq, chunk, True))
                continue
            chunk = self._fit_chunk(seq, chunk)
            if chunk == 0 or not self.kv.can_allocate(seq, chunk):
                break
            self.kv.allocate(seq, chunk)
            self.waiting.remove(seq)
            seq.status = SequenceStatus.RUNNING
            self.running[seq.group_id] = [seq]
            prefills.append(ScheduledSequence(seq, chunk, True))
        # A later growth may have preempted a group scheduled earlier in this loop.
        out.scheduled[:0] = [e for e in prefills if e.seq.group_id in self.running]
        out.needs_token = [
            e.seq
            for e in out.scheduled
            if e.seq.num_computed_tokens + e.num_new_tokens == len(e.seq)
        ]
        return out

    def _peak(self, seq: Sequence) -> int:
        """Blocks a request (all its beams) may hold at once; no step exceeds the budget."""
        cfg = self.config
        return self.kv.peak_blocks(seq, cfg.max_num_tokens, cfg.max_seq_len) * seq.beam_width

    def _cached(self, seq: Sequence) -> int:
        return self.kv.match_prefix(seq).num_cached_tokens

    def _fit_chunk(self, seq: Sequence, planned: int) -> int:
        """Re-check a planned chunk against the prefix hit as it stands now.

        An earlier admission in the same step may have evicted blocks this request hoped to
        reuse; the chunk then stops short of the prompt's end and must stay block-aligned.
        """
        left = seq.context_end - self._cached(seq)
        if planned >= left:
            return left
        tpb = self.kv.spec.tokens_per_block
        return planned // tpb * tpb

    # -- after the model ran -----------------------------------------------------------

    def on_step_done(self, out: SchedulerOutput, sampled: Mapping[int, int]) -> list[Sequence]:
        """Record computed KV, append sampled tokens, and finish sequences; returns finished."""
        finished: list[Sequence] = []
        for seq, num_new, _ in out.scheduled:
            if seq.status is not SequenceStatus.RUNNING:
                continue  # aborted by the runtime after schedule()
            self.kv.mark_computed(seq, num_new)
            if seq.pending_beams and seq.num_computed_tokens == seq.context_stop:
                self._refork(seq)
            if seq.num_computed_tokens < len(seq):
                continue  # a prompt chunk that is not the last: no token yet
            if seq.seq_id not in sampled:
                raise MissingSampledToken(seq.seq_id)
            token = sampled[seq.seq_id]
            seq.append_token(token)
            reason = self._finish_reason(seq, token)
            if reason is not None:
                self._retire(seq, reason)
                finished.append(seq)
        return finished

    def take_window(
        self, seq: Sequence, tokens: list[int], stops: frozenset[int] = frozenset()
    ) -> tuple[int, bool]:
        """Feed one sequence the tokens a multi-step decode window sampled for it, as that
        many ``on_step_done`` steps would, in one go: its tokens up to and including the
        first that ends it (end of sequence, its length, ``max_seq_len``) or is in
        ``stops`` (the caller's stop tokens, which the caller acts on). Returns (tokens
        taken, whether the sequence finished here). Each token after the first had a slot
        reserved by ``reserve_decode_window``."""
        if seq.status is not SequenceStatus.RUNNING or seq.pending_beams or not tokens:
            return 0, False
        generated, length = seq.num_generated_tokens, len(seq)
        taken = len(tokens)
        for j, token in enumerate(tokens):
            ends = self._end_reason(seq, token, generated + j + 1, length + j + 1)
            if ends is not None or token in stops:
                taken = j + 1
                break
        seq.token_ids.extend(tokens[:taken])
        self.kv.mark_computed(seq, taken)
        reason = self._finish_reason(seq, tokens[taken - 1])
        if reason is not None:
            self._retire(seq, reason)
        return taken, reason is not None

    def _finish_reason(self, seq: Sequence, token: int) -> str | None:
        return self._end_reason(seq, token, seq.num_generated_tokens, len(seq))

    def _end_reason(self, seq: Sequence, token: int, generated: int, length: int) -> str | None:
        """Why ``seq`` ends with ``token`` once it holds ``generated`` new tokens and
        ``length`` in all, or None."""
        cfg = self.config
        if cfg.eos_token_id is not None and token == cfg.eos_token_id and not seq.ignore_eos:
            return "eos"
        if generated >= seq.max_new_tokens:
            return "length"
        if cfg.max_seq_len is not None and length >= cfg.max_seq_len:
            return "max_seq_len"
        return None
