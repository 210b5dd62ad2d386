"""Attention metadata: what one step's packed batch tells the attention backend.

A step packs the new tokens of several sequences back to back (``num_tokens`` rows). For
sequence ``b`` the rows ``query_start_loc[b]:query_start_loc[b + 1]`` are its new tokens,
and after this step's K/V are stored its cache holds ``context_lens[b]`` tokens, so its
first new token sits at position ``context_lens[b] - query_len[b]``. This covers a
whole prompt (nothing cached yet), a chunk that continues a cached prefix, and decode (one
new token per sequence) with the same fields.

Positions and cache indices. Lengths and query positions count tokens of the text. With
``S`` sink tokens whose last block is not full, the KV layout pads the sinks with a bubble
of ``B = sink_bubble`` empty slots, so token ``p >= S`` lives at cache index ``p + B``
(see ``engine.kv.layout``). Backends walk the block table by cache index, map cache index
``c`` back to position ``c`` (``c < S``) or ``c - B`` (``c >= S + B``), and never let a query
see the bubble slots ``[S, S + B)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class AttentionMetadata:
    """Index tensors shared by every layer of one forward step.

    Attributes:
        slot_mapping: ``[num_tokens]`` int64; where each new token's K/V goes
            (``block_id * tokens_per_block + offset``); ``-1`` means do not store.
        block_tables: ``[num_seqs, max_blocks]`` int32/int64 block ids, padded with ``-1``.
            An entry of ``-1`` inside the used range (a block dropped because it left the
            sliding window) is masked out.
        context_lens: ``[num_seqs]`` cached tokens per sequence, this step's tokens included.
        query_start_loc: ``[num_seqs + 1]`` prefix sums of the new-token counts
            (``cu_seqlens_q``).
        is_prefill: False only when every sequence has exactly one new token (pure decode);
            backends may then take a decode fast path.
        max_query_len: the largest new-token count (saves a device sync); None = compute.
        sliding_window: runtime window ``W`` in tokens (sinks included) or None. A layer's
            effective window is the smaller of this and the model's own window.
        sink_tokens: ``S``, the StreamingLLM sink tokens that stay visible (0 = none).
        sink_bubble: ``B``, empty slots padding the sinks to a block boundary; cache index
            ``p + B`` holds position ``p >= S`` (0 = cache index equals position).
    """

    slot_mapping: torch.Tensor
    block_tables: torch.Tensor
    context_lens: torch.Tensor
    query_start_loc: torch.Tensor
    is_prefill: bool
    max_query_len: int | None = None
    sliding_window: int | None = None
    sink_tokens: int = 0
    sink_bubble: int = 0
    # Backends keep tensors derived from these fields here, shared by all layers of a step.
    plan_cache: dict = field(default_factory=dict, repr=False, compare=False)
    # An ``engine.step_timing.StepTimes`` that times the attention calls, or None.
    timer: Any = field(default=None, repr=False, compare=False)

    def cache_lens(self) -> torch.Tensor:
        """Cache indices each sequence spans (its length plus the bubble past the sinks)."""
        if self.sink_bubble == 0:
            return self.context_lens
        ctx = self.context_lens
        return torch.where(ctx > self.sink_tokens, ctx + self.sink_bubble, ctx)

    def stores_every_token(self) -> bool:
        """True when no slot is ``-1`` (worked out once per step, for every layer)."""
        cache = self.plan_cache
        if "stores_every_token" not in cache:
            cache["stores_every_token"] = not bool((self.slot_mapping < 0).any())
        return cache["stores_every_token"]

    @property
    def num_seqs(self) -> int:
        return int(self.context_lens.shape[0])

    @property
    def query_lens(self) -> torch.Tensor:
        return self.query_start_loc[1:] - self.query_start_loc[:-1]

    def last_token_indices(self) -> torch.Tensor:
        """Row index of each sequence's last new token in the packed batch."""
        return self.query_start_loc[1:] - 1

    def query_positions(self) -> torch.Tensor:
        """Cache position of every packed row: ``context_len - query_len + t``."""
        qlens = self.query_lens
        seq_of_row = torch.repeat_interleave(
            torch.arange(self.num_seqs, device=qlens.device), qlens
        )
        offset = torch.arange(int(self.query_start_loc[-1]), device=qlens.device)
        offset = offset - self.query_start_loc[:-1][seq_of_row]
        return (self.context_lens - qlens)[seq_of_row] + offset

    @classmethod
    def from_lists(
        cls,
        *,
        block_tables: Sequence[Sequence[int]],
        context_lens: Sequence[int],
        query_lens: Sequence[int],
        tokens_per_block: int,
        sliding_window: int | None = None,
        sink_tokens: int = 0,
        sink_bubble: int = 0,
        device: torch.device | str = "cpu",
    ) -> AttentionMetadata:
        """Build the tensors from host lists; new tokens are the last ``query_lens[b]``
        positions of each sequence, and their slots follow from the block table (through
        the cache index, which skips the ``sink_bubble`` slots after the sinks)."""
        if not (len(block_tables) == len(context_lens) == len(query_lens)):
            raise ValueError("block_tables, context_lens and query_lens differ in length")
        slots: list[int] = []
        for table, ctx, qlen in zip(block_tables, context_lens, query_lens, strict=True):
            if not 0 < qlen <= ctx:
                raise ValueError(f"query length {qlen} must be in 1..context length {ctx}")
            span = ctx + sink_bubble if ctx > sink_tokens else ctx
            if len(table) * tokens_per_block < span:
                raise ValueError(f"block table of {len(table)} blocks is short for {ctx} tokens")
            for pos in range(ctx - qlen, ctx):
                index = pos + sink_bubble if pos >= sink_tokens else pos
                block = table[index // tokens_per_block]
                slots.append(
                    -1 if block < 0 else block * tokens_per_block + index % tokens_per_block
                )
        width = max(1, max((len(t) for t in block_tables), default=1))
        padded = [list(t) + [-1] * (width - len(t)) for t in block_tables]
        starts = [0]
        for qlen in query_lens:
            starts.append(starts[-1] + qlen)
        return cls(
            slot_mapping=torch.tensor(slots, dtype=torch.int64, device=device),
            block_tables=torch.tensor(padded, dtype=torch.int32, device=device),
            context_lens=torch.tensor(list(context_lens), dtype=torch.int64, device=device),
            query_start_loc=torch.tensor(starts, dtype=torch.int64, device=device),
            is_prefill=any(q != 1 for q in query_lens),
            max_query_len=max(query_lens, default=0),
            sliding_window=sliding_window,
            sink_tokens=sink_tokens,
            sink_bubble=sink_bubble,
        )


def effective_window(model_window: int | None, runtime_window: int | None) -> int | None:
    """The smaller of two optional windows (None = unbounded)."""
    if model_window is None:
        return runtime_window
    if runtime_window is None:
        return model_window
    return min(model_window, runtime_window)
