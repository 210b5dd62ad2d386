"""Decode attention over the paged pool: one new token per sequence, no gathered copy per
sequence and no per-sequence Python loop.

A decode step's queries are ``[B, Hq, D]``. Per step (once, shared by every layer) the
sequences are put in at most four groups of similar length (``length_groups``: a group is
split where the padding saved outweighs the fixed cost of one more call), and the plan of
each group holds the used block ids of its sequences (``-1`` entries point at block 0 and
are masked), the row ids that lay those blocks' keys out head-major (``head_major_rows``),
and an additive bias ``[B, 1, keys]`` (0 where the query sees the key, ``-inf`` elsewhere)
from the one visibility rule of ``engine.kernels.reference``.

Per layer the K and V rows are copied with one ``index_select`` each into a workspace that
every layer and step reuses, as ``[B, Hkv, keys, D]`` (each head's keys contiguous), and
one ``scaled_dot_product_attention`` call attends them, the ``Hq / Hkv`` query heads that
share a KV head taking the place of that head's query positions (``[B, Hkv, Hq / Hkv, D]``,
no causal mask): no K/V is repeated for GQA, and the CPU's fused attention kernel reads
contiguous keys. (Measured on a batch-64 decode of the benchmark model, one thread: about
2.2 ms per layer against 2.9 ms for the two batched products over block-diagonal queries
this replaced, and 0.1 against 0.3 ms at batch 1.)

The backend (``engine.kernels.select``) first tries ``engine.kernels.decode_mirror``, which
keeps those head-major copies across decode steps while the batch keeps its sequences and
adds only the new token; this path serves the decode calls it cannot take (a sliding
window, sinks, an fp8 pool, a batch over its memory bound) and direct callers.

Masked keys may hold stale memory, even NaN: the bias hides finite values, and a NaN (only
possible from such memory) shows in the small output, which is then recomputed with the
masked keys zeroed, as the reference does.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from .visibility import FP8_DTYPE, visibility_mask

__all__ = [
    "DecodeGroup",
    "DecodePlan",
    "Workspace",
    "decode_attention",
    "decode_plan",
    "length_groups",
]


class Workspace:
    """Named scratch tensors reused across layers and steps, grown on demand.

    A tensor handed out is valid until the next request for the same name; callers use
    it within one attention call (the outputs they return are fresh tensors).
    """

    def __init__(self) -> None:
        self._flat: dict[tuple[str, torch.dtype, torch.device], torch.Tensor] = {}

    def get(
        self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        numel = 1
        for size in shape:
            numel *= size
        key = (name, dtype, device)
        flat = self._flat.get(key)
        if flat is None or flat.numel() < numel:
            flat = torch.empty(max(numel, 1), dtype=dtype, device=device)
            self._flat[key] = flat
        return flat[:numel].view(shape)

    def clear(self) -> None:
        self._flat.clear()


class DecodeGroup(NamedTuple):
    """Sequences of one decode step padded to a common number of blocks."""

    rows: torch.Tensor | None  # [n] sequence indices in the step (None: all, in order)
    num_blocks: int  # blocks per sequence gathered (the group's longest sequence's)
    blocks: torch.Tensor  # [n * num_blocks] int64 block ids, -1 replaced by 0
    bias: torch.Tensor  # [n, 1, keys] float32: 0 visible, -inf hidden
    hidden: torch.Tensor  # [n, keys, 1] bool: keys that must contribute nothing
    cache: dict  # derived index tensors, per KV head count (``head_major_rows``)


class DecodePlan(NamedTuple):
    """What every layer of one decode step shares (for one window): the step's sequences
    in groups of similar length, so a short sequence is not padded to the longest."""

    groups: tuple[DecodeGroup, ...]


# A group costs about as much fixed work as gathering and scoring this many (sequence,
# block) pairs (chosen from CPU profiles of the mixed request stream: at 10 the extra
# calls cost more than the padding they saved).
GROUP_COST_BLOCKS = 32


def length_groups(num_blocks: list[int], cost: int = GROUP_COST_BLOCKS) -> list[list[int]]:
    """Split sequences (their blocks needed) into at most four groups of similar length,
    each padded to its longest, where a split saves more padded pairs than ``cost``."""
    order = sorted(range(len(num_blocks)), key=num_blocks.__getitem__)

    def split(idx: list[int], depth: int) -> list[list[int]]:
        n = len(idx)
        whole = n * num_blocks[idx[-1]]
        best, at = whole, 0
        for m in range(1, n):
            padded = m * num_blocks[idx[m - 1]] + (n - m) * num_blocks[idx[-1]]
            if padded < best:
                best, at = padded, m
        if depth == 0 or at == 0 or whole - best <= cost:
            return [idx]
        return split(idx[:at], depth - 1) + split(idx[at:], depth - 1)

    return split(order, 2) if order else []


def decode_plan(
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    bs: int,
    sliding_window: int | None,
    sink_tokens: int,
    sink_bubble: int,
) -> DecodePlan:
    """The plan of a step whose sequences each have one new token (already stored)."""
    cache_lens = context_lens
    if sink_bubble:
        cache_lens = torch.where(
            context_lens > sink_tokens, context_lens + sink_bubble, context_lens
        )
    needed = [max(1, -(-n // bs)) for n in cache_lens.tolist()]
    groups = length_groups(needed)
    if len(groups) == 1:
        args = (sliding_window, sink_tokens, sink_bubble)
        return DecodePlan((_group(None, block_tables, context_lens, max(needed), bs, *args),))
    out = []
    for members in groups:
        rows = torch.tensor(members, dtype=torch.int64, device=context_lens.device)
        out.append(
            _group(
                rows,
                block_tables.index_select(0, rows),
                context_lens.index_select(0, rows),
                max(needed[i] for i in members),
                bs,
                sliding_window,
                sink_tokens,
                sink_bubble,
            )
        )
    return DecodePlan(tuple(out))


def _group(
    rows: torch.Tensor | None,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    num_blocks: int,
    bs: int,
    sliding_window: int | None,
    sink_tokens: int,
    sink_bubble: int,
) -> DecodeGroup:
    device = context_lens.device
    table = block_tables[:, :num_blocks].long()
    present = (table >= 0).repeat_interleave(bs, dim=1)
    k_index = torch.arange(num_blocks * bs, device=device)
    k_pos = k_index
    if sink_bubble:
        in_bubble = (k_index >= sink_tokens) & (k_index < sink_tokens + sink_bubble)
        present = present & ~in_bubble[None, :]
        k_pos = torch.where(k_index < sink_tokens, k_index, k_index - sink_bubble)
    q_pos = (context_lens - 1)[:, None]
    visible = present & (k_pos[None, :] < context_lens[:, None])
    visible = visible & visibility_mask(q_pos, k_pos[None, :], sliding_window, sink_tokens)
    bias = torch.zeros(visible.shape, dtype=torch.float32, device=device)
    bias.masked_fill_(~visible, float("-inf"))
    blocks = table.clamp(min=0).reshape(-1)
    return DecodeGroup(rows, num_blocks, blocks, bias[:, None, :], ~visible[:, :, None], {})


def _gather(
    kv_layer: torch.Tensor, which: int, index: torch.Tensor, ws: Workspace, name: str
) -> torch.Tensor:
    """Rows ``index`` (of ``D`` values each) of K (``which=0``) or V, as stored, into the
    workspace: ``[rows, D]``."""
    src = kv_layer[which]
    if src.dtype == FP8_DTYPE:  # index_select has no fp8 kernel: move the bytes
        src = src.view(torch.uint8)
    src = src.reshape(-1, src.shape[-1])
    out = ws.get(name, (index.shape[0], src.shape[1]), src.dtype, src.device)
    torch.index_select(src, 0, index, out=out)
    return out.view(kv_layer.dtype) if kv_layer.dtype == FP8_DTYPE else out


def _load(x: torch.Tensor, dtype: torch.dtype, scale: float) -> torch.Tensor:
    if x.dtype == FP8_DTYPE:
        return x.to(dtype) * scale
    return x if x.dtype == dtype else x.to(dtype)


def head_major_rows(group: DecodeGroup, bs: int, hkv: int) -> torch.Tensor:
    """Row ids into a pool layer viewed as ``[blocks * bs * Hkv, D]`` that lay a group's
    keys out head-major, ``[n, Hkv, keys]`` (worked out once per step and head count)."""
    index = group.cache.get(hkv)
    if index is None:
        device = group.blocks.device
        n = group.bias.shape[0]
        blocks = group.blocks.view(n, 1, group.num_blocks, 1)
        slot = torch.arange(bs, device=device).view(1, 1, 1, bs)
        head = torch.arange(hkv, device=device).view(1, hkv, 1, 1)
        index = ((blocks * bs + slot) * hkv + head).reshape(-1)
        group.cache[hkv] = index
    return index


def decode_attention(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    plan: DecodePlan,
    ws: Workspace,
    *,
    scale: float,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> torch.Tensor:
    """Attention of ``query[B, Hq, D]`` (one token per sequence) over the paged pool
    ``kv_layer[2, blocks, bs, Hkv, D]``; returns a fresh ``[B, Hq, D]`` tensor."""
    if len(plan.groups) == 1 and plan.groups[0].rows is None:
        return _group_attention(query, kv_layer, plan.groups[0], ws, scale, k_scale, v_scale)
    out = torch.empty_like(query)
    for group in plan.groups:
        assert group.rows is not None
        part = query.index_select(0, group.rows)
        part = _group_attention(part, kv_layer, group, ws, scale, k_scale, v_scale)
        out.index_copy_(0, group.rows, part)
    return out


def _group_attention(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    group: DecodeGroup,
    ws: Workspace,
    scale: float,
    k_scale: float,
    v_scale: float,
) -> torch.Tensor:
    b, hq, d = query.shape
    bs, hkv = kv_layer.shape[2], kv_layer.shape[3]
    keys = group.bias.shape[-1]
    index = head_major_rows(group, bs, hkv)
    k = _load(_gather(kv_layer, 0, index, ws, "k"), query.dtype, k_scale)
    v = _load(_gather(kv_layer, 1, index, ws, "v"), query.dtype, v_scale)
    k, v = k.view(b, hkv, keys, d), v.view(b, hkv, keys, d)
    bias = group.bias if group.bias.dtype == query.dtype else group.bias.to(query.dtype)
    bias = bias.view(b, 1, 1, keys)
    # The group's query heads of one KV head are that head's queries: [B, Hkv, Hq/Hkv, D].
    q = query.view(b, hkv, hq // hkv, d)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)
    if bool(out.isnan().any()):
        hidden = group.hidden.view(b, 1, keys, 1)
        k, v = k.masked_fill(hidden, 0), v.masked_fill(hidden, 0)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)
    return out.reshape(b, hq, d)
