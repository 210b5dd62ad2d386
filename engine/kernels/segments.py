"""A mixed step cut into runs the reference backend attends apart, without padding.

A step packs prompt chunks and decode tokens back to back. Padding them all to the longest
chunk wastes most of the work when a 400-token prompt shares a step with 15 decodes, so
the step is cut (once, shared by every layer) into runs of consecutive sequences:

- ``fresh``: a whole prompt, or its first chunk (nothing cached before it). Its keys are
  exactly this step's own K/V, which the caller still holds: causal attention over them,
  with no read back from the pool;
- ``chunk``: a chunk continuing a cached prefix (later chunks, reused prefixes): the
  padded reference over the block table, one sequence at a time;
- ``decode``: consecutive one-token sequences: the decode path, all in one call (on a CPU,
  the backend's kept head-major copies, ``engine.kernels.decode_mirror``, when the step
  has one such run).

Used only where reading the pool back would give the same values (the pool stores K/V in
the query's dtype, no window, no sinks), so the results equal the all-in-one reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .metadata import AttentionMetadata

__all__ = ["Segment", "attend_segments", "host_lens", "segments"]


class Segment(NamedTuple):
    kind: str  # "fresh", "chunk" or "decode"
    rows: tuple[int, int]  # packed rows [start, end)
    meta: AttentionMetadata | None  # the run's own metadata (None for "fresh")


def segments(meta: AttentionMetadata) -> list[Segment]:
    """The runs of one step (worked out once per step)."""
    cache = meta.plan_cache
    if "segments" in cache:
        return cache["segments"]
    ctx, starts = host_lens(meta)
    qlens = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    out: list[Segment] = []
    seq = 0
    while seq < len(qlens):
        if qlens[seq] == 1:
            end = seq
            while end < len(qlens) and qlens[end] == 1:
                end += 1
            rows = (starts[seq], starts[end])
            out.append(Segment("decode", rows, sub_batch(meta, seq, end, 1)))
            seq = end
            continue
        rows = (starts[seq], starts[seq + 1])
        if ctx[seq] == qlens[seq]:
            out.append(Segment("fresh", rows, None))
        else:
            out.append(Segment("chunk", rows, sub_batch(meta, seq, seq + 1, qlens[seq])))
        seq += 1
    cache["segments"] = out
    return out


def host_lens(meta: AttentionMetadata) -> tuple[list[int], list[int]]:
    """``context_lens`` and ``query_start_loc`` as host lists: from the step's builder when
    it left them in ``plan_cache["host_lens"]`` (no device read), else read back once."""
    cache = meta.plan_cache
    if "host_lens" not in cache:
        cache["host_lens"] = (meta.context_lens.tolist(), meta.query_start_loc.tolist())
    return cache["host_lens"]


def sub_batch(meta: AttentionMetadata, lo: int, hi: int, max_query_len: int) -> AttentionMetadata:
    """The metadata of sequences lo..hi-1 of `meta`'s batch, their query rows from 0 (with
    their host lengths, sequence ids and block tables when the step has them)."""
    start = meta.query_start_loc[lo : hi + 1]
    cache: dict = {}
    host = meta.plan_cache.get("host_lens")
    if host is not None:
        ctx, starts = host
        cache["host_lens"] = (ctx[lo:hi], [s - starts[lo] for s in starts[lo : hi + 1]])
    for name in ("seq_ids", "host_tables"):
        rows = meta.plan_cache.get(name)
        if rows is not None:
            cache[name] = rows[lo:hi]
    return replace(
        meta,
        slot_mapping=meta.slot_mapping[start[0] : start[-1]],
        block_tables=meta.block_tables[lo:hi],
        context_lens=meta.context_lens[lo:hi],
        query_start_loc=start - start[0],
        is_prefill=max_query_len > 1,
        max_query_len=max_query_len,
        plan_cache=cache,
    )


def attend_segments(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
    paged: Callable[[torch.Tensor, AttentionMetadata], torch.Tensor],
    decode: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, AttentionMetadata], torch.Tensor]
    | None = None,
) -> torch.Tensor:
    """``query[num_tokens, Hq, D]`` with this step's ``key``/``value`` ``[num_tokens, Hkv,
    D]``; ``paged(query_rows, run_meta)`` attends a run through the pool, and ``decode(
    query_rows, key_rows, value_rows, run_meta)``, when given, a run of decode rows."""
    gqa = query.shape[1] != key.shape[1]
    parts = []
    for kind, (lo, hi), run in segments(meta):
        if kind == "fresh":
            q = query[lo:hi].transpose(0, 1)[None]
            k = key[lo:hi].transpose(0, 1)[None]
            v = value[lo:hi].transpose(0, 1)[None]
            out = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, scale=scale, enable_gqa=gqa
            )
            parts.append(out[0].transpose(0, 1))
        elif kind == "decode" and decode is not None:
            assert run is not None
            parts.append(decode(query[lo:hi], key[lo:hi], value[lo:hi], run))
        else:
            assert run is not None
            parts.append(paged(query[lo:hi], run))
    return parts[0] if len(parts) == 1 else torch.cat(parts)
