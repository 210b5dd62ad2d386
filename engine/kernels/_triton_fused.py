"""Triton kernels of the fused decoder ops (CUDA only; imported lazily by ``fused``).

Each kernel reproduces the rounding of the unfused torch ops it replaces: arithmetic in
float32, and a value rounded to the model dtype wherever the torch path stores an
intermediate tensor in that dtype (``IS_FP32`` off). So a fused half-precision step differs
from the unfused one only where float32 sums are taken in another order.
"""

# No ``from __future__ import annotations`` here: Triton reads the ``tl.constexpr``
# annotations of kernel parameters at decoration time.
import triton
import triton.language as tl


@triton.jit
def add_rms_norm_kernel(
    x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr,
    stride_x, stride_r, stride_o, stride_ro, n_cols, eps,
    HAS_RES: tl.constexpr, IS_FP32: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # One program per row: h = x (+ residual), stored as the new residual; out = rmsnorm(h).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0)
    dtype = x.dtype
    h = x.to(tl.float32)
    if HAS_RES:
        r = tl.load(res_ptr + row * stride_r + offs, mask=mask, other=0.0).to(tl.float32)
        h = (h + r).to(dtype).to(tl.float32)  # the residual stream is kept in the dtype
        tl.store(res_out_ptr + row * stride_ro + offs, h.to(dtype), mask=mask)
    mean_sq = tl.sum(h * h, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = h * rstd
    if not IS_FP32:
        y = y.to(dtype).to(tl.float32)  # the torch path rounds before the weight
    tl.store(out_ptr + row * stride_o + offs, (y * w).to(dtype), mask=mask)


@triton.jit
def silu_mul_kernel(
    gu_ptr, out_ptr, stride_gu, stride_o, n_cols,
    IS_FP32: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # out[row] = silu(gate) * up, gate and up the two halves of gu[row].
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    g = tl.load(gu_ptr + row * stride_gu + offs, mask=mask, other=0.0)
    dtype = g.dtype
    u = tl.load(gu_ptr + row * stride_gu + n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    gf = g.to(tl.float32)
    s = gf / (1.0 + tl.exp(-gf))
    if not IS_FP32:
        s = s.to(dtype).to(tl.float32)
    tl.store(out_ptr + row * stride_o + offs, (s * u).to(dtype), mask=mask)


@triton.jit
def _rotate_halves(x1, x2, c, s, IS_FP32: tl.constexpr):
    # RoPE of a head's two halves (halves layout) in float32, back in their dtype. In half
    # precision as the torch path rounds: x * cos and rotated * sin each rounded, then
    # their sum.
    dtype = x1.dtype
    a = x1.to(tl.float32)
    b = x2.to(tl.float32)
    if IS_FP32:
        y1 = a * c - b * s
        y2 = b * c + a * s
    else:
        y1 = (a * c).to(dtype).to(tl.float32) - (b * s).to(dtype).to(tl.float32)
        y2 = (b * c).to(dtype).to(tl.float32) + (a * s).to(dtype).to(tl.float32)
    return y1.to(dtype), y2.to(dtype)


@triton.jit
def rope_kernel(
    x_ptr, cos_ptr, sin_ptr, stride_t, stride_c,
    HALF: tl.constexpr, BLOCK_H: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # One program per (token, head), in place, halves layout; cos/sin from the step's
    # tables (``RotaryEmbedding.cos_sin``: both halves of a row are equal, read the first).
    tok = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    offs = tl.arange(0, BLOCK_H)
    mask = offs < HALF
    c = tl.load(cos_ptr + tok * stride_c + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + tok * stride_c + offs, mask=mask, other=0.0).to(tl.float32)
    base = x_ptr + tok * stride_t + head * (2 * HALF)
    x1 = tl.load(base + offs, mask=mask, other=0.0)
    x2 = tl.load(base + HALF + offs, mask=mask, other=0.0)
    y1, y2 = _rotate_halves(x1, x2, c, s, IS_FP32)
    tl.store(base + offs, y1, mask=mask)
    tl.store(base + HALF + offs, y2, mask=mask)


@triton.jit
def rope_store_kernel(
    x_ptr, cos_ptr, sin_ptr, cache_ptr, slot_ptr,
    stride_t, stride_c, row_elems, v_offset,
    Q_HEADS: tl.constexpr, KV_HEADS: tl.constexpr,
    HALF: tl.constexpr, BLOCK_H: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # One program per (token, head) of a fused qkv row: a q head is rotated in place, a k
    # head rotated in place and stored in the token's slot, a v head stored; as
    # ``rope_kernel`` followed by ``store_kv_kernel`` (a slot of -1 is not written).
    tok = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    offs = tl.arange(0, BLOCK_H)
    mask = offs < HALF
    base = x_ptr + tok * stride_t + head * (2 * HALF)
    slot = tl.load(slot_ptr + tok).to(tl.int64)
    x1 = tl.load(base + offs, mask=mask, other=0.0)
    x2 = tl.load(base + HALF + offs, mask=mask, other=0.0)
    if head < Q_HEADS + KV_HEADS:
        c = tl.load(cos_ptr + tok * stride_c + offs, mask=mask, other=0.0).to(tl.float32)
        s = tl.load(sin_ptr + tok * stride_c + offs, mask=mask, other=0.0).to(tl.float32)
        x1, x2 = _rotate_halves(x1, x2, c, s, IS_FP32)
        tl.store(base + offs, x1, mask=mask)
        tl.store(base + HALF + offs, x2, mask=mask)
    if (head >= Q_HEADS) & (slot >= 0):
        kv_head = head - Q_HEADS
        dst = cache_ptr + slot * row_elems
        if kv_head >= KV_HEADS:  # a v head: the pool's second half
            dst += v_offset
            kv_head -= KV_HEADS
        dst += kv_head * (2 * HALF)
        tl.store(dst + offs, x1, mask=mask)
        tl.store(dst + HALF + offs, x2, mask=mask)
