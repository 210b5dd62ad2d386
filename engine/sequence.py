"""A sequence: one prompt and its generated tokens, as the scheduler and KV cache see it.

A plain data object. The scheduler moves it between states, the KV cache manager fills
`block_table`, `num_cached_tokens` and `num_computed_tokens`, and the runtime appends the
tokens it samples. Beam search forks a sequence into siblings that share a `group_id`
(the root's `seq_id`) and are scheduled together. A preempted beam group is recomputed
through one "carrier" beam that holds the others in `pending_beams` until the prefix they
share is back in the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class SequenceStatus(Enum):
    WAITING = "waiting"  # queued, holds no blocks
    RUNNING = "running"  # admitted, holds blocks
    PREEMPTED = "preempted"  # evicted from the batch; back in the queue, recomputed later
    FINISHED = "finished"  # done or aborted; holds no blocks


@dataclass(eq=False)
class Sequence:
    """One sequence. Identity is `seq_id`; two objects are never compared by content."""

    seq_id: int
    token_ids: list[int]
    max_new_tokens: int = 16
    num_prompt_tokens: int = -1  # defaults to len(token_ids) at construction
    arrival: int = 0  # arrival order, stamped by Scheduler.add (queue order is FIFO)
    beam_width: int = 1  # beams this request may fork into (for capacity reservation)
    parent_id: int | None = None  # the sequence this one was forked from
    group_id: int = -1  # the beam group; defaults to seq_id
    ignore_eos: bool = False
    status: SequenceStatus = SequenceStatus.WAITING
    block_table: list[int] = field(default_factory=list)
    num_cached_tokens: int = 0  # prefix tokens whose KV was reused from the cache
    num_computed_tokens: int = 0  # leading tokens whose KV is in the cache
    finish_reason: str | None = None  # "eos", "length", "max_seq_len", "aborted"
    # Recompute of a preempted beam group (see engine.scheduler): where this sequence's
    # context phase stops (None: at its last token, which then samples the next one), and
    # the sibling beams waiting to be forked from it once it gets there.
    context_stop: int | None = None
    pending_beams: list[Sequence] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.token_ids = list(self.token_ids)
        if self.num_prompt_tokens < 0:
            self.num_prompt_tokens = len(self.token_ids)
        if self.group_id < 0:
            self.group_id = self.seq_id

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_generated_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def generated_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def context_end(self) -> int:
        """Leading tokens the context phase computes before the sequence pauses or samples."""
        return len(self.token_ids) if self.context_stop is None else self.context_stop

    @property
    def num_uncomputed_tokens(self) -> int:
        return len(self.token_ids) - self.num_computed_tokens

    @property
    def in_decode(self) -> bool:
        """True once the prompt is computed and only the newest token lacks KV."""
        return (
            self.num_computed_tokens >= self.num_prompt_tokens and self.num_uncomputed_tokens == 1
        )

    @property
    def is_finished(self) -> bool:
        return self.status is SequenceStatus.FINISHED

    def append_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)

    def fork(self, child_id: int) -> Sequence:
        """A sibling beam with the same tokens and progress, and no blocks of its own yet."""
        return Sequence(
            seq_id=child_id,
            token_ids=list(self.token_ids),
            max_new_tokens=self.max_new_tokens,
            num_prompt_tokens=self.num_prompt_tokens,
            arrival=self.arrival,
            beam_width=self.beam_width,
            parent_id=self.seq_id,
            group_id=self.group_id,
            ignore_eos=self.ignore_eos,
            status=self.status,
        )
