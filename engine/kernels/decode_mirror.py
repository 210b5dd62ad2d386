"""Head-major copies of the decode batch's cached K/V, kept across decode steps (CPU).

The paged pool stores a layer's K/V token-major (``[blocks, bs, Hkv, D]``); attention
wants each sequence's keys head-major and contiguous (``[Hkv, keys, D]``). The decode path
of ``engine.kernels.decode`` copies them out of the pool every step and layer; while the
decode batch keeps its sequences, all but one key per sequence of that copy is the same as
the step before. A ``DecodeMirror`` keeps, per pool layer, one ``[B, Hkv, cap, D]`` K and V
copy of the batch's keys (key ``p`` of row ``b`` at ``[b, :, p]``) and adds only the new
token's K/V each step (one strided copy per K and V when the rows have one length, a row
scatter otherwise); the paged pool is still written as before, so everything else
(preemption, prefix reuse, offload, beams) reads the pool as always.

When a copy is current. One step's plan (shared by the layers of the step) says whether
the step continues the previous mirrored step: the same number of sequences, each one
token longer, and each block table unchanged over the blocks the previous step used. A
layer's copy is then extended in place if it was brought up to date at that previous step;
otherwise (first step, admission, finish, preemption, a beam fork, a full copy) it is
rebuilt from the pool with one row gather per K and V. Any call for a layer that does not
go through the mirror (a prefill or mixed step, a sliding window, sinks, an fp8 pool, a
padding slot) drops that layer's copy (``drop``), so a copy never misses a pool write made
in a forward step. Writes outside a forward (a block copied for copy-on-write, a block
brought back from the host) go to newly allocated blocks, which change a block table.

Why the rows stay valid: between two mirrored steps the only writes into a sequence's
blocks are its own new tokens; a full block is shared only with sequences of the same
prefix (same tokens, same K/V); a freed partial block comes back only through a new
allocation, which changes a table or the batch. Keys past a row's length (padding up to
the longest row and the headroom past it) are filled with the row's first key when a copy
is rebuilt and hidden by an additive bias, so no stale memory (even NaN) reaches the
output.

Memory: the two copies of a layer take at most ``max_bytes`` (default: as much as the
layer's pool, so the copies never need more than the pool again); a batch whose longest
row does not fit takes the gather path.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .metadata import AttentionMetadata

__all__ = ["DecodeMirror", "MirrorPlan"]

# Keys of headroom allocated past the longest row at a rebuild (at least), so that a batch
# decodes this many steps before its copies are rebuilt larger.
HEADROOM_KEYS = 32


@dataclass
class MirrorPlan:
    """What every layer of one mirrored decode step shares."""

    serial: int  # this step's number
    prev_serial: int | None  # the previous mirrored step's number, when this one continues it
    num_seqs: int
    max_len: int  # the longest row's keys (its context length)
    width: int  # block table columns
    context_lens: torch.Tensor  # [B] int64
    block_tables: torch.Tensor  # [B, width]
    used: torch.Tensor  # [B, width] bool: the blocks each row's keys are in
    # [B, 1, 1, max_len]: 0 where a row has the key, -inf past its length; None when every
    # row has ``max_len`` keys (nothing to hide: the attention takes no mask)
    bias: torch.Tensor | None
    # Row ids of the new keys in a copy viewed as ``[B * Hkv * cap, D]``, per (Hkv, cap).
    rows: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)
    # Row ids into the pool that lay the keys out head-major, per (Hkv, cap, bs).
    gather: dict[tuple[int, int, int], torch.Tensor] = field(default_factory=dict)


@dataclass
class _Copy:
    """One layer's K and V copies: ``[B, Hkv, cap, D]`` each."""

    pool: weakref.ref  # the pool layer the copies mirror
    k: torch.Tensor
    v: torch.Tensor
    serial: int  # the step whose keys they hold (-1: none)


class DecodeMirror:
    """Per-layer head-major K/V copies of the decode batch, extended one token a step."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._copies: dict[int, _Copy] = {}
        self._last: MirrorPlan | None = None
        self._serial = 0
        self.rebuilds = 0  # layers rebuilt from the pool (a count, for tests and profiles)
        self.extends = 0  # layers extended by one token per row

    def drop(self, kv_layer: torch.Tensor) -> None:
        """A call for this layer went another way: its copy no longer follows the pool."""
        copy = self._copies.get(id(kv_layer))
        if copy is not None:
            copy.serial = -1

    def clear(self) -> None:
        self._copies.clear()
        self._last = None

    def plan(self, meta: AttentionMetadata, bs: int) -> MirrorPlan | None:
        """The step's plan (once per step, kept in ``meta.plan_cache``; ``bs`` tokens per
        block), or None when a block table has a hole where its row has keys (no copy can
        stand for it)."""
        cache = meta.plan_cache
        if "mirror" in cache:
            return cache["mirror"]
        ctx, tables = meta.context_lens, meta.block_tables
        host = cache.get("host_lens")
        lens = list(host[0]) if host is not None else ctx.tolist()
        n, max_len = len(lens), max(lens)
        need = (ctx + (bs - 1)) // bs  # blocks each row uses
        col = torch.arange(tables.shape[1], device=ctx.device)[None, :]
        used = col < need[:, None]
        plan: MirrorPlan | None = None
        self._last, prev = None, self._last
        if bool(((tables >= 0) | ~used).all()):
            serial = self._serial = self._serial + 1
            prev_serial = None
            if prev is not None and prev.num_seqs == n and tables.shape[1] >= prev.width:
                width = prev.width
                same = (tables[:, :width] == prev.block_tables) | ~prev.used
                if torch.equal(ctx, prev.context_lens + 1) and bool(same.all()):
                    prev_serial = prev.serial
            bias = None
            if min(lens) < max_len:
                keys = torch.arange(max_len, device=ctx.device)
                bias = torch.zeros((n, max_len), dtype=torch.float32, device=ctx.device)
                bias.masked_fill_(keys[None, :] >= ctx[:, None], float("-inf"))
                bias = bias.view(n, 1, 1, max_len)
            plan = MirrorPlan(
                serial=serial,
                prev_serial=prev_serial,
                num_seqs=n,
                max_len=max_len,
                width=tables.shape[1],
                context_lens=ctx.clone(),
                block_tables=tables.clone(),
                used=used,
                bias=bias,
            )
            self._last = plan
        cache["mirror"] = plan
        return plan

    def attention(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_layer: torch.Tensor,
        plan: MirrorPlan,
        scale: float,
    ) -> torch.Tensor | None:
        """Attention of ``query[B, Hq, D]`` (one new token per row, its ``key``/``value``
        ``[B, Hkv, D]`` already in the pool) over the layer's copy, brought up to date; None
        when the copy would exceed the memory bound (the caller takes the gather path)."""
        b, hq, d = query.shape
        hkv = kv_layer.shape[3]
        copy = self._current(kv_layer, plan)
        if copy is None:
            return None
        if copy.serial == plan.prev_serial:
            if plan.bias is None:
                # Every row's new key sits at the same place: a strided copy, no row ids
                # (and no contiguous copy of the new K/V first).
                at = plan.max_len - 1
                copy.k[:, :, at].copy_(key)
                copy.v[:, :, at].copy_(value)
            else:
                rows = self._new_rows(plan, hkv, copy.k.shape[2])
                copy.k.view(-1, d).index_copy_(0, rows, key.reshape(b * hkv, d))
                copy.v.view(-1, d).index_copy_(0, rows, value.reshape(b * hkv, d))
            self.extends += 1
        else:
            self._rebuild(copy, kv_layer, plan)
            self.rebuilds += 1
        copy.serial = plan.serial
        n = plan.max_len
        k, v = copy.k[:, :, :n], copy.v[:, :, :n]
        bias = plan.bias
        if bias is not None and bias.dtype != query.dtype:
            bias = bias.to(query.dtype)
        # The query heads that share a KV head are that head's queries: [B, Hkv, Hq/Hkv, D].
        q = query.view(b, hkv, hq // hkv, d)
        # Hidden keys are copies of stored keys (see ``_rebuild``): no stale NaN gets in.
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)
        return out.reshape(b, hq, d)

    def _current(self, kv_layer: torch.Tensor, plan: MirrorPlan) -> _Copy | None:
        """The layer's copy, reallocated when the batch or its length outgrew it."""
        _, _, bs, hkv, d = kv_layer.shape
        copy = self._copies.get(id(kv_layer))
        if copy is not None and copy.pool() is not kv_layer:
            copy = None  # another tensor now has that id
        fits = (
            copy is not None
            and copy.k.shape[0] == plan.num_seqs
            and copy.k.shape[1] == hkv
            and copy.k.shape[3] == d
            and copy.k.dtype == kv_layer.dtype
        )
        if copy is not None and fits and plan.max_len <= copy.k.shape[2]:
            return copy
        # Headroom past the longest row, within the bound: the pool's token slots (or
        # ``max_bytes``) shared by the rows.
        limit = kv_layer.numel() * kv_layer.element_size()
        if self.max_bytes is not None:
            limit = self.max_bytes
        most = limit // (2 * plan.num_seqs * hkv * d * kv_layer.element_size())
        want = -(-(plan.max_len + max(HEADROOM_KEYS, plan.max_len // 4)) // bs) * bs
        cap = min(want, most)
        if cap < plan.max_len:
            self._copies.pop(id(kv_layer), None)
            return None
        shape = (plan.num_seqs, hkv, cap, d)
        # Every key is written by the rebuild that follows.
        k = torch.empty(shape, dtype=kv_layer.dtype, device=kv_layer.device)
        copy = _Copy(weakref.ref(kv_layer), k, torch.empty_like(k), -1)
        self._copies[id(kv_layer)] = copy
        return copy

    @staticmethod
    def _new_rows(plan: MirrorPlan, hkv: int, cap: int) -> torch.Tensor:
        rows = plan.rows.get((hkv, cap))
        if rows is None:
            ctx = plan.context_lens
            b = torch.arange(plan.num_seqs, device=ctx.device)[:, None]
            head = torch.arange(hkv, device=ctx.device)[None, :]
            rows = ((b * hkv + head) * cap + (ctx - 1)[:, None]).reshape(-1)
            plan.rows[(hkv, cap)] = rows
        return rows

    @staticmethod
    def _rebuild(copy: _Copy, kv_layer: torch.Tensor, plan: MirrorPlan) -> None:
        """Every row's keys from the pool (after this step's store) into the copy."""
        _, _, bs, hkv, d = kv_layer.shape
        cap = copy.k.shape[2]
        index = plan.gather.get((hkv, cap, bs))
        if index is None:
            nb = -(-plan.max_len // bs)
            table = plan.block_tables[:, :nb].long()
            key_pos = torch.arange(cap, device=table.device)
            block = table.gather(
                1, (key_pos // bs).clamp(max=nb - 1)[None, :].expand(len(table), -1)
            )
            # A key past a row's length reads that row's first key (a stored, finite
            # value) instead of a stale slot that might hold NaN: the bias hides it
            # without a trace (exp(-inf) * finite = 0), and later steps write only at a
            # row's new key, so a hidden key stays such a copy until it becomes visible.
            own = key_pos[None, :] < plan.context_lens[:, None]
            slot = torch.where(own, block * bs + key_pos % bs, table[:, :1] * bs)
            head = torch.arange(hkv, device=table.device)
            index = (slot[:, None, :] * hkv + head[None, :, None]).reshape(-1)
            plan.gather[(hkv, cap, bs)] = index
        for which, dst in ((0, copy.k), (1, copy.v)):
            src = kv_layer[which].reshape(-1, d)
            torch.index_select(src, 0, index, out=dst.view(-1, d))
