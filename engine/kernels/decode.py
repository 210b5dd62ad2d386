"""Decode attention over the paged pool: one new token per sequence, no gathered copy per
sequence and no per-sequence Python loop.

A decode step's queries are ``[B, Hq, D]``. Per step (once, shared by every layer) the
sequences are put in at most four groups of similar length (``length_groups``: a group is
split where the padding saved outweighs the fixed cost of one more call), and the plan of
each group holds the used block ids of its sequences as one flat index (``-1`` entries point
at block 0 and are masked) and an additive bias ``[B, 1, keys]`` (0 where the query sees
the key, ``-inf`` elsewhere) from the one visibility rule of ``engine.kernels.reference``.
Per layer the K and V blocks are copied with one ``index_select`` each into a workspace
that every layer and step reuses, and the scores and outputs are two batched matrix
products:

- few KV heads (``Hkv <= 4``): one product per sequence over all heads at once, the query
  laid out block-diagonally (``[Hq, Hkv * D]``, zero outside its own KV head's columns) so
  the gathered ``[keys, Hkv * D]`` block rows are used as they lie; the output keeps the
  diagonal blocks. ``Hkv`` times the arithmetic of the minimum, which at these sizes costs
  less than ``B * Hkv`` separate small products;
- more KV heads: one product per (sequence, KV head) over strided views.

Masked keys may hold stale memory, even NaN: the bias hides finite values, and a NaN (only
possible from such memory) shows in the small output, which is then recomputed with the
masked keys zeroed, as the reference does.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .visibility import FP8_DTYPE, visibility_mask

__all__ = [
    "DecodeGroup",
    "DecodePlan",
    "Workspace",
    "decode_attention",
    "decode_plan",
    "length_groups",
]

# Up to this many KV heads the block-diagonal form wins (measured at head_dim 32; see
# the module docstring).
BLOCK_DIAGONAL_MAX_KV_HEADS = 4


class Workspace:
    """Named scratch tensors reused across layers and steps, grown on demand.

    A tensor handed out is valid until the next request for the same name; callers use
    it within one attention call (the outputs they return are fresh tensors).
    """

    def __init__(self) -> None:
        self._flat: dict[tuple[str, torch.dtype, torch.device], torch.Tensor] = {}
        self._zeroed: dict[tuple[str, torch.dtype, torch.device], tuple] = {}

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

    def zeros(
        self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """Like ``get``, but zero-filled whenever ``shape`` differs from the previous call
        for ``name``; callers that write only part of it keep the rest zero."""
        out = self.get(name, shape, dtype, device)
        key = (name, dtype, device)
        if self._zeroed.get(key) != (shape, out.data_ptr()):
            out.zero_()
            self._zeroed[key] = (shape, out.data_ptr())
        return out

    def clear(self) -> None:
        self._flat.clear()
        self._zeroed.clear()


class DecodeGroup(NamedTuple):
    """Sequences of one decode step padded to a common number of blocks."""

    rows: torch.Tensor | None  # [n] sequence indices in the step (None: all, in order)
    num_blocks: int  # blocks per sequence gathered (the group's longest sequence's)
    blocks: torch.Tensor  # [n * num_blocks] int64 block ids, -1 replaced by 0
    bias: torch.Tensor  # [n, 1, keys] float32: 0 visible, -inf hidden
    hidden: torch.Tensor  # [n, keys, 1] bool: keys that must contribute nothing


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
    return DecodeGroup(rows, num_blocks, blocks, bias[:, None, :], ~visible[:, :, None])


def _gather(
    kv_layer: torch.Tensor, which: int, blocks: torch.Tensor, ws: Workspace, name: str
) -> torch.Tensor:
    """Blocks ``blocks`` of K (``which=0``) or V into the workspace, as stored."""
    src = kv_layer[which]
    if src.dtype == FP8_DTYPE:  # index_select has no fp8 kernel: move the bytes
        src = src.view(torch.uint8)
    out = ws.get(name, (blocks.shape[0], *src.shape[1:]), src.dtype, src.device)
    torch.index_select(src, 0, blocks, out=out)
    return out.view(kv_layer.dtype) if kv_layer.dtype == FP8_DTYPE else out


def _load(x: torch.Tensor, dtype: torch.dtype, scale: float) -> torch.Tensor:
    if x.dtype == FP8_DTYPE:
        return x.to(dtype) * scale
    return x if x.dtype == dtype else x.to(dtype)


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
        return _group_attention(query, kv_layer, plan.groups[0], ws, 0, scale, k_scale, v_scale)
    out = torch.empty_like(query)
    for i, group in enumerate(plan.groups):
        assert group.rows is not None
        part = query.index_select(0, group.rows)
        part = _group_attention(part, kv_layer, group, ws, i, scale, k_scale, v_scale)
        out.index_copy_(0, group.rows, part)
    return out


def _group_attention(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    group: DecodeGroup,
    ws: Workspace,
    index: int,
    scale: float,
    k_scale: float,
    v_scale: float,
) -> torch.Tensor:
    b, hq, d = query.shape
    hkv = kv_layer.shape[3]
    keys = group.bias.shape[-1]
    k = _load(_gather(kv_layer, 0, group.blocks, ws, "k"), query.dtype, k_scale)
    v = _load(_gather(kv_layer, 1, group.blocks, ws, "v"), query.dtype, v_scale)
    k, v = k.view(b, keys, hkv, d), v.view(b, keys, hkv, d)
    out = _attend(query, k, v, group, ws, index, scale)
    if bool(out.isnan().any()):
        k = k.masked_fill(group.hidden[..., None], 0)
        v = v.masked_fill(group.hidden[..., None], 0)
        out = _attend(query, k, v, group, ws, index, scale)
    return out


def _attend(
    query: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    plan: DecodeGroup,
    ws: Workspace,
    index: int,
    scale: float,
) -> torch.Tensor:
    b, keys, hkv, d = k.shape
    hq = query.shape[1]
    group = hq // hkv
    bias = plan.bias if plan.bias.dtype == query.dtype else plan.bias.to(query.dtype)
    if hkv <= BLOCK_DIAGONAL_MAX_KV_HEADS:
        # Query row (h, g) holds q in the columns of KV head h and zeros elsewhere.
        q_bd = ws.zeros(f"q_bd{index}", (b, hkv, group, hkv, d), query.dtype, query.device)
        torch.diagonal(q_bd, dim1=1, dim2=3).copy_(query.view(b, hkv, group, d).permute(0, 2, 3, 1))
        scores = torch.bmm(q_bd.view(b, hq, hkv * d), k.view(b, keys, hkv * d).transpose(1, 2))
        scores.mul_(scale).add_(bias)
        probs = torch.softmax(scores, dim=-1)
        full = torch.bmm(probs, v.reshape(b, keys, hkv * d)).view(b, hkv, group, hkv, d)
        return torch.diagonal(full, dim1=1, dim2=3).permute(0, 3, 1, 2).reshape(b, hq, d)
    # One product per (KV head, sequence): [hkv, b, ...] keeps each head's result contiguous.
    q = query.view(b, hkv, group, d)
    scores = query.new_empty(hkv, b, group, keys)
    for h in range(hkv):
        torch.bmm(q[:, h], k[:, :, h].transpose(1, 2), out=scores[h])
    scores.mul_(scale).add_(bias)
    probs = torch.softmax(scores, dim=-1)
    out = query.new_empty(hkv, b, group, d)
    for h in range(hkv):
        torch.bmm(probs[h], v[:, :, h], out=out[h])
    return out.permute(1, 0, 2, 3).reshape(b, hq, d)
