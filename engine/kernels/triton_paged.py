"""Triton paged attention for CUDA: a decode kernel and a paged context (prefill) kernel.

Triton is optional: this module imports without it, and :func:`triton_available` says
whether the kernels can run. Shapes the kernels do not cover fall back to the reference
backend inside :class:`~engine.kernels.select.AttentionBackend`: see :func:`supports`.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import warnings

import torch

from .reference import FP8_DTYPE, _quantize

_NO_WINDOW = 1 << 30
PREFILL_BLOCK_M = 16
DECODE_KERNELS = ("grouped", "per-head")
# Elements of the grouped decode kernel's [group, keys, head dim] products per step.
GROUPED_TILE = 8192
GROUPED_MAX_KEYS = 64


# Whether the grouped decode kernel has run in this process, and why it could not (its
# first call failed: a Triton or GPU it does not build on); then the per-head one serves.
_GROUPED: dict = {"ran": False, "failed": None}


def decode_kernel() -> str:
    """The decode kernel ``ENGINE_TRITON_DECODE`` names (default "grouped")."""
    value = os.environ.get("ENGINE_TRITON_DECODE", "grouped")
    if value not in DECODE_KERNELS:
        raise ValueError(f"ENGINE_TRITON_DECODE={value!r} is not one of {DECODE_KERNELS}")
    return value


def grouped_keys(group_pad: int, block_d: int) -> int:
    """Keys per step of the grouped decode kernel: a power of two, at most 64, whose
    ``group_pad * keys * block_d`` product tile stays within ``GROUPED_TILE``."""
    keys = GROUPED_MAX_KEYS
    while keys > 1 and group_pad * keys * block_d > GROUPED_TILE:
        keys //= 2
    return keys


@functools.cache
def triton_available() -> bool:
    """True when Triton is importable (it still needs a CUDA device to run)."""
    return importlib.util.find_spec("triton") is not None


def supports(kv_layer: torch.Tensor, query: torch.Tensor, *, prefill: bool) -> bool:
    """Whether the Triton kernels handle this pool and query: CUDA tensors, a power-of-two
    ``tokens_per_block`` (at least 16 for prefill, where it is a ``tl.dot`` tile side)."""
    bs = kv_layer.shape[2]
    if not (query.is_cuda and kv_layer.is_cuda and triton_available()):
        return False
    if bs & (bs - 1):
        return False
    if kv_layer.dtype not in (torch.float16, torch.bfloat16, torch.float32, FP8_DTYPE):
        return False
    if query.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return False
    return not prefill or bs >= 16


def supports_store(kv_layer: torch.Tensor, key: torch.Tensor) -> bool:
    """Whether :func:`store_kv` handles this pool and these keys (CUDA tensors, a pool
    dtype the attention kernels read)."""
    if not (key.is_cuda and kv_layer.is_cuda and triton_available()):
        return False
    return kv_layer.dtype in (torch.float16, torch.bfloat16, torch.float32, FP8_DTYPE)


def _common(query, kv_layer, softmax_scale, sliding_window, sink_tokens, sink_query):
    hq, dim = query.shape[1], query.shape[2]
    hkv = kv_layer.shape[3]
    if hq % hkv:
        raise ValueError(f"{hq} query heads are not a multiple of {hkv} KV heads")
    if kv_layer.stride(-1) != 1:
        raise ValueError("the head dim of the KV pool must be contiguous")
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    window = _NO_WINDOW if sliding_window is None else int(sliding_window)
    sinks = int(sink_tokens) if sliding_window is not None else 0
    if sliding_window is not None and window <= sinks:
        raise ValueError(f"sliding window {window} must exceed sink tokens {sinks}")
    has_sink_q = sink_query is not None and sinks > 0
    qs = sink_query if has_sink_q else query
    block_d = max(16, 1 << (dim - 1).bit_length())
    return hq // hkv, dim, block_d, scale, window, sinks, has_sink_q, qs


def _prepare(query, block_tables, context_lens, sink_query):
    # The kernels index the query and sink query with the same strides, and need only the
    # head dim contiguous: a query that is a view of the fused qkv projection is read in
    # place (no copy kernel per layer) unless a sink query must share its strides.
    if sink_query is not None:
        sink_query, query = sink_query.contiguous(), query.contiguous()
    elif query.stride(-1) != 1:
        query = query.contiguous()
    return query, block_tables.contiguous(), context_lens.contiguous(), sink_query


def paged_decode(
    query: torch.Tensor,
    kv_layer: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    *,
    softmax_scale: float | None = None,
    sliding_window: int | None = None,
    sink_tokens: int = 0,
    sink_query: torch.Tensor | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    kernel: str | None = None,
) -> torch.Tensor:
    """Decode attention: ``query[num_seqs, Hq, D]``, one new token per sequence.

    ``kernel``: "grouped" (one program per sequence and KV head, whose query heads share
    every K/V load) or "per-head" (one program per sequence and query head); None reads
    ``ENGINE_TRITON_DECODE`` (default "grouped"). Without GQA both are the per-head one."""
    # Triton is optional: its kernels load only when this backend runs
    from ._triton_kernels import paged_decode_grouped_kernel, paged_decode_kernel

    choice = decode_kernel() if kernel is None else kernel
    if choice not in DECODE_KERNELS:
        raise ValueError(f"decode kernel {choice!r} is not one of {DECODE_KERNELS}")
    query, block_tables, context_lens, sink_query = _prepare(
        query, block_tables, context_lens, sink_query
    )
    group, dim, block_d, scale, window, sinks, has_sq, qs = _common(
        query, kv_layer, softmax_scale, sliding_window, sink_tokens, sink_query
    )
    out = torch.empty(query.shape, dtype=query.dtype, device=query.device)
    num_seqs, hq = query.shape[0], query.shape[1]
    if choice == "grouped" and group > 1 and _GROUPED["failed"] is None:
        try:
            _grouped_decode(
                paged_decode_grouped_kernel, query, qs, kv_layer, block_tables, context_lens,
                out, group, dim, block_d, scale, window, sinks, has_sq, k_scale, v_scale,
            )  # fmt: skip
            _GROUPED["ran"] = True
            return out
        except Exception as err:  # Triton's build errors share no base class
            if _GROUPED["ran"]:
                raise  # it ran before: not a kernel that cannot build here
            _GROUPED["failed"] = f"{type(err).__name__}: {err}"
            warnings.warn(
                f"the grouped Triton decode kernel failed to run ({_GROUPED['failed']});"
                " decode attention takes the per-head kernel in this process",
                RuntimeWarning,
                stacklevel=2,
            )
    paged_decode_kernel[(num_seqs, hq)](
        query, qs, kv_layer, block_tables, context_lens, out,
        query.stride(0), query.stride(1), kv_layer.stride(0), kv_layer.stride(1),
        kv_layer.stride(2), kv_layer.stride(3), block_tables.stride(0),
        out.stride(0), out.stride(1),
        scale, float(k_scale), float(v_scale), window, sinks,
        GROUP=group, HEAD_DIM=dim, BLOCK_D=block_d, BLOCK_N=kv_layer.shape[2],
        HAS_SINK_Q=has_sq,
    )  # fmt: skip
    return out


def _grouped_decode(
    kernel, query, qs, kv_layer, block_tables, context_lens, out,
    group, dim, block_d, scale, window, sinks, has_sq, k_scale, v_scale,
) -> None:  # fmt: skip
    group_pad = 1 << (group - 1).bit_length()
    kernel[(query.shape[0], query.shape[1] // group)](
        query, qs, kv_layer, block_tables, context_lens, out,
        query.stride(0), query.stride(1), kv_layer.stride(0), kv_layer.stride(1),
        kv_layer.stride(2), kv_layer.stride(3), block_tables.stride(0),
        out.stride(0), out.stride(1),
        scale, float(k_scale), float(v_scale), window, sinks,
        GROUP=group, GROUP_PAD=group_pad, HEAD_DIM=dim, BLOCK_D=block_d,
        BLOCK_N=kv_layer.shape[2], KEYS=grouped_keys(group_pad, block_d),
        HAS_SINK_Q=has_sq,
    )  # fmt: skip


def grouped_failure() -> str | None:
    """Why the grouped decode kernel could not run in this process (decode then takes
    the per-head kernel), or None."""
    return _GROUPED["failed"]


def paged_prefill(
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
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> torch.Tensor:
    """Paged context attention for a packed batch (prompts and chunks over cached prefixes)."""
    # Triton is optional: its kernels load only when this backend runs
    from ._triton_kernels import paged_prefill_kernel

    query, block_tables, context_lens, sink_query = _prepare(
        query, block_tables, context_lens, sink_query
    )
    query_start_loc = query_start_loc.contiguous()
    group, dim, block_d, scale, window, sinks, has_sq, qs = _common(
        query, kv_layer, softmax_scale, sliding_window, sink_tokens, sink_query
    )
    if max_query_len is None:
        max_query_len = int((query_start_loc[1:] - query_start_loc[:-1]).max())
    out = torch.empty(query.shape, dtype=query.dtype, device=query.device)
    num_seqs, hq = context_lens.shape[0], query.shape[1]
    grid = (num_seqs, hq, triton_cdiv(max_query_len, PREFILL_BLOCK_M))
    paged_prefill_kernel[grid](
        query, qs, kv_layer, block_tables, context_lens, query_start_loc, out,
        query.stride(0), query.stride(1), kv_layer.stride(0), kv_layer.stride(1),
        kv_layer.stride(2), kv_layer.stride(3), block_tables.stride(0),
        out.stride(0), out.stride(1),
        scale, float(k_scale), float(v_scale), window, sinks,
        GROUP=group, HEAD_DIM=dim, BLOCK_D=block_d, BLOCK_M=PREFILL_BLOCK_M,
        BLOCK_N=kv_layer.shape[2], HAS_SINK_Q=has_sq, IS_FP32=query.dtype == torch.float32,
    )  # fmt: skip
    return out


def store_kv(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_layer: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> None:
    """Write ``key``/``value`` ``[num_tokens, Hkv, D]`` into their slots of the pool, as
    ``reference.store_kv`` does; rows whose slot is -1 are skipped by the kernel itself,
    so the host never reads the slots (no device sync; safe inside a CUDA graph)."""
    # Triton is optional: its kernels load only when this backend runs
    from ._triton_kernels import store_kv_kernel

    n, hkv, dim = key.shape
    if n == 0:
        return
    if not kv_layer.is_contiguous():
        raise ValueError("the KV pool must be contiguous")
    k_new, v_new = (
        _quantize(key, kv_layer.dtype, k_scale),
        _quantize(value, kv_layer.dtype, v_scale),
    )
    k_new, v_new = _rows_contiguous(k_new), _rows_contiguous(v_new)
    cache = kv_layer
    if kv_layer.dtype == FP8_DTYPE:  # move the bytes
        cache, k_new, v_new = (t.view(torch.uint8) for t in (kv_layer, k_new, v_new))
    row = cache.stride(2)  # elements per slot in the pointer's type
    slots = slot_mapping if slot_mapping.dtype == torch.int64 else slot_mapping.long()
    block = min(1024, 1 << (row - 1).bit_length())
    store_kv_kernel[(n,)](
        k_new, v_new, cache, slots.contiguous(),
        k_new.stride(0), v_new.stride(0), row, cache.stride(0),
        BLOCK=block,
    )  # fmt: skip


def _rows_contiguous(x: torch.Tensor) -> torch.Tensor:
    """``x[n, H, D]`` whose ``H * D`` elements of a row lie contiguously (any row stride)."""
    if x.stride(-1) == 1 and x.stride(-2) == x.shape[-1]:
        return x
    return x.contiguous()


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
