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
DECODE_KERNELS = ("grouped", "per-head", "grouped-dot")
DOT_ROWS = 16  # the fewest rows of a tl.dot operand: a group is padded to them
# Elements of the grouped decode kernel's [group, keys, head dim] products per step. At
# 4096 the ~0.5B benchmark model's shape (group 2, head dim 64: 32 keys a step, 4 warps)
# compiles for sm_90 to 118 registers a thread, 144 with a sink query, no spills; at 8192
# (64 keys) to 168, and 255 with a spill with a sink query (benchmarks/triton_aot.py,
# Triton 3.9, aligned arguments as the JIT specializes them).
GROUPED_TILE = 4096
GROUPED_MAX_KEYS = 64
GROUPED_WARPS = 4
# Overrides for a GPU run to try other shapes of the grouped kernel (bench_decode_kernel.py
# times several and gpu_checks.sh runs its later steps with the fastest).
KEYS_ENV, WARPS_ENV = "ENGINE_TRITON_DECODE_KEYS", "ENGINE_TRITON_DECODE_WARPS"


# Whether the grouped decode kernel has run in this process, and why it could not (its
# first call failed: a Triton or GPU it does not build on); then the per-head one serves.
_GROUPED: dict = {"ran": False, "failed": None}
_DOT: dict = {"ran": False, "failed": None}  # the same for the grouped-dot kernel


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


def _env_power_of_two(name: str, low: int, high: int) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not low <= value <= high or value & (value - 1):
        raise ValueError(f"{name}={raw!r} must be a power of two from {low} to {high}")
    return value


def grouped_config(group_pad: int, block_d: int) -> tuple[int, int]:
    """``(keys per step, num_warps)`` of the grouped decode kernels: :func:`grouped_keys`
    and ``GROUPED_WARPS``, unless ``ENGINE_TRITON_DECODE_KEYS`` (1 to 128) or
    ``ENGINE_TRITON_DECODE_WARPS`` (1 to 16), powers of two, name others."""
    keys = _env_power_of_two(KEYS_ENV, 1, 128) or grouped_keys(group_pad, block_d)
    warps = _env_power_of_two(WARPS_ENV, 1, 16) or GROUPED_WARPS
    return keys, warps


@functools.cache
def triton_available() -> bool:
    """True when Triton is importable (it still needs a CUDA device to run)."""
    return importlib.util.find_spec("triton") is not None


@functools.cache
def _capability(index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)


def supports(kv_layer: torch.Tensor, query: torch.Tensor, *, prefill: bool) -> bool:
    """Whether the Triton kernels handle this pool and query: CUDA tensors, a power-of-two
    ``tokens_per_block`` (at least 16 for prefill, where it is a ``tl.dot`` tile side); an
    fp8 pool only from compute capability 8.9 (Triton compiles no e4m3 loads for older
    GPUs: "type fp8e4nv not supported in this architecture" for sm_80)."""
    bs = kv_layer.shape[2]
    if not (query.is_cuda and kv_layer.is_cuda and triton_available()):
        return False
    if bs & (bs - 1):
        return False
    if kv_layer.dtype not in (torch.float16, torch.bfloat16, torch.float32, FP8_DTYPE):
        return False
    if kv_layer.dtype == FP8_DTYPE and _capability(kv_layer.device.index or 0) < (8, 9):
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
    every K/V load), "grouped-dot" (the same programs, the group padded to 16 rows of
    ``tl.dot`` products) or "per-head" (one program per sequence and query head); None
    reads ``ENGINE_TRITON_DECODE`` (default "grouped"). Without GQA the grouped one is
    the per-head one; a grouped kernel whose first launch fails (a RuntimeWarning) hands
    over to the per-head one for the rest of the process."""
    # Triton is optional: its kernels load only when this backend runs
    from ._triton_kernels import (
        paged_decode_dot_kernel,
        paged_decode_grouped_kernel,
        paged_decode_kernel,
    )

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
    args = (query, qs, kv_layer, block_tables, context_lens, out, group, dim, block_d,
            scale, window, sinks, has_sq, k_scale, v_scale)  # fmt: skip
    if choice == "grouped-dot" and _DOT["failed"] is None:
        ran = _first_launch(
            _DOT, "the grouped-dot Triton decode kernel", "decode attention takes the"
            " per-head kernel", lambda: _dot_decode(paged_decode_dot_kernel, *args),
        )  # fmt: skip
        if ran:
            return out
    if choice == "grouped" and group > 1 and _GROUPED["failed"] is None:
        ran = _first_launch(
            _GROUPED, "the grouped Triton decode kernel", "decode attention takes the"
            " per-head kernel", lambda: _grouped_decode(paged_decode_grouped_kernel, *args),
        )  # fmt: skip
        if ran:
            return out
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
    keys, warps = grouped_config(group_pad, block_d)
    kernel[(query.shape[0], query.shape[1] // group)](
        query, qs, kv_layer, block_tables, context_lens, out,
        query.stride(0), query.stride(1), kv_layer.stride(0), kv_layer.stride(1),
        kv_layer.stride(2), kv_layer.stride(3), block_tables.stride(0),
        out.stride(0), out.stride(1),
        scale, float(k_scale), float(v_scale), window, sinks,
        GROUP=group, GROUP_PAD=group_pad, HEAD_DIM=dim, BLOCK_D=block_d,
        BLOCK_N=kv_layer.shape[2], KEYS=keys, HAS_SINK_Q=has_sq, num_warps=warps,
    )  # fmt: skip


# Whether the grouped decode kernel with RoPE and the K/V store in front has run in this
# process, and why it could not (then RoPE + store and the decode kernel run apart).
_ROPE_STORE: dict = {"ran": False, "failed": None}


def rope_store_decode_ok(group: int) -> bool:
    """Whether :func:`paged_decode_rope_store` runs its one kernel here: the grouped
    decode kernel is the one chosen and has not failed, the heads share KV heads."""
    return (
        group > 1
        and decode_kernel() == "grouped"
        and _GROUPED["failed"] is None
        and _ROPE_STORE["failed"] is None
    )


def paged_decode_rope_store(
    qkv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    kv_layer: torch.Tensor,
    slot_mapping: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    *,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    softmax_scale: float | None = None,
    sliding_window: int | None = None,
    sink_tokens: int = 0,
    sink_query: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """Decode attention of ``qkv[num_seqs, (Hq + 2 Hkv) * D]`` (q, k, v heads side by side,
    one new token per sequence, not rotated yet), with RoPE on its q and k heads at the
    step's ``cos``/``sin`` rows and the K/V store at ``slot_mapping`` done by the same
    kernel: the result of ``fused.rope_store_`` followed by :func:`paged_decode` with the
    grouped kernel, bit for bit, in one launch. The pool must have ``qkv``'s dtype (no
    fp8 scales); ``qkv`` is left as it was. None where that kernel cannot run (see
    :func:`rope_store_decode_ok`; or it fails at its first launch, with a
    RuntimeWarning): ``fused.decode_rope_store`` then runs the two launches."""
    # Triton is optional: its kernels load only when this backend runs
    from ._triton_kernels import paged_decode_rope_store_kernel

    n = qkv.shape[0]
    hq, hkv, dim = num_heads, num_kv_heads, head_dim
    if qkv.stride(-1) != 1 or qkv.shape[1] < (hq + 2 * hkv) * dim:
        raise ValueError("qkv rows must be contiguous and hold q, k and v heads")
    if kv_layer.dtype != qkv.dtype or not kv_layer.is_contiguous():
        raise ValueError("the pool must be contiguous and of qkv's dtype")
    if not rope_store_decode_ok(hq // hkv):
        return None
    query = qkv[:, : hq * dim].view(n, hq, dim)
    group, dim, block_d, scale, window, sinks, has_sq, _ = _common(
        query, kv_layer, softmax_scale, sliding_window, sink_tokens, sink_query
    )
    out = torch.empty((n, hq, dim), dtype=qkv.dtype, device=qkv.device)
    qs = sink_query.contiguous() if has_sq and sink_query is not None else out
    cos, sin = cos.contiguous(), sin.contiguous()
    slots = slot_mapping if slot_mapping.dtype == torch.int64 else slot_mapping.long()
    group_pad = 1 << (group - 1).bit_length()
    keys, warps = grouped_config(group_pad, block_d)

    def launch() -> None:
        paged_decode_rope_store_kernel[(n, hkv)](
            qkv, qs, kv_layer, block_tables.contiguous(), context_lens.contiguous(), out,
            cos, sin, slots.contiguous(),
            qkv.stride(0), hq * dim, (hq + hkv) * dim, cos.stride(0),
            kv_layer.stride(0), kv_layer.stride(1), kv_layer.stride(2), kv_layer.stride(3),
            block_tables.stride(0), out.stride(0), out.stride(1),
            scale, window, sinks,
            GROUP=group, GROUP_PAD=group_pad, HEAD_DIM=dim, BLOCK_D=block_d,
            BLOCK_N=kv_layer.shape[2], KEYS=keys, HAS_SINK_Q=has_sq,
            IS_FP32=qkv.dtype == torch.float32, num_warps=warps,
        )  # fmt: skip

    ran = _first_launch(
        _ROPE_STORE, "the grouped decode kernel with RoPE and the K/V store",
        "they run as separate kernels", launch,
    )  # fmt: skip
    return out if ran else None


def _first_launch(state: dict, kernel: str, instead: str, launch) -> bool:
    """Run ``launch``; True if it ran. A kernel that fails before it has ever run in this
    process (a Triton or GPU it does not build on) is marked failed in ``state`` with a
    RuntimeWarning naming ``kernel`` and what runs ``instead``, and False returned; a
    failure after it has run is raised as it is."""
    try:
        launch()
    except Exception as err:  # Triton's build errors share no base class
        if state["ran"]:
            raise  # it ran before: not a kernel that cannot build here
        state["failed"] = f"{type(err).__name__}: {err}"
        warnings.warn(
            f"{kernel} failed to run ({state['failed']}); {instead} in this process",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    state["ran"] = True
    return True


def rope_store_failure() -> str | None:
    """Why the decode kernel with RoPE and the K/V store could not run in this process,
    or None."""
    return _ROPE_STORE["failed"]


def _dot_decode(
    kernel, query, qs, kv_layer, block_tables, context_lens, out,
    group, dim, block_d, scale, window, sinks, has_sq, k_scale, v_scale,
) -> None:  # fmt: skip
    rows = max(DOT_ROWS, 1 << (group - 1).bit_length())
    keys, warps = dot_config(block_d)
    kernel[(query.shape[0], query.shape[1] // group)](
        query, qs, kv_layer, block_tables, context_lens, out,
        query.stride(0), query.stride(1), kv_layer.stride(0), kv_layer.stride(1),
        kv_layer.stride(2), kv_layer.stride(3), block_tables.stride(0),
        out.stride(0), out.stride(1),
        scale, float(k_scale), float(v_scale), window, sinks,
        GROUP=group, ROWS=rows, HEAD_DIM=dim, BLOCK_D=block_d, BLOCK_N=kv_layer.shape[2],
        KEYS=keys, HAS_SINK_Q=has_sq, IS_FP32=query.dtype == torch.float32, num_warps=warps,
    )  # fmt: skip


def dot_config(block_d: int) -> tuple[int, int]:
    """``(keys per step, num_warps)`` of the grouped-dot kernel: 32 keys (at least the 16
    of a ``tl.dot`` side) and 4 warps, unless ``ENGINE_TRITON_DECODE_KEYS`` (16 to 128)
    or ``ENGINE_TRITON_DECODE_WARPS`` name others."""
    keys = _env_power_of_two(KEYS_ENV, 1, 128) or 32
    warps = _env_power_of_two(WARPS_ENV, 1, 16) or GROUPED_WARPS
    return max(keys, DOT_ROWS), warps


def dot_failure() -> str | None:
    """Why the grouped-dot decode kernel could not run in this process, or None."""
    return _DOT["failed"]


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
        # float32's exact products need more registers: at 4 warps they spill for sm_90
        num_warps=8 if query.dtype == torch.float32 else 4,
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
