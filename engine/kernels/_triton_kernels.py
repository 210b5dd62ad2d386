"""Triton kernels for paged attention (CUDA only; imported lazily by ``triton_paged``).

Both kernels use the pool layout ``[2, num_blocks, tokens_per_block, num_kv_heads,
head_dim]`` and the visibility rule of ``reference.py``. Softmax runs online over KV blocks
in float32; the running maximum starts at -1e30 rather than -inf so that a block whose keys
are all masked leaves the state unchanged instead of producing NaN.
"""

# No ``from __future__ import annotations`` here: Triton reads the ``tl.constexpr``
# annotations of kernel parameters at decoration time.
import triton
import triton.language as tl


@triton.jit
def _decode_block(
    blk, q, qs, acc, m_i, l_i,
    kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, sm_scale, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_SINK_Q: tl.constexpr,
):  # fmt: skip
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    block_id = tl.load(bt_row_ptr + blk)
    kpos = blk * BLOCK_N + offs_n
    # A dropped block (id -1) shows no keys. Folded into the length limit rather than
    # and-ed as a scalar: Triton 3.9's interpreter turns tensor & scalar-bool into int32.
    visible = (kpos < tl.where(block_id >= 0, ctx, 0)) & (kpos <= qpos)
    visible = visible & ((kpos < sinks) | (qpos - kpos < window - sinks))
    base = kv_ptr + tl.maximum(block_id, 0).to(tl.int64) * stride_kb + kv_head * stride_kh
    offs = offs_n[:, None] * stride_kt + offs_d[None, :]
    lmask = visible[:, None] & (offs_d[None, :] < HEAD_DIM)
    k = tl.load(base + offs, mask=lmask, other=0.0).to(tl.float32) * k_scale
    v = tl.load(base + stride_kv + offs, mask=lmask, other=0.0).to(tl.float32) * v_scale
    s = tl.sum(q[None, :] * k, axis=1) * sm_scale
    if HAS_SINK_Q:
        s_sink = tl.sum(qs[None, :] * k, axis=1) * sm_scale
        s = tl.where(kpos < sinks, s_sink, s)
    s = tl.where(visible, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=0))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(s - m_new)
    acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
    l_i = l_i * alpha + tl.sum(p, axis=0)
    return acc, m_new, l_i


@triton.jit
def paged_decode_kernel(
    q_ptr, qs_ptr, kv_ptr, bt_ptr, ctx_ptr, out_ptr,
    stride_qt, stride_qh, stride_kv, stride_kb, stride_kt, stride_kh, stride_bt,
    stride_ot, stride_oh,
    sm_scale, k_scale, v_scale, window, sinks,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr, HAS_SINK_Q: tl.constexpr,
):  # fmt: skip
    # One program per (sequence, query head); one query token per sequence.
    seq = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // GROUP
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < HEAD_DIM
    ctx = tl.load(ctx_ptr + seq).to(tl.int32)
    qpos = ctx - 1
    q = tl.load(q_ptr + seq * stride_qt + head * stride_qh + offs_d, mask=dmask, other=0.0)
    q = q.to(tl.float32)
    qs = q
    if HAS_SINK_Q:
        qs = tl.load(qs_ptr + seq * stride_qt + head * stride_qh + offs_d, mask=dmask, other=0.0)
        qs = qs.to(tl.float32)
    bt_row_ptr = bt_ptr + seq * stride_bt
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    m_i = -1.0e30
    l_i = 0.0
    num_blocks = tl.cdiv(ctx, BLOCK_N)
    sink_end = tl.minimum(tl.cdiv(sinks, BLOCK_N), num_blocks)
    lo = tl.maximum(qpos - (window - sinks) + 1, 0)
    first = tl.maximum(lo // BLOCK_N, sink_end)
    for blk in range(0, sink_end):
        acc, m_i, l_i = _decode_block(
            blk, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks,
            sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
            HEAD_DIM, BLOCK_D, BLOCK_N, HAS_SINK_Q,
        )  # fmt: skip
    for blk in range(first, num_blocks):
        acc, m_i, l_i = _decode_block(
            blk, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks,
            sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
            HEAD_DIM, BLOCK_D, BLOCK_N, HAS_SINK_Q,
        )  # fmt: skip
    # A padding row of a CUDA-graph batch (context length 0) saw no key: keep it finite.
    out = acc / tl.where(l_i > 0, l_i, 1.0)
    tl.store(
        out_ptr + seq * stride_ot + head * stride_oh + offs_d,
        out.to(out_ptr.dtype.element_ty),
        mask=dmask,
    )


@triton.jit
def _load_keys(
    it, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    KEYS: tl.constexpr,
):  # fmt: skip
    # Key positions [it * KEYS, (it + 1) * KEYS), over as many pool blocks as they span
    # (KEYS may be smaller or larger than a block): each key finds its block in the table.
    # Returns the positions, which of them the query sees, and their K and V in float32.
    kpos = it * KEYS + tl.arange(0, KEYS)
    offs_d = tl.arange(0, BLOCK_D)
    in_ctx = kpos < ctx
    block_id = tl.load(bt_row_ptr + kpos // BLOCK_N, mask=in_ctx, other=-1)
    visible = in_ctx & (block_id >= 0) & (kpos <= qpos)
    visible = visible & ((kpos < sinks) | (qpos - kpos < window - sinks))
    rows = tl.maximum(block_id, 0).to(tl.int64) * stride_kb + (kpos % BLOCK_N) * stride_kt
    offs = rows[:, None] + kv_head * stride_kh + offs_d[None, :]
    lmask = visible[:, None] & (offs_d[None, :] < HEAD_DIM)
    k = tl.load(kv_ptr + offs, mask=lmask, other=0.0).to(tl.float32) * k_scale
    v = tl.load(kv_ptr + stride_kv + offs, mask=lmask, other=0.0).to(tl.float32) * v_scale
    return kpos, visible, k, v


@triton.jit
def _grouped_keys(
    it, q, qs, acc, m_i, l_i,
    kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, sm_scale, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    KEYS: tl.constexpr, HAS_SINK_Q: tl.constexpr,
):  # fmt: skip
    kpos, visible, k, v = _load_keys(
        it, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, k_scale, v_scale,
        stride_kv, stride_kb, stride_kt, stride_kh, HEAD_DIM, BLOCK_D, BLOCK_N, KEYS,
    )  # fmt: skip
    # Every query head of the group against the same keys: [GROUP_PAD, KEYS].
    s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * sm_scale
    if HAS_SINK_Q:
        s_sink = tl.sum(qs[:, None, :] * k[None, :, :], axis=2) * sm_scale
        s = tl.where((kpos < sinks)[None, :], s_sink, s)
    s = tl.where(visible[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(s - m_new[:, None])
    acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    return acc, m_new, l_i


@triton.jit
def _attend_keys(
    q, qs, kv_ptr, bt_row_ptr, kv_head, ctx, window, sinks, sm_scale, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    ROWS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr, KEYS: tl.constexpr, HAS_SINK_Q: tl.constexpr,
    DOT: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # The key loop of the grouped decode kernels: the ROWS query rows of one sequence and
    # KV head (its last position) over the sink keys, then the window's, KEYS at a time
    # (``_dot_keys`` with DOT, else ``_grouped_keys``); the normalised output.
    qpos = ctx - 1
    acc = tl.zeros([ROWS, BLOCK_D], dtype=tl.float32)
    m_i = tl.full([ROWS], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([ROWS], dtype=tl.float32)
    num_its = tl.cdiv(ctx, KEYS)
    sink_end = tl.minimum(tl.cdiv(sinks, KEYS), num_its)
    lo = tl.maximum(qpos - (window - sinks) + 1, 0)
    first = tl.maximum(lo // KEYS, sink_end)
    for it in range(0, sink_end):
        if DOT:
            acc, m_i, l_i = _dot_keys(
                it, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q, IS_FP32,
            )  # fmt: skip
        else:
            acc, m_i, l_i = _grouped_keys(
                it, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q,
            )  # fmt: skip
    for it in range(first, num_its):
        if DOT:
            acc, m_i, l_i = _dot_keys(
                it, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q, IS_FP32,
            )  # fmt: skip
        else:
            acc, m_i, l_i = _grouped_keys(
                it, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q,
            )  # fmt: skip
    # A padding row of a CUDA-graph batch (context length 0) saw no key: keep it finite.
    return acc / tl.where(l_i > 0, l_i, 1.0)[:, None]


@triton.jit
def _dot_update(
    q, qs, k, v, visible, sink_cols, acc, m_i, l_i, sm_scale,
    HAS_SINK_Q: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # One online-softmax step of ``tl.dot`` attention: q[M, D] (qs: the sink query) against
    # float32 k and v [N, D] (cast to q's dtype outside float32), ``visible`` [M, N] or
    # [1, N], ``sink_cols`` [1, N] the sink keys' columns.
    if IS_FP32:
        s = tl.dot(q, tl.trans(k), input_precision="ieee")
    else:
        s = tl.dot(q, tl.trans(k.to(q.dtype)))
    if HAS_SINK_Q:
        if IS_FP32:
            s_sink = tl.dot(qs, tl.trans(k), input_precision="ieee")
        else:
            s_sink = tl.dot(qs, tl.trans(k.to(qs.dtype)))
        s = tl.where(sink_cols, s_sink, s)
    s = tl.where(visible, s * sm_scale, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(s - m_new[:, None])
    if IS_FP32:
        pv = tl.dot(p, v, input_precision="ieee")
    else:
        pv = tl.dot(p.to(q.dtype), v.to(q.dtype))
    acc = acc * alpha[:, None] + pv
    l_i = l_i * alpha + tl.sum(p, axis=1)
    return acc, m_new, l_i


@triton.jit
def paged_decode_grouped_kernel(
    q_ptr, qs_ptr, kv_ptr, bt_ptr, ctx_ptr, out_ptr,
    stride_qt, stride_qh, stride_kv, stride_kb, stride_kt, stride_kh, stride_bt,
    stride_ot, stride_oh,
    sm_scale, k_scale, v_scale, window, sinks,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, KEYS: tl.constexpr,
    HAS_SINK_Q: tl.constexpr,
):  # fmt: skip
    # One program per (sequence, KV head): its GROUP query heads share every K/V load.
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    offs_g = tl.arange(0, GROUP_PAD)
    offs_d = tl.arange(0, BLOCK_D)
    heads = kv_head * GROUP + offs_g
    qmask = (offs_g[:, None] < GROUP) & (offs_d[None, :] < HEAD_DIM)
    q_offs = seq * stride_qt + heads[:, None] * stride_qh + offs_d[None, :]
    ctx = tl.load(ctx_ptr + seq).to(tl.int32)
    q = tl.load(q_ptr + q_offs, mask=qmask, other=0.0).to(tl.float32)
    qs = q
    if HAS_SINK_Q:
        qs = tl.load(qs_ptr + q_offs, mask=qmask, other=0.0).to(tl.float32)
    out = _attend_keys(
        q, qs, kv_ptr, bt_ptr + seq * stride_bt, kv_head, ctx, window, sinks,
        sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
        GROUP_PAD, HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q, False, False,
    )  # fmt: skip
    o_offs = seq * stride_ot + heads[:, None] * stride_oh + offs_d[None, :]
    tl.store(out_ptr + o_offs, out.to(out_ptr.dtype.element_ty), mask=qmask)


@triton.jit
def paged_decode_dot_kernel(
    q_ptr, qs_ptr, kv_ptr, bt_ptr, ctx_ptr, out_ptr,
    stride_qt, stride_qh, stride_kv, stride_kb, stride_kt, stride_kh, stride_bt,
    stride_ot, stride_oh,
    sm_scale, k_scale, v_scale, window, sinks,
    GROUP: tl.constexpr, ROWS: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, KEYS: tl.constexpr,
    HAS_SINK_Q: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # One program per (sequence, KV head), as the grouped kernel, with its GROUP query
    # heads padded to ROWS (>= 16) rows of a matrix product: scores and the weighted sum
    # of values are ``tl.dot`` calls (tensor cores), over KEYS keys at a time.
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    offs_g = tl.arange(0, ROWS)
    offs_d = tl.arange(0, BLOCK_D)
    heads = kv_head * GROUP + offs_g
    qmask = (offs_g[:, None] < GROUP) & (offs_d[None, :] < HEAD_DIM)
    q_offs = seq * stride_qt + heads[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptr + q_offs, mask=qmask, other=0.0)
    qs = q
    if HAS_SINK_Q:
        qs = tl.load(qs_ptr + q_offs, mask=qmask, other=0.0)
    ctx = tl.load(ctx_ptr + seq).to(tl.int32)
    out = _attend_keys(
        q, qs, kv_ptr, bt_ptr + seq * stride_bt, kv_head, ctx, window, sinks,
        sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
        ROWS, HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q, True, IS_FP32,
    )  # fmt: skip
    o_offs = seq * stride_ot + heads[:, None] * stride_oh + offs_d[None, :]
    tl.store(out_ptr + o_offs, out.to(out_ptr.dtype.element_ty), mask=qmask)


@triton.jit
def _dot_keys(
    it, q, qs, acc, m_i, l_i,
    kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, sm_scale, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    KEYS: tl.constexpr, HAS_SINK_Q: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # The keys of step ``it`` (``_load_keys``), attended by every padded query row with
    # ``tl.dot``.
    kpos, visible, k, v = _load_keys(
        it, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, k_scale, v_scale,
        stride_kv, stride_kb, stride_kt, stride_kh, HEAD_DIM, BLOCK_D, BLOCK_N, KEYS,
    )  # fmt: skip
    return _dot_update(
        q, qs, k, v, visible[None, :], (kpos < sinks)[None, :], acc, m_i, l_i, sm_scale,
        HAS_SINK_Q, IS_FP32,
    )  # fmt: skip


@triton.jit
def _rotate(x, x_swapped, c, s_signed, IS_FP32: tl.constexpr):
    # RoPE of a [.., HEAD_DIM] row as ``rope_kernel`` computes it: ``x_swapped`` holds the
    # other half of each element's pair and ``s_signed`` the sine with the first half
    # negated, so y = x * cos + x_swapped * s_signed; in half precision each product is
    # rounded to the dtype before the sum (the torch path's rounding), then the sum.
    dtype = x.dtype
    a = x.to(tl.float32)
    b = x_swapped.to(tl.float32)
    if IS_FP32:
        y = a * c + b * s_signed
    else:
        y = (a * c).to(dtype).to(tl.float32) + (b * s_signed).to(dtype).to(tl.float32)
    return y.to(dtype)


@triton.jit
def paged_decode_rope_store_kernel(
    qkv_ptr, qs_ptr, kv_ptr, bt_ptr, ctx_ptr, out_ptr, cos_ptr, sin_ptr, slot_ptr,
    stride_qt, k_off, v_off, stride_c,
    stride_kv, stride_kb, stride_kt, stride_kh, stride_bt,
    stride_ot, stride_oh,
    sm_scale, window, sinks,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, KEYS: tl.constexpr,
    HAS_SINK_Q: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    # The grouped decode kernel with RoPE and the K/V store in front: one program per
    # (sequence, KV head) reads its query heads, key head and value head from the row of
    # the fused qkv projection, rotates the queries and the key at the row's position
    # (its cos/sin table row), stores the key and the value in the row's slot (-1: not
    # stored), and then attends over the pool, the new key included, exactly as
    # ``paged_decode_grouped_kernel`` does after ``rope_store_kernel``.
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    offs_g = tl.arange(0, GROUP_PAD)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < HEAD_DIM
    first_half = offs_d < HEAD_DIM // 2
    swap = tl.where(first_half, offs_d + HEAD_DIM // 2, offs_d - HEAD_DIM // 2)
    row = seq.to(tl.int64) * stride_qt
    c = tl.load(cos_ptr + seq * stride_c + offs_d, mask=dmask, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + seq * stride_c + offs_d, mask=dmask, other=0.0).to(tl.float32)
    s = tl.where(first_half, -s, s)
    heads = kv_head * GROUP + offs_g
    qmask = (offs_g[:, None] < GROUP) & dmask[None, :]
    q_at = qkv_ptr + row + heads[:, None] * HEAD_DIM
    xq = tl.load(q_at + offs_d[None, :], mask=qmask, other=0.0)
    xq_sw = tl.load(q_at + swap[None, :], mask=qmask, other=0.0)
    q = _rotate(xq, xq_sw, c[None, :], s[None, :], IS_FP32).to(tl.float32)
    k_at = qkv_ptr + row + k_off + kv_head * HEAD_DIM
    k_new = _rotate(
        tl.load(k_at + offs_d, mask=dmask, other=0.0),
        tl.load(k_at + swap, mask=dmask, other=0.0), c, s, IS_FP32,
    )  # fmt: skip
    v_new = tl.load(qkv_ptr + row + v_off + kv_head * HEAD_DIM + offs_d, mask=dmask, other=0.0)
    slot = tl.load(slot_ptr + seq).to(tl.int64)
    if slot >= 0:
        dst = kv_ptr + (slot // BLOCK_N) * stride_kb + (slot % BLOCK_N) * stride_kt
        dst += kv_head * stride_kh + offs_d
        tl.store(dst, k_new.to(kv_ptr.dtype.element_ty), mask=dmask)
        tl.store(dst + stride_kv, v_new.to(kv_ptr.dtype.element_ty), mask=dmask)
    tl.debug_barrier()  # this program's stores are seen by its loads of the pool below
    ctx = tl.load(ctx_ptr + seq).to(tl.int32)
    qs = q
    if HAS_SINK_Q:
        qs_offs = seq * stride_ot + heads[:, None] * stride_oh + offs_d[None, :]
        qs = tl.load(qs_ptr + qs_offs, mask=qmask, other=0.0).to(tl.float32)
    out = _attend_keys(
        q, qs, kv_ptr, bt_ptr + seq * stride_bt, kv_head, ctx, window, sinks,
        sm_scale, 1.0, 1.0, stride_kv, stride_kb, stride_kt, stride_kh,
        GROUP_PAD, HEAD_DIM, BLOCK_D, BLOCK_N, KEYS, HAS_SINK_Q, False, IS_FP32,
    )  # fmt: skip
    o_offs = seq * stride_ot + heads[:, None] * stride_oh + offs_d[None, :]
    tl.store(out_ptr + o_offs, out.to(out_ptr.dtype.element_ty), mask=qmask)


@triton.jit
def _prefill_block(
    blk, q, qs, acc, m_i, l_i,
    kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window, sinks, sm_scale, k_scale, v_scale,
    stride_kv, stride_kb, stride_kt, stride_kh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_SINK_Q: tl.constexpr, IS_FP32: tl.constexpr,
):  # fmt: skip
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    block_id = tl.load(bt_row_ptr + blk)
    kpos = blk * BLOCK_N + offs_n
    key_ok = kpos < tl.where(block_id >= 0, ctx, 0)  # see _decode_block
    visible = key_ok[None, :] & (kpos[None, :] <= qpos[:, None])
    visible = visible & ((kpos[None, :] < sinks) | (qpos[:, None] - kpos[None, :] < window - sinks))
    base = kv_ptr + tl.maximum(block_id, 0).to(tl.int64) * stride_kb + kv_head * stride_kh
    offs = offs_n[:, None] * stride_kt + offs_d[None, :]
    lmask = key_ok[:, None] & (offs_d[None, :] < HEAD_DIM)
    k = tl.load(base + offs, mask=lmask, other=0.0).to(tl.float32) * k_scale
    v = tl.load(base + stride_kv + offs, mask=lmask, other=0.0).to(tl.float32) * v_scale
    return _dot_update(
        q, qs, k, v, visible, kpos[None, :] < sinks, acc, m_i, l_i, sm_scale,
        HAS_SINK_Q, IS_FP32,
    )  # fmt: skip


@triton.jit
def paged_prefill_kernel(
    q_ptr, qs_ptr, kv_ptr, bt_ptr, ctx_ptr, qsl_ptr, out_ptr,
    stride_qt, stride_qh, stride_kv, stride_kb, stride_kt, stride_kh, stride_bt,
    stride_ot, stride_oh,
    sm_scale, k_scale, v_scale, window, sinks,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_SINK_Q: tl.constexpr,
    IS_FP32: tl.constexpr,
):  # fmt: skip
    # One program per (sequence, query head, tile of BLOCK_M new tokens).
    seq = tl.program_id(0)
    head = tl.program_id(1)
    tile = tl.program_id(2)
    q_start = tl.load(qsl_ptr + seq).to(tl.int32)
    qlen = tl.load(qsl_ptr + seq + 1).to(tl.int32) - q_start
    if tile * BLOCK_M < qlen:
        kv_head = head // GROUP
        ctx = tl.load(ctx_ptr + seq).to(tl.int32)
        offs_m = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, BLOCK_D)
        mmask = offs_m < qlen
        qmask = mmask[:, None] & (offs_d[None, :] < HEAD_DIM)
        qpos = ctx - qlen + offs_m
        q_offs = (q_start + offs_m)[:, None] * stride_qt + head * stride_qh + offs_d[None, :]
        q = tl.load(q_ptr + q_offs, mask=qmask, other=0.0)
        if IS_FP32:
            q = q.to(tl.float32)
        qs = q
        if HAS_SINK_Q:
            qs = tl.load(qs_ptr + q_offs, mask=qmask, other=0.0)
            if IS_FP32:
                qs = qs.to(tl.float32)
        bt_row_ptr = bt_ptr + seq * stride_bt
        acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - 1.0e30
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        last_pos = ctx - qlen + tl.minimum((tile + 1) * BLOCK_M, qlen) - 1
        num_blocks = last_pos // BLOCK_N + 1
        sink_end = tl.minimum(tl.cdiv(sinks, BLOCK_N), num_blocks)
        lo = tl.maximum(ctx - qlen + tile * BLOCK_M - (window - sinks) + 1, 0)
        first = tl.maximum(lo // BLOCK_N, sink_end)
        for blk in range(0, sink_end):
            acc, m_i, l_i = _prefill_block(
                blk, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, HAS_SINK_Q, IS_FP32,
            )  # fmt: skip
        for blk in range(first, num_blocks):
            acc, m_i, l_i = _prefill_block(
                blk, q, qs, acc, m_i, l_i, kv_ptr, bt_row_ptr, kv_head, ctx, qpos, window,
                sinks, sm_scale, k_scale, v_scale, stride_kv, stride_kb, stride_kt, stride_kh,
                HEAD_DIM, BLOCK_D, BLOCK_N, HAS_SINK_Q, IS_FP32,
            )  # fmt: skip
        # Padding rows (past the tile's real queries) may have seen no key; keep them finite.
        out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        o_offs = (q_start + offs_m)[:, None] * stride_ot + head * stride_oh + offs_d[None, :]
        tl.store(out_ptr + o_offs, out.to(out_ptr.dtype.element_ty), mask=qmask)


@triton.jit
def store_kv_kernel(
    k_ptr, v_ptr, cache_ptr, slot_ptr,
    stride_k, stride_v, row_elems, v_offset,
    BLOCK: tl.constexpr,
):  # fmt: skip
    # One program per new token: copy its K and V row (``row_elems`` elements, contiguous
    # within the row) into slot ``slot``; a slot of -1 (padding) is skipped on the device,
    # so the caller never has to look at the slots on the host.
    row = tl.program_id(0)
    slot = tl.load(slot_ptr + row).to(tl.int64)
    if slot >= 0:
        dst = cache_ptr + slot * row_elems
        for start in range(0, row_elems, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < row_elems
            k = tl.load(k_ptr + row * stride_k + offs, mask=mask)
            tl.store(dst + offs, k, mask=mask)
            v = tl.load(v_ptr + row * stride_v + offs, mask=mask)
            tl.store(dst + v_offset + offs, v, mask=mask)
