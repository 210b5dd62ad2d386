"""Torch reference attention backend over the paged KV pool (CPU and CUDA).

Pool contract (one tensor per layer): ``kv_layer[2, num_blocks, tokens_per_block,
num_kv_heads, head_dim]``, index 0 holds K and 1 holds V; token slot ``s`` lives at
``block s // tokens_per_block``, offset ``s % tokens_per_block``.

Visibility (the one definition every backend and oracle shares): a query at cache position
``i`` sees key ``j`` iff ``j <= i`` and, with a sliding window ``W`` and ``S`` sink tokens,
``j < S or i - j < W - S``. ``W`` counts the sinks, so a query never sees more than ``W``
keys; ``W=None`` is full causal attention.

Sinks and RoPE (StreamingLLM, positions within the cache): K is cached rotated at its own
cache position ``j``. Window keys therefore keep their true distance ``i - j``. A sink key is
seen as if it sat right before the window, at distance ``min(i, W - 1) - j``: the caller
passes ``sink_query``, the query rotated at ``min(i, W - 1)``, and sink keys are scored with
it. Without ``sink_query`` sinks are scored with the plain query (positions in the text).

Sink bubble: when ``S`` is not a multiple of the block size the layout pads the sinks with
``B`` empty slots, so position ``p >= S`` sits at cache index ``p + B``. ``context_lens``
and query positions count tokens; with ``sink_bubble=B`` the gathered keys are mapped back
from cache index to position and the bubble slots are masked.

fp8 KV cache: values are stored as ``float8_e4m3fn`` after division by a static per-layer
scale (one for K, one for V) and multiplied back on load. The scale should be
``amax / 448`` for the layer's largest |K| (|V|) value (see :func:`fp8_scale_for`), so the
range maps onto e4m3's finite range; e4m3 keeps 3 mantissa bits, a relative error of at
most 2**-4 per element on normal numbers. The default scale 1.0 suits activations of order 1.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .decode import Workspace, decode_attention, decode_plan
from .visibility import FP8_DTYPE, FP8_MAX, visibility_mask

__all__ = [
    "FP8_DTYPE",
    "FP8_MAX",
    "fp8_scale_for",
    "gather_kv",
    "paged_attention",
    "store_kv",
    "visibility_mask",
]


def fp8_scale_for(amax: float) -> float:
    """Static scale that maps ``[-amax, amax]`` onto e4m3's finite range."""
    return max(float(amax), 1e-12) / FP8_MAX


def _quantize(x: torch.Tensor, cache_dtype: torch.dtype, scale: float) -> torch.Tensor:
    if cache_dtype == FP8_DTYPE:
        return (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
    return x.to(cache_dtype)


def _dequantize(x: torch.Tensor, dtype: torch.dtype, scale: float) -> torch.Tensor:
    if x.dtype == FP8_DTYPE:
        return x.to(dtype) * scale
    return x.to(dtype)


def store_kv(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_layer: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    *,
    all_stored: bool = False,
) -> None:
    """Scatter ``key``/``value`` ``[num_tokens, num_kv_heads, head_dim]`` into their slots.

    Rows whose slot is -1 are skipped (padding rows, or tokens a caller chose not to keep).
    ``all_stored=True`` says the caller knows there is no -1 (saves the check per layer).
    """
    _, nblocks, bs, hkv, dim = kv_layer.shape
    slots = slot_mapping if slot_mapping.dtype == torch.int64 else slot_mapping.long()
    if not all_stored and bool((slots < 0).any()):
        keep = slots >= 0
        slots, key, value = slots[keep], key[keep], value[keep]
    # index_copy_ rather than ``flat[slots] = ...``: the advanced-indexing kernels fan out
    # over OpenMP threads even for a handful of rows, which costs far more than the copy
    # when a CPU is shared.
    k_new = _quantize(key, kv_layer.dtype, k_scale)
    v_new = _quantize(value, kv_layer.dtype, v_scale)
    if kv_layer.dtype == FP8_DTYPE:  # index_copy_ has no fp8 kernel: move the bytes
        kv_layer, k_new, v_new = (t.view(torch.uint8) for t in (kv_layer, k_new, v_new))
    kv_layer[0].view(nblocks * bs, hkv, dim).index_copy_(0, slots, k_new)
    kv_layer[1].view(nblocks * bs, hkv, dim).index_copy_(0, slots, v_new)


def gather_kv(
    kv_layer: torch.Tensor,
    block_tables: torch.Tensor,
    num_blocks: int,
    dtype: torch.dtype,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dense ``[B, Hkv, num_blocks * bs, D]`` K and V in ``dtype`` plus a ``[B, keys]``
    mask of keys whose block exists (table entry >= 0)."""
    table = block_tables[:, :num_blocks].long()
    k, v = _gather(kv_layer, table.clamp(min=0), dtype, k_scale, v_scale)
    present = (table >= 0).repeat_interleave(kv_layer.shape[2], dim=1)
    return k.transpose(1, 2), v.transpose(1, 2), present


def _rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x[rows]`` for a ``[B, max_q]`` index, through ``index_select``."""
    return x.index_select(0, rows.reshape(-1)).view(*rows.shape, *x.shape[1:])


def _gather(
    kv_layer: torch.Tensor, table: torch.Tensor, dtype: torch.dtype, k_scale: float, v_scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V ``[B, blocks * bs, Hkv, D]`` in ``dtype`` for block ids ``table`` (all valid).

    Advanced indexing copies, so callers may fill the results in place."""
    b, keys = table.shape[0], table.shape[1] * kv_layer.shape[2]
    flat = table.reshape(-1)
    src = kv_layer.view(torch.uint8) if kv_layer.dtype == FP8_DTYPE else kv_layer
    k, v = (src[i].index_select(0, flat).view(kv_layer.dtype) for i in (0, 1))
    k, v = _dequantize(k, dtype, k_scale), _dequantize(v, dtype, v_scale)
    return k.view(b, keys, *kv_layer.shape[3:]), v.view(b, keys, *kv_layer.shape[3:])


class _Plan(NamedTuple):
    """The index and mask tensors of one step; they depend on the metadata, not the layer."""

    num_blocks: int
    real: torch.Tensor  # [B, max_q] rows that hold a query
    real_flat: torch.Tensor  # flat indices of those rows in [B * max_q]
    rows: torch.Tensor  # [B, max_q] packed row of each (sequence, step)
    k_index: torch.Tensor  # [keys] cache index of each gathered key
    table: torch.Tensor  # [B, num_blocks] block ids, -1 clamped to 0
    hidden: torch.Tensor  # [B, keys, 1, 1] keys that must contribute nothing
    mask: torch.Tensor  # [B, 1, max_q, keys] visibility for SDPA


def _plan(
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    query_start_loc: torch.Tensor,
    num_tokens: int,
    max_query_len: int,
    bs: int,
    sliding_window: int | None,
    sink_tokens: int,
    sink_bubble: int,
) -> _Plan:
    device = context_lens.device
    qlens = query_start_loc[1:] - query_start_loc[:-1]
    cache_lens = context_lens
    if sink_bubble:
        cache_lens = torch.where(
            context_lens > sink_tokens, context_lens + sink_bubble, context_lens
        )
    num_blocks = max(1, -(-int(cache_lens.max()) // bs))

    # Pad the packed queries to [B, max_q]; padded rows see every key and are dropped.
    steps = torch.arange(max_query_len, device=device)
    real = steps[None, :] < qlens[:, None]
    rows = (query_start_loc[:-1, None] + steps[None, :]).clamp(max=num_tokens - 1)
    q_pos = (context_lens - qlens)[:, None] + steps[None, :]

    table = block_tables[:, :num_blocks].long()
    present = (table >= 0).repeat_interleave(bs, dim=1)
    k_index = torch.arange(num_blocks * bs, device=device)
    k_pos = k_index
    if sink_bubble:
        in_bubble = (k_index >= sink_tokens) & (k_index < sink_tokens + sink_bubble)
        present = present & ~in_bubble[None, :]
        k_pos = torch.where(k_index < sink_tokens, k_index, k_index - sink_bubble)
    key_ok = present & (k_pos[None, :] < context_lens[:, None])
    mask = key_ok[:, None, :] & visibility_mask(
        q_pos[:, :, None], k_pos[None, None, :], sliding_window, sink_tokens
    )
    mask = (mask | ~real[:, :, None])[:, None]  # [B, 1, max_q, keys]
    hidden = ~key_ok[:, :, None, None]  # [B, keys, 1, 1], before the transpose
    real_flat = real.reshape(-1).nonzero().reshape(-1)
    return _Plan(num_blocks, real, real_flat, rows, k_index, table.clamp(min=0), hidden, mask)


def paged_attention(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    query_start_loc: torch.Tensor,
    *,
    max_query_len: int | None = None,
    softmax_scale: float | None = None,
    sliding_window: int | None = None,
    sink_tokens: int = 0,
    sink_query: torch.Tensor | None = None,
    sink_bubble: int = 0,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    plan_cache: dict | None = None,
    workspace: Workspace | None = None,
) -> torch.Tensor:
    """Attention of a packed batch ``query[num_tokens, Hq, D]`` over the paged cache.

    The new tokens' K/V must already be stored. Returns ``[num_tokens, Hq, D]`` in the
    query's dtype. Works for prefill, chunked prefill and decode alike. ``plan_cache`` (a
    dict owned by one step's metadata) lets every layer of the step share the index and
    mask tensors, which depend only on the metadata and the window.

    On a CPU, a decode step (one new token per sequence, no sink query) goes through
    ``engine.kernels.decode``: block gathers into ``workspace`` (scratch reused across
    calls; a fresh one when None) and two batched products, instead of padded SDPA.
    """
    num_tokens, hq, dim = query.shape
    bs = kv_layer.shape[2]
    hkv = kv_layer.shape[3]
    if hq % hkv:
        raise ValueError(f"{hq} query heads are not a multiple of {hkv} KV heads")
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    num_seqs = context_lens.shape[0]
    if num_tokens == 0 or num_seqs == 0:
        return query.new_zeros(query.shape)
    if not 0 <= sink_bubble < bs or (sink_bubble and (sink_tokens + sink_bubble) % bs):
        raise ValueError(
            f"sink_bubble {sink_bubble} does not pad {sink_tokens} sinks to a block of {bs}"
        )
    if max_query_len is None:
        max_query_len = int((query_start_loc[1:] - query_start_loc[:-1]).max())
    sink_scored = sink_query is not None and sink_tokens > 0 and sliding_window is not None
    if max_query_len == 1 and query.device.type == "cpu" and not sink_scored:
        dkey = ("decode", bs, sliding_window, sink_tokens, sink_bubble, num_tokens)
        dplan = None if plan_cache is None else plan_cache.get(dkey)
        if dplan is None:
            dplan = decode_plan(
                block_tables, context_lens, bs, sliding_window, sink_tokens, sink_bubble
            )
            if plan_cache is not None:
                plan_cache[dkey] = dplan
        ws = workspace if workspace is not None else Workspace()
        return decode_attention(
            query, kv_layer, dplan, ws, scale=scale, k_scale=k_scale, v_scale=v_scale
        )
    key = (bs, sliding_window, sink_tokens, sink_bubble, num_tokens, max_query_len)
    plan = None if plan_cache is None else plan_cache.get(key)
    if plan is None:
        plan = _plan(
            block_tables,
            context_lens,
            query_start_loc,
            num_tokens,
            max_query_len,
            bs,
            sliding_window,
            sink_tokens,
            sink_bubble,
        )
        if plan_cache is not None:
            plan_cache[key] = plan

    # Slots past a sequence's length or in dropped blocks may hold stale or uninitialised
    # memory (even NaN); zeroed (in the gathered copies), masked keys add nothing. On a CPU
    # the zeroing costs as much as the attention itself and a NaN can only come from such
    # memory, so it is done only when the output shows one (a cheap check on a small
    # tensor); on CUDA the check would stall the stream, so the copies are always zeroed.
    k, v = _gather(kv_layer, plan.table, query.dtype, k_scale, v_scale)
    lazy = query.device.type == "cpu"
    if not lazy:
        k, v = k.masked_fill_(plan.hidden, 0), v.masked_fill_(plan.hidden, 0)
    args = (query, sink_query, plan, scale, sink_tokens, sliding_window, hq != hkv)
    out = _attend(k, v, *args)
    if lazy and bool(out.isnan().any()):
        out = _attend(k.masked_fill_(plan.hidden, 0), v.masked_fill_(plan.hidden, 0), *args)
    return out


def _attend(
    k: torch.Tensor,
    v: torch.Tensor,
    query: torch.Tensor,
    sink_query: torch.Tensor | None,
    plan: _Plan,
    scale: float,
    sink_tokens: int,
    sliding_window: int | None,
    gqa: bool,
) -> torch.Tensor:
    """SDPA of the packed queries over gathered ``k``/``v`` ``[B, keys, Hkv, D]``."""
    num_tokens, hq, dim = query.shape
    k, v = k.transpose(1, 2), v.transpose(1, 2)
    q = _rows(query, plan.rows).transpose(1, 2)  # [B, Hq, max_q, D]
    if sink_query is not None and sink_tokens > 0 and sliding_window is not None:
        # Score sink keys with the sink query and window keys with the plain query in one
        # SDPA call: concatenate along the head dim and zero the half that must not count.
        is_sink = (plan.k_index < sink_tokens)[None, None, :, None]
        q = torch.cat([q, _rows(sink_query, plan.rows).transpose(1, 2)], dim=-1)
        k = torch.cat([k.masked_fill(is_sink, 0), k.masked_fill(~is_sink, 0)], dim=-1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=plan.mask, scale=scale, enable_gqa=gqa)
    out = out.transpose(1, 2)  # [B, max_q, Hq, D]
    if out.shape[1] == 1:
        return out.reshape(num_tokens, hq, dim)
    return out.reshape(-1, hq, dim).index_select(0, plan.real_flat)
