"""Fused decoder ops: residual add + RMSNorm, SiLU(gate) * up, RoPE on q and k, and RoPE
with the K/V store into the paged pool.

On CUDA with Triton each op is one kernel (``_triton_fused``) instead of the handful of
elementwise kernels the torch expressions launch; elsewhere the torch path runs. The
``*_reference`` functions are that torch path (the one ``engine.model.llama`` runs when
fusion is off), so tests hold the kernels to it.

Which path a model takes: ``LlamaForCausalLM.fused_ops`` (default from the environment
variable ``ENGINE_FUSED_OPS``: ``1`` turns fusion on; it is off by default until the
kernels have run on a GPU, see README "Fused decoder kernels on CUDA") and
:func:`fused_supported` (CUDA tensors, Triton importable, a float dtype).
"""

from __future__ import annotations

import os

import torch
from torch.nn import functional as F

from . import triton_paged
from .triton_paged import triton_available

ENV_SWITCH = "ENGINE_FUSED_OPS"
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def fused_default() -> bool:
    """Fusion on only when ``ENGINE_FUSED_OPS`` is ``1`` (or ``on``/``true``/``yes``): the
    kernels have passed on the Triton interpreter but not yet on a GPU."""
    return os.environ.get(ENV_SWITCH, "0").strip().lower() in ("1", "on", "true", "yes")


def fused_supported(x: torch.Tensor) -> bool:
    """Whether the fused kernels can run on ``x`` (a CUDA tensor of a float dtype, with
    Triton importable)."""
    return x.is_cuda and x.dtype in _DTYPES and triton_available()


def _pow2(n: int) -> int:
    return max(16, 1 << (n - 1).bit_length())


# -- the torch path -----------------------------------------------------------------------


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm as the unfused model computes it (float32 statistics, rounded before the
    weight in half precision)."""
    if x.dtype == torch.float32 and weight.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    dtype = x.dtype
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(dtype)


def add_rms_norm_reference(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    h = x if residual is None else x + residual
    return rms_norm_reference(h, weight, eps), h


def silu_mul_reference(gate_up: torch.Tensor) -> torch.Tensor:
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


def rope_reference(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x[N, H, D]`` rotated by per-token ``cos``/``sin`` ``[N, D]`` (halves layout), as
    ``engine.model.rope.rotate``."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


# -- the fused kernels --------------------------------------------------------------------


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rmsnorm(h) * weight, h)`` with ``h = x + residual`` (``residual`` None:
    ``h = x``), in one kernel; ``x`` and ``residual`` are ``[N, hidden]``."""
    # Triton is optional: its kernels load only when fusion runs
    from ._triton_fused import add_rms_norm_kernel

    n, cols = x.shape
    if x.stride(-1) != 1:
        x = x.contiguous()
    out = torch.empty((n, cols), dtype=x.dtype, device=x.device)
    if n == 0:
        return out, x if residual is None else x + residual
    new_res = x
    res = x
    if residual is not None:
        res = residual if residual.stride(-1) == 1 else residual.contiguous()
        new_res = torch.empty_like(out)
    block = _pow2(cols)
    add_rms_norm_kernel[(n,)](
        x, res, weight, out, new_res,
        x.stride(0), res.stride(0), out.stride(0), new_res.stride(0), cols, float(eps),
        HAS_RES=residual is not None, IS_FP32=x.dtype == torch.float32, BLOCK=block,
        num_warps=4 if block <= 2048 else 8,
    )  # fmt: skip
    return out, new_res


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """``silu(gate) * up`` of ``gate_up[N, 2 * I]`` (gate first), in one kernel."""
    # Triton is optional: its kernels load only when fusion runs
    from ._triton_fused import silu_mul_kernel

    n, width = gate_up.shape
    cols = width // 2
    if gate_up.stride(-1) != 1:
        gate_up = gate_up.contiguous()
    out = torch.empty((n, cols), dtype=gate_up.dtype, device=gate_up.device)
    if n == 0:
        return out
    block = min(1024, _pow2(cols))
    silu_mul_kernel[(n, -(-cols // block))](
        gate_up, out, gate_up.stride(0), out.stride(0), cols,
        IS_FP32=gate_up.dtype == torch.float32, BLOCK=block,
    )  # fmt: skip
    return out


def rope_(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    num_heads: int,
    head_dim: int,
) -> None:
    """Rotate, in place, the first ``num_heads`` heads of each row of ``x[N, width]``
    (heads of ``head_dim`` side by side from the row's start, e.g. q then k of a fused
    qkv projection) by the step's ``cos``/``sin`` tables ``[N, head_dim]`` (computed once
    per step, shared by every layer), in one kernel."""
    # Triton is optional: its kernels load only when fusion runs
    from ._triton_fused import rope_kernel

    n = x.shape[0]
    if x.stride(-1) != 1:
        raise ValueError("rope_ needs rows whose elements are contiguous")
    if n == 0 or num_heads == 0:
        return
    cos, sin = cos.contiguous(), sin.contiguous()
    half = head_dim // 2
    rope_kernel[(n, num_heads)](
        x, cos, sin, x.stride(0), cos.stride(0),
        HALF=half, BLOCK_H=_pow2(half), IS_FP32=x.dtype == torch.float32,
    )  # fmt: skip


def store_fusable(qkv: torch.Tensor, kv_layer: torch.Tensor) -> bool:
    """Whether :func:`rope_store_` can write this step's K/V into ``kv_layer``: a
    contiguous CUDA pool of the projection's dtype (an fp8 pool quantizes first and keeps
    the two kernels), with Triton importable."""
    return (
        fused_supported(qkv)
        and kv_layer.is_cuda
        and kv_layer.dtype == qkv.dtype
        and kv_layer.is_contiguous()
        and qkv.stride(-1) == 1
    )


def rope_store_(
    qkv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    kv_layer: torch.Tensor,
    slot_mapping: torch.Tensor,
    *,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
) -> None:
    """:func:`rope_` on the q and k heads of ``qkv[N, (Hq + 2 Hkv) * D]`` (q, k, v side
    by side) and the K/V store of the rotated keys and the values into ``kv_layer[2,
    blocks, tokens_per_block, Hkv, D]`` at ``slot_mapping`` (-1: not stored), in one
    kernel: the results of ``rope_`` followed by ``triton_paged.store_kv``, bit for
    bit. See :func:`store_fusable` for the pools it takes."""
    # Triton is optional: its kernels load only when fusion runs
    from ._triton_fused import rope_store_kernel

    n = qkv.shape[0]
    if qkv.stride(-1) != 1:
        raise ValueError("rope_store_ needs rows whose elements are contiguous")
    if qkv.shape[1] < (num_heads + 2 * num_kv_heads) * head_dim:
        raise ValueError(f"qkv rows of {qkv.shape[1]} hold fewer than q, k and v heads")
    if n == 0:
        return
    cos, sin = cos.contiguous(), sin.contiguous()
    slots = slot_mapping if slot_mapping.dtype == torch.int64 else slot_mapping.long()
    half = head_dim // 2
    rope_store_kernel[(n, num_heads + 2 * num_kv_heads)](
        qkv, cos, sin, kv_layer, slots.contiguous(), qkv.stride(0), cos.stride(0),
        kv_layer.stride(2), kv_layer.stride(0),
        Q_HEADS=num_heads, KV_HEADS=num_kv_heads, HALF=half, BLOCK_H=_pow2(half),
        IS_FP32=qkv.dtype == torch.float32,
    )  # fmt: skip


def decode_rope_store(
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
) -> torch.Tensor:
    """Decode attention of the step's raw ``qkv`` rows with RoPE and the K/V store:
    one kernel (``triton_paged.paged_decode_rope_store``) where it runs, else
    :func:`rope_store_` and the chosen decode kernel (the same results; ``qkv``'s q and
    k heads then rotated in place)."""
    out = triton_paged.paged_decode_rope_store(
        qkv, cos, sin, kv_layer, slot_mapping, block_tables, context_lens,
        num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
        softmax_scale=softmax_scale, sliding_window=sliding_window, sink_tokens=sink_tokens,
        sink_query=sink_query,
    )  # fmt: skip
    if out is not None:
        return out
    rope_store_(
        qkv, cos, sin, kv_layer, slot_mapping,
        num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
    )  # fmt: skip
    query = qkv[:, : num_heads * head_dim].view(qkv.shape[0], num_heads, head_dim)
    return triton_paged.paged_decode(
        query, kv_layer, block_tables, context_lens, softmax_scale=softmax_scale,
        sliding_window=sliding_window, sink_tokens=sink_tokens, sink_query=sink_query,
    )  # fmt: skip
