"""Head-major copies of the decode batch's cached K/V, kept across decode steps (CPU).

The paged pool stores a layer's K/V token-major (``[blocks, bs, Hkv, D]``); attention
wants each sequence's keys head-major and contiguous (``[Hkv, keys, D]``). The decode path
of ``engine.kernels.decode`` copies them out of the pool every step and layer; while a
sequence keeps decoding, all but one of its keys in that copy are the same as the step
before. A ``DecodeMirror`` keeps, per pool layer, one ``[R, Hkv, cap, D]`` K and V copy
whose first ``B`` rows (**slots**) hold the batch's sequences (key ``p`` of a sequence at
``[slot, :, p]``) and adds only each new token's K/V (one strided copy per K and V when
every row is carried in place with one length, a row scatter otherwise); the paged pool is still written as
before, so everything else (preemption, prefix reuse, offload, beams) reads the pool as
always. The decode rows of a mixed step (prompt chunks and decodes, cut apart by
``engine.kernels.segments``) take the same copies.

When a row is current. One step's plan (shared by the layers of the step) matches each of
its sequences to a slot of the previous mirrored step: the same sequence (``seq_ids`` in
the step's ``plan_cache``, given by the runtime; the row's position when absent), one token
longer, its block table unchanged over the blocks that step used. Such a row is
**carried**: it keeps its keys and gets its new token. Slots of sequences that left
(finished, preempted, a beam dropped) are filled by moving carried rows down from the end,
so the live slots stay ``0..B-1``; sequences not carried (admitted, resumed, a forked beam,
a replaced block) take the last slots and are read from the pool, one row gather per K and
V. The queries and outputs are permuted between the step's row order and the slot order
(two small index copies). A layer whose copy was not brought up to date at the previous
mirrored step (first step, a call that went another way, a batch over the copy's rows or
keys) is rebuilt: every slot read from the pool. Any call for a layer that does not go
through the mirror (a prefill without decode rows, a sliding window, sinks, an fp8 pool, a
padding slot) drops that layer's copy (``drop``), so a copy never misses a pool write made
in a forward step. Writes outside a forward (a block copied for copy-on-write, a block
brought back from the host) go to newly allocated blocks, which change a block table (or
belong to a sequence the previous step did not have).

Why carried rows stay valid: between two mirrored steps the only writes into a sequence's
blocks are its own new tokens (a prompt chunk of the same step writes its own blocks); a
full block is shared only with sequences of the same prefix (same tokens, same K/V); a
freed partial block comes back only through a new allocation, which belongs to another
sequence or changes a table; a preempted sequence computes its tokens again in a step where
it has no decode row, so the step after finds it in no previous plan. Keys past a row's
length (padding up to the longest row and the headroom past it) are finite: copies of the
row's first key (written when the row is read from the pool), zeros (when a copy grows to
more slots or keys, only keys below the longest row move into the larger copy), or a left
sequence's keys (a moved row copies only its keys below the longest row); the additive bias
hides them, so no stale memory (even NaN) reaches the output.

Two layouts. For torch's attention (``scaled_dot_product_attention``, one call over the
batch padded to its longest row, the bias hiding the padding) K and V are both
``[R, Hkv, cap, D]``. For the CPU kernel of ``engine.kernels.cpu_decode`` (float32, where
it could be built) K is stored transposed, ``[R, Hkv, D, cap]``, and each row attends only
its own keys: nothing is padded or masked, and keys past a row's length are never read (a
grown copy is not zeroed; admitted rows are read and moved rows copied by the kernel's
library, their own keys only). The kernel also writes the carried rows' new K/V as it
attends. A layer's copy is rebuilt when the wanted layout changes (the kernel switched on
or off).

Memory: the two copies of a layer take at most ``max_bytes`` (default: as much as the
layer's pool, so the copies never need more than the pool again); a batch whose longest
row does not fit takes the gather path.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from . import cpu_decode
from .metadata import AttentionMetadata

__all__ = ["DecodeMirror", "MirrorPlan"]

# Keys of headroom allocated past the longest row (at least; as many as the row has when
# more), so that a batch decodes this many steps before its copies grow.
HEADROOM_KEYS = 32


@dataclass
class MirrorPlan:
    """What every layer of one mirrored decode step shares. Tensors marked "slot order"
    follow the copies' slots; the others the step's rows."""

    serial: int  # this step's number
    prev_serial: int | None  # the previous mirrored step's number, when rows carry over
    num_seqs: int
    max_len: int  # the longest row's keys (its context length)
    context_lens: torch.Tensor  # [B] int64
    block_tables: torch.Tensor  # [B, width]
    # The blocks each row's keys are in, per row: the first ceil(len / bs) entries of its
    # table (from the runtime's host lists, or read from ``block_tables``).
    used_blocks: list[tuple[int, ...]]
    slot_ids: list[int]  # the sequence in each slot
    slot_rows: list[int]  # the step row in each slot
    slot_lens: list[int]  # the context length in each slot
    carried: int  # slots 0..carried-1 keep their keys; the rest are read from the pool
    ragged: bool  # some row is shorter than ``max_len`` (torch's attention needs ``bias``)
    order: torch.Tensor | None  # [B] the step row of each slot; None: the identity
    inverse: torch.Tensor | None  # [B] the slot of each step row; None: the identity
    # (destination slots, source slots) of carried rows moved down into freed slots
    moves: tuple[torch.Tensor, torch.Tensor] | None
    carried_rows: torch.Tensor | None  # step rows of the carried slots; None: all rows
    # Row ids of the new keys in a copy viewed as ``[R * Hkv * cap, D]``, per (Hkv, cap).
    rows: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)
    # Row ids into the pool that lay slots' keys out head-major, per (first slot, Hkv,
    # cap, bs).
    gather: dict[tuple[int, int, int, int], torch.Tensor] = field(default_factory=dict)
    slot_lens_t: torch.Tensor | None = None  # ``slot_lens`` as int64, for the CPU kernel
    slot_rows_t: torch.Tensor | None = None  # ``slot_rows`` as int64, for the CPU kernel
    # What every layer's CPU-kernel calls of the step share, worked out once: the keys
    # each moved row brings, and per first slot read, the block tables and lengths.
    move_lens_t: torch.Tensor | None = None
    reads: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    _bias: torch.Tensor | None = None

    @property
    def bias(self) -> torch.Tensor | None:
        """``[B, 1, 1, max_len]``, slot order: 0 where a row has the key, -inf past its
        length; None when every row has ``max_len`` keys (nothing to hide). Built on first
        use: only torch's attention over the padded copies takes it."""
        if not self.ragged:
            return None
        if self._bias is None:
            ctx = self.context_lens
            keys = torch.arange(self.max_len, device=ctx.device)
            slot_ctx = ctx if self.order is None else ctx.index_select(0, self.order)
            bias = torch.zeros(
                (self.num_seqs, self.max_len), dtype=torch.float32, device=ctx.device
            )
            bias.masked_fill_(keys[None, :] >= slot_ctx[:, None], float("-inf"))
            self._bias = bias.view(self.num_seqs, 1, 1, self.max_len)
        return self._bias


@dataclass
class _Copy:
    """One layer's K and V copies: ``[R, Hkv, cap, D]`` each, or K transposed as
    ``[R, Hkv, D, cap]`` for the CPU decode kernel (``engine.kernels.cpu_decode``)."""

    pool: weakref.ref  # the pool layer the copies mirror
    k: torch.Tensor
    v: torch.Tensor
    serial: int  # the step whose keys they hold (-1: none)
    transposed: bool = False  # K is ``[R, Hkv, D, cap]``

    @property
    def cap(self) -> int:
        return self.v.shape[2]

    def keys(self, end: int) -> torch.Tensor:
        """K of every slot below key ``end`` (a view)."""
        return self.k[..., :end] if self.transposed else self.k[:, :, :end]


class DecodeMirror:
    """Per-layer head-major K/V copies of the decode batch, extended one token a step."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._copies: dict[int, _Copy] = {}
        self._last: MirrorPlan | None = None
        self._serial = 0
        # Counts, for tests and profiles: layers rebuilt from the pool, layers brought up
        # to date by writing only the new tokens, layers whose batch changed while some of
        # its rows carried over, and rows read from the pool by the last two kinds.
        self.rebuilds = 0
        self.extends = 0
        self.remaps = 0
        self.rows_read = 0
        self.grows = 0
        self.kernel_calls = 0  # attention calls taken by the CPU kernel (cpu_decode)

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
        ids = cache.get("seq_ids")
        ids = list(range(n)) if ids is None else list(ids)
        used_blocks = _used_blocks(cache.get("host_tables"), tables, lens, bs)
        plan: MirrorPlan | None = None
        self._last, prev = None, self._last
        if all(min(row, default=0) >= 0 for row in used_blocks):
            serial = self._serial = self._serial + 1
            slots, moves = _slots(prev, ids, lens, used_blocks)
            carried = len(slots) - sum(1 for s in slots if s is None)
            slot_rows = [0] * n
            for row, slot in enumerate(slots):
                if slot is not None:
                    slot_rows[slot] = row
            fresh = [row for row, slot in enumerate(slots) if slot is None]
            for i, row in enumerate(fresh):
                slot_rows[carried + i] = row
            slot_lens = [lens[r] for r in slot_rows]
            order = inverse = None
            if slot_rows != list(range(n)):
                order = torch.tensor(slot_rows, dtype=torch.int64, device=ctx.device)
                inverse = torch.empty_like(order)
                inverse[order] = torch.arange(n, device=ctx.device)
            move_t = None
            if moves:
                dst, src = zip(*moves, strict=True)
                move_t = (
                    torch.tensor(dst, dtype=torch.int64, device=ctx.device),
                    torch.tensor(src, dtype=torch.int64, device=ctx.device),
                )
            carried_rows = None
            if carried < n:
                carried_rows = torch.tensor(
                    slot_rows[:carried], dtype=torch.int64, device=ctx.device
                )
            plan = MirrorPlan(
                serial=serial,
                prev_serial=prev.serial if prev is not None and carried else None,
                num_seqs=n,
                max_len=max_len,
                context_lens=ctx.clone(),
                block_tables=tables.clone(),
                used_blocks=used_blocks,
                slot_ids=[ids[r] for r in slot_rows],
                slot_rows=slot_rows,
                slot_lens=slot_lens,
                carried=carried,
                ragged=min(lens) < max_len,
                order=order,
                inverse=inverse,
                moves=move_t,
                carried_rows=carried_rows,
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
        kernel = cpu_decode.supports(query, hkv, kv_layer.dtype)
        writes = 0  # carried slots whose new K/V the CPU kernel still has to write
        copy = self._copies.get(id(kv_layer))
        if copy is not None and (copy.pool() is not kv_layer or copy.transposed != kernel):
            copy = None  # another tensor now has that id, or the other layout is wanted
        if copy is not None and plan.prev_serial is not None and copy.serial == plan.prev_serial:
            if not self._fits(copy, kv_layer, plan):
                copy = self._grow(copy, kv_layer, plan)
            if copy is not None:
                writes = self._carry(copy, kv_layer, plan, key, value)
                copy.serial = plan.serial
        else:
            copy = None
        if copy is None:
            copy = self._allocate(kv_layer, plan, plan.num_seqs, kernel)
            if copy is None:
                return None
            self._read(copy, kv_layer, plan, 0)
            self.rebuilds += 1
            copy.serial = plan.serial
        if copy.transposed:
            return self._kernel_attention(query, key, value, copy, plan, scale, writes)
        n = plan.max_len
        k, v = copy.k[:b, :, :n], copy.v[:b, :, :n]
        bias = plan.bias
        if bias is not None and bias.dtype != query.dtype:
            bias = bias.to(query.dtype)
        if plan.order is not None:
            query = query.index_select(0, plan.order)
        # The query heads that share a KV head are that head's queries: [B, Hkv, Hq/Hkv, D].
        q = query.view(b, hkv, hq // hkv, d)
        # Hidden keys are copies of stored keys (see ``_read``): no stale NaN gets in.
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)
        out = out.reshape(b, hq, d)
        return out if plan.inverse is None else out.index_select(0, plan.inverse)

    def _kernel_attention(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        copy: _Copy,
        plan: MirrorPlan,
        scale: float,
        writes: int,
    ) -> torch.Tensor:
        """The CPU kernel over the transposed copies: it writes the first ``writes``
        slots' new K/V, then each slot attends its own keys; it reads the queries and
        writes the outputs in the step's row order (no permutation around it)."""
        b, hq, d = query.shape
        hkv = copy.v.shape[1]
        lens, rows = plan.slot_lens_t, plan.slot_rows_t
        if lens is None or rows is None:
            lens = plan.slot_lens_t = torch.tensor(plan.slot_lens, dtype=torch.int64)
            rows = plan.slot_rows_t = torch.tensor(plan.slot_rows, dtype=torch.int64)
        q = query.view(b, hkv, hq // hkv, d)
        out = _kernel().attend(q, copy.k, copy.v, lens, scale, rows, (key, value, writes))
        self.kernel_calls += 1
        return out.view(b, hq, d)

    @staticmethod
    def _fits(copy: _Copy, kv_layer: torch.Tensor, plan: MirrorPlan) -> bool:
        return copy.v.shape[0] >= plan.num_seqs and copy.cap >= plan.max_len

    def _grow(self, copy: _Copy, kv_layer: torch.Tensor, plan: MirrorPlan) -> _Copy | None:
        """A larger copy (more slots or keys) holding the old one's rows, or None when the
        dimensions changed or the bound is reached (then the layer is rebuilt)."""
        _, _, _, hkv, d = kv_layer.shape
        old_rows, _, old_cap, _ = copy.v.shape
        if copy.v.shape[1] != hkv or copy.v.shape[3] != d or copy.v.dtype != kv_layer.dtype:
            return None
        # Twice the slots when the batch outgrows them: a batch filling up one admission
        # at a time grows its copies a few times, not once per admission.
        more = 2 * old_rows if plan.num_seqs > old_rows else old_rows
        new = self._allocate(kv_layer, plan, max(plan.num_seqs, more), copy.transposed)
        if new is None:
            return None
        self.grows += 1
        # Only keys below the longest row can be visible; the rest stay zeros (finite).
        # The CPU kernel reads no key past a row's length: its copies need no zeros.
        keys = min(old_cap, new.cap, plan.max_len)
        if not new.transposed:
            new.k.zero_()
            new.v.zero_()
        new.keys(keys)[:old_rows] = copy.keys(keys)
        new.v[:old_rows, :, :keys] = copy.v[:, :, :keys]
        new.serial = copy.serial
        return new

    def _carry(
        self,
        copy: _Copy,
        kv_layer: torch.Tensor,
        plan: MirrorPlan,
        key: torch.Tensor,
        value: torch.Tensor,
    ) -> int:
        """Bring a copy current at the previous mirrored step up to this one: move carried
        rows into freed slots, write their new tokens, read the other rows from the pool.
        Returns how many slots (the first ones) still need their new token written: the
        CPU kernel writes them for a transposed copy as it attends (0 otherwise)."""
        hkv, d = kv_layer.shape[3], kv_layer.shape[4]
        if plan.moves is not None and copy.transposed:
            # The kernel reads a slot's own keys only: a moved row brings just those (the
            # ones of the previous step; its new token is written as it attends).
            dst, src = plan.moves
            prev = plan.move_lens_t
            if prev is None:
                prev = plan.move_lens_t = torch.tensor(
                    [plan.slot_lens[i] - 1 for i in dst.tolist()], dtype=torch.int64
                )
            _kernel().move_rows(dst, src, prev, copy.k, copy.v)
        elif plan.moves is not None:
            # Keys past the longest row are never visible, and every key of a slot is
            # finite (stored, a first-key copy or zero), so only those below it move.
            dst, src = plan.moves
            for part in (copy.keys(plan.max_len), copy.v[:, :, : plan.max_len]):
                part.index_copy_(0, dst, part.index_select(0, src))
        if copy.transposed:
            if plan.carried < plan.num_seqs:
                self._read(copy, kv_layer, plan, plan.carried)
            self._count_carry(plan)
            return plan.carried
        # (``carried_rows`` is None exactly when every row carried over)
        in_place = plan.carried_rows is None and plan.moves is None and plan.order is None
        if in_place and not plan.ragged:
            # Every row carried in place, each with the longest row's length: the new keys
            # sit at one key index, so a strided copy writes them (no row ids, no
            # contiguous copy of the new K/V first).
            at, b = plan.max_len - 1, plan.num_seqs
            copy.k[:b, :, at].copy_(key)
            copy.v[:b, :, at].copy_(value)
            self.extends += 1
            return 0
        rows = self._new_rows(plan, hkv, copy.cap)
        if plan.carried_rows is not None:
            key, value = (
                key.index_select(0, plan.carried_rows),
                value.index_select(0, plan.carried_rows),
            )
        copy.k.view(-1, d).index_copy_(0, rows, key.reshape(-1, d))
        copy.v.view(-1, d).index_copy_(0, rows, value.reshape(-1, d))
        if plan.carried < plan.num_seqs:
            self._read(copy, kv_layer, plan, plan.carried)
        self._count_carry(plan)
        return 0

    def _count_carry(self, plan: MirrorPlan) -> None:
        """Count a layer brought up to date: remapped when its batch changed, extended
        when every row carried over in place."""
        if plan.carried < plan.num_seqs or plan.moves is not None:
            self.remaps += 1
        else:
            self.extends += 1

    def _allocate(
        self, kv_layer: torch.Tensor, plan: MirrorPlan, slots: int, transposed: bool = False
    ) -> _Copy | None:
        """A new copy of ``slots`` rows for the plan's batch (its keys unset; K transposed
        for the CPU kernel when ``transposed``), or None over the bound."""
        _, _, bs, hkv, d = kv_layer.shape
        # Headroom past the longest row, within the bound: the pool's token slots (or
        # ``max_bytes``) shared by the rows.
        limit = kv_layer.numel() * kv_layer.element_size()
        if self.max_bytes is not None:
            limit = self.max_bytes
        most = limit // (2 * slots * hkv * d * kv_layer.element_size())
        want = -(-(plan.max_len + max(HEADROOM_KEYS, plan.max_len)) // bs) * bs
        cap = min(want, most)
        if cap < plan.max_len:
            self._copies.pop(id(kv_layer), None)
            return None
        shape = (slots, hkv, cap, d)
        v = torch.empty(shape, dtype=kv_layer.dtype, device=kv_layer.device)
        k = torch.empty(
            (slots, hkv, d, cap) if transposed else shape, dtype=v.dtype, device=v.device
        )
        copy = _Copy(weakref.ref(kv_layer), k, v, -1, transposed)
        self._copies[id(kv_layer)] = copy
        return copy

    @staticmethod
    def _new_rows(plan: MirrorPlan, hkv: int, cap: int) -> torch.Tensor:
        """Where the carried slots' new keys go, in the order of their step rows."""
        rows = plan.rows.get((hkv, cap))
        if rows is None:
            device = plan.context_lens.device
            slot = torch.arange(plan.carried, device=device)[:, None]
            last = torch.tensor(plan.slot_lens[: plan.carried], device=device) - 1
            head = torch.arange(hkv, device=device)[None, :]
            rows = ((slot * hkv + head) * cap + last[:, None]).reshape(-1)
            if plan.carried_rows is None and plan.inverse is not None:
                # every row carried: index by step row so the keys need no reordering
                rows = rows.view(plan.carried, hkv)[plan.inverse].reshape(-1)
            plan.rows[(hkv, cap)] = rows
        return rows

    def _read(self, copy: _Copy, kv_layer: torch.Tensor, plan: MirrorPlan, first: int) -> None:
        """Slots ``first..B-1`` from the pool (after this step's store) into the copy."""
        _, _, bs, hkv, d = kv_layer.shape
        cap = copy.cap
        b = plan.num_seqs
        if copy.transposed and kv_layer.is_contiguous():
            # Each slot's own keys only, straight into the transposed layout.
            read = plan.reads.get(first)
            if read is None:
                order = torch.tensor(plan.slot_rows[first:], dtype=torch.int64)
                tables = plan.block_tables.index_select(0, order).to(torch.int64).contiguous()
                read = plan.reads[first] = (tables, torch.tensor(plan.slot_lens[first:]))
            tables, lens = read
            _kernel().read_rows(kv_layer, tables, lens, first, copy.k, copy.v)
            self.rows_read += b - first
            return
        index = plan.gather.get((first, hkv, cap, bs))
        if index is None:
            order = torch.tensor(plan.slot_rows[first:], device=plan.block_tables.device)
            lens = plan.context_lens.index_select(0, order)
            nb = -(-max(plan.slot_lens[first:]) // bs)
            table = plan.block_tables.index_select(0, order)[:, :nb].long()
            key_pos = torch.arange(cap, device=table.device)
            block = table.gather(
                1, (key_pos // bs).clamp(max=nb - 1)[None, :].expand(len(table), -1)
            )
            # A key past a row's length reads that row's first key (a stored, finite
            # value) instead of a stale slot that might hold NaN: the bias hides it
            # without a trace (exp(-inf) * finite = 0), and later steps write only at a
            # row's new key, so a hidden key stays such a copy until it becomes visible.
            own = key_pos[None, :] < lens[:, None]
            slot = torch.where(own, block * bs + key_pos % bs, table[:, :1] * bs)
            head = torch.arange(hkv, device=table.device)
            index = (slot[:, None, :] * hkv + head[None, :, None]).reshape(-1)
            plan.gather[(first, hkv, cap, bs)] = index
        for which, dst in ((0, copy.k), (1, copy.v)):
            src = kv_layer[which].reshape(-1, d)
            if which == 0 and copy.transposed:
                rows = torch.index_select(src, 0, index).view(b - first, hkv, cap, d)
                dst[first:b].copy_(rows.transpose(2, 3))
                continue
            torch.index_select(src, 0, index, out=dst[first:b].view(-1, d))
        self.rows_read += b - first


def _used_blocks(
    host_tables: list[list[int]] | None, tables: torch.Tensor, lens: list[int], bs: int
) -> list[tuple[int, ...]]:
    """The first ``ceil(len / bs)`` block-table entries of each row: from the runtime's
    host lists when it left them in the plan cache (no device read), else from the tensor."""
    rows = host_tables if host_tables is not None else tables.tolist()
    used = []
    for row, length in zip(rows, lens, strict=True):
        need = -(-length // bs)
        blocks = tuple(row[:need])
        if len(blocks) < need:  # a table short of its row's keys: a hole
            blocks += (-1,) * (need - len(blocks))
        used.append(blocks)
    return used


def _slots(
    prev: MirrorPlan | None, ids: list[int], lens: list[int], used: list[tuple[int, ...]]
) -> tuple[list[int | None], list[tuple[int, int]]]:
    """The slot each step row keeps from ``prev`` (None: read from the pool), and the
    (destination, source) moves that fill freed slots below the carried count. A row
    carries over when its sequence held a slot, is one token longer, and its table still
    lists the blocks that slot's keys were in."""
    n = len(ids)
    if prev is None:
        return [None] * n, []
    prev_slot = {sid: s for s, sid in enumerate(prev.slot_ids)}
    kept = []
    for row, sid in enumerate(ids):
        s = prev_slot.get(sid)
        if s is None or prev.slot_lens[s] != lens[row] - 1:
            continue
        before = prev.used_blocks[prev.slot_rows[s]]
        if used[row][: len(before)] == before:
            kept.append((row, s))
    if not kept:
        return [None] * n, []
    carried = len(kept)
    taken = {s for _, s in kept if s < carried}
    holes = iter(s for s in range(carried) if s not in taken)
    slots: list[int | None] = [None] * n
    moves = []
    for row, s in kept:
        if s >= carried:
            hole = next(holes)
            moves.append((hole, s))
            s = hole
        slots[row] = s
    return slots, moves


def _kernel() -> cpu_decode.DecodeKernel:
    """The CPU kernel, which a transposed copy was made for (``cpu_decode.supports``)."""
    found = cpu_decode.kernel()
    assert found is not None
    return found
