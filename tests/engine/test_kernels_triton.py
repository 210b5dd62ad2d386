"""Triton paged kernels against the reference backend.

They run on CUDA. Without a GPU they are skipped, unless ``TRITON_INTERPRET=1`` is set and
Triton is importable: then Triton's interpreter runs the same kernels on CPU tensors.
"""

from __future__ import annotations

import os

import pytest
import torch

from engine.kernels import FP8_DTYPE, fp8_scale_for, paged_attention, triton_paged
from tests.engine.test_kernels_oracle import build_case

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1" and triton_paged.triton_available()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
cuda = pytest.mark.skipif(
    not (torch.cuda.is_available() or INTERPRET),
    reason="Triton kernels need CUDA (or TRITON_INTERPRET=1 with Triton installed)",
)


class BrokenKernel:
    """Stands in for a Triton kernel whose launch fails with ``message`` (a Triton or GPU
    it does not build on); ``grids`` records the launches tried."""

    def __init__(self, message: str) -> None:
        self.message, self.grids = message, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.grids.append(grid)
            raise RuntimeError(self.message)

        return launch


def test_supports_is_false_off_cuda():
    query = torch.zeros(2, 4, 16)
    pool = torch.zeros(2, 3, 16, 2, 16)
    assert not triton_paged.supports(pool, query, prefill=False)
    assert not triton_paged.supports(pool, query, prefill=True)


def test_fp8_pools_take_the_triton_kernels_only_from_sm89(monkeypatch):
    """Triton compiles no e4m3 loads for sm_80 (``benchmarks/triton_aot.py --arch 80``):
    there an fp8 pool stays on the reference; bf16 pools and every pool on sm_89+ do not."""
    from types import SimpleNamespace

    def fake(dtype):  # a CUDA tensor's attributes that `supports` reads
        device = SimpleNamespace(index=0)
        return SimpleNamespace(shape=(2, 4, 16, 2, 16), dtype=dtype, is_cuda=True, device=device)

    query = fake(torch.bfloat16)
    monkeypatch.setattr(triton_paged, "triton_available", lambda: True)
    for capability, fp8_ok in (((8, 0), False), ((8, 6), False), ((8, 9), True), ((9, 0), True)):
        monkeypatch.setattr(triton_paged, "_capability", lambda index, c=capability: c)
        assert triton_paged.supports(fake(FP8_DTYPE), query, prefill=False) is fp8_ok
        assert triton_paged.supports(fake(FP8_DTYPE), query, prefill=True) is fp8_ok
        assert triton_paged.supports(fake(torch.bfloat16), query, prefill=False)


def _to_cuda(case, dtype, cache_dtype=None, scale=1.0):
    m = case.meta
    pool = case.pool.to(DEVICE)
    if cache_dtype == FP8_DTYPE:
        pool = (pool.float() / scale).to(FP8_DTYPE)
    else:
        pool = pool.to(cache_dtype or dtype)
    return dict(
        query=case.query.to(DEVICE, dtype),
        sink_query=case.sink_query.to(DEVICE, dtype),
        pool=pool,
        tables=m.block_tables.to(DEVICE),
        ctx=m.context_lens.to(DEVICE),
        qsl=m.query_start_loc.to(DEVICE),
        max_q=m.max_query_len,
    )


def _reference(t, window, sinks, use_sq, scale=1.0):
    return paged_attention(
        t["query"].float(), t["pool"], t["tables"], t["ctx"], t["qsl"],
        sliding_window=window, sink_tokens=sinks,
        sink_query=t["sink_query"].float() if use_sq else None,
        k_scale=scale, v_scale=scale,
    )  # fmt: skip


TOL = {torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 3e-2}
SETTINGS = [(None, 0, False), (12, 0, False), (12, 3, True), (20, 2, False)]
DTYPES = sorted(TOL, key=str)


def _pairwise(blocks: list[int]) -> list:
    """(dtype, tokens_per_block, window, sinks, use_sq) over the whole product; the cases
    outside one pairwise cover (every pair of dtype, block size and setting appears once)
    are slow-marked. On CPU the interpreter takes seconds per case, so the default run
    keeps the cover; `benchmarks/gpu_checks.sh` runs the whole product on CUDA."""
    cases = []
    for i, dtype in enumerate(DTYPES):
        for j, (window, sinks, use_sq) in enumerate(SETTINGS):
            for k, block in enumerate(blocks):
                # offset 1: bfloat16, the interpreter's slowest dtype, meets block size 1
                # (the most loop iterations) once, not twice
                marks = () if k == (i + j + 1) % len(blocks) else (pytest.mark.slow,)
                name = f"{window}-{sinks}-{use_sq}-{block}-{str(dtype).split('.')[-1]}"
                cases.append(
                    pytest.param(dtype, block, window, sinks, use_sq, marks=marks, id=name)
                )
    return cases


def test_decode_kernel_choice(monkeypatch):
    monkeypatch.delenv("ENGINE_TRITON_DECODE", raising=False)
    assert triton_paged.decode_kernel() == "grouped"
    monkeypatch.setenv("ENGINE_TRITON_DECODE", "per-head")
    assert triton_paged.decode_kernel() == "per-head"
    monkeypatch.setenv("ENGINE_TRITON_DECODE", "grouped-dot")
    assert triton_paged.decode_kernel() == "grouped-dot"
    monkeypatch.setenv("ENGINE_TRITON_DECODE", "fast")
    with pytest.raises(ValueError, match="ENGINE_TRITON_DECODE='fast' is not one of"):
        triton_paged.decode_kernel()
    # keys per step: at most 64, the [group, keys, dim] tile within 4096 elements
    assert triton_paged.grouped_keys(1, 32) == 64
    assert triton_paged.grouped_keys(2, 64) == 32
    assert triton_paged.grouped_keys(4, 64) == 16
    assert triton_paged.grouped_keys(8, 128) == 4
    assert triton_paged.grouped_keys(128, 256) == 1
    assert triton_paged.grouped_config(2, 64) == (32, 4)


def test_grouped_config_overrides(monkeypatch):
    monkeypatch.setenv(triton_paged.KEYS_ENV, "16")
    monkeypatch.setenv(triton_paged.WARPS_ENV, "8")
    assert triton_paged.grouped_config(2, 64) == (16, 8)
    monkeypatch.setenv(triton_paged.WARPS_ENV, "")
    assert triton_paged.grouped_config(2, 64) == (16, 4)
    for bad in ("3", "0", "256", "many"):
        monkeypatch.setenv(triton_paged.KEYS_ENV, bad)
        with pytest.raises(ValueError, match="ENGINE_TRITON_DECODE_KEYS=.* power of two"):
            triton_paged.grouped_config(2, 64)


@cuda
@pytest.mark.parametrize("kernel", ["grouped", "per-head", "grouped-dot"])
@pytest.mark.parametrize(
    ("dtype", "tokens_per_block", "window", "sinks", "use_sq"), _pairwise([1, 8, 16])
)
def test_decode_kernel_matches_reference(dtype, tokens_per_block, window, sinks, use_sq, kernel):
    if kernel == "grouped-dot" and DEVICE == "cpu" and dtype == torch.bfloat16:
        pytest.skip("Triton's interpreter computes tl.dot on bfloat16 bit patterns")
    gen = torch.Generator().manual_seed(tokens_per_block)
    # One-token blocks: shorter contexts (each block is one loop step of the interpreter),
    # still longer than every window plus its sinks.
    lens = [1, 37, 70, 16] if tokens_per_block > 1 else [1, 26, 35, 16]
    case = build_case(
        gen, lens, [1, 1, 1, 1], tokens_per_block=tokens_per_block,
        num_kv_heads=2, group=4, head_dim=64, fill=float("nan"),
    )  # fmt: skip
    t = _to_cuda(case, dtype)
    out = triton_paged.paged_decode(
        t["query"], t["pool"], t["tables"], t["ctx"], sliding_window=window, sink_tokens=sinks,
        sink_query=t["sink_query"] if use_sq else None, kernel=kernel,
    )  # fmt: skip
    ref = _reference(t, window, sinks, use_sq)
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref, atol=TOL[dtype], rtol=0)


@cuda
@pytest.mark.parametrize(
    ("dtype", "tokens_per_block", "window", "sinks", "use_sq"), _pairwise([16, 32])
)
def test_prefill_kernel_matches_reference(dtype, tokens_per_block, window, sinks, use_sq):
    if DEVICE == "cpu" and dtype == torch.bfloat16:
        pytest.skip("Triton's interpreter computes tl.dot on bfloat16 bit patterns")
    gen = torch.Generator().manual_seed(tokens_per_block + 1)
    # A whole prompt, a chunk over a cached prefix, a decode row, and a long prompt.
    case = build_case(
        gen, [45, 60, 9, 100], [45, 17, 1, 100], tokens_per_block=tokens_per_block,
        num_kv_heads=2, group=2, head_dim=48, fill=float("nan"),
    )  # fmt: skip
    t = _to_cuda(case, dtype)
    out = triton_paged.paged_prefill(
        t["query"], t["pool"], t["tables"], t["ctx"], t["qsl"], max_query_len=t["max_q"],
        sliding_window=window, sink_tokens=sinks,
        sink_query=t["sink_query"] if use_sq else None,
    )  # fmt: skip
    ref = _reference(t, window, sinks, use_sq)
    torch.testing.assert_close(out.float(), ref, atol=TOL[dtype], rtol=0)


@cuda
@pytest.mark.parametrize(("window", "sinks", "use_sq"), [(None, 0, False), (40, 5, True)])
def test_grouped_decode_odd_group_and_keys_within_a_block(window, sinks, use_sq):
    """Three query heads per KV head (padded to four in the kernel), a head dim below its
    tile, 64-token blocks read 32 keys per step, and a padding row of length 0 (a CUDA
    graph's): the grouped kernel equals the reference and the per-head kernel."""
    gen = torch.Generator().manual_seed(9)
    case = build_case(
        gen, [1, 70, 129, 64], [1, 1, 1, 1], tokens_per_block=64,
        num_kv_heads=2, group=3, head_dim=48, fill=float("nan"),
    )  # fmt: skip
    assert triton_paged.grouped_keys(4, 64) == 16
    t = _to_cuda(case, torch.float32)
    args = (t["query"], t["pool"], t["tables"], t["ctx"])
    kw = dict(
        sliding_window=window, sink_tokens=sinks, sink_query=t["sink_query"] if use_sq else None
    )
    grouped = triton_paged.paged_decode(*args, kernel="grouped", **kw)
    per_head = triton_paged.paged_decode(*args, kernel="per-head", **kw)
    dot = triton_paged.paged_decode(*args, kernel="grouped-dot", **kw)  # 3 of 16 rows real
    ref = _reference(t, window, sinks, use_sq)
    torch.testing.assert_close(grouped, ref, atol=2e-5, rtol=0)
    torch.testing.assert_close(grouped, per_head, atol=2e-5, rtol=0)
    torch.testing.assert_close(dot, ref, atol=2e-5, rtol=0)
    ctx = t["ctx"].clone()
    ctx[0] = 0  # a padding row: no key, zeros out
    for kernel in ("grouped", "grouped-dot"):
        padded = triton_paged.paged_decode(t["query"], t["pool"], t["tables"], ctx, kernel=kernel)
        assert bool((padded[0] == 0).all())
    with pytest.raises(ValueError, match="decode kernel 'fast' is not one of"):
        triton_paged.paged_decode(*args, kernel="fast")


@cuda
@pytest.mark.parametrize("kernel", ["grouped", "grouped-dot"])
@pytest.mark.parametrize(("keys", "warps"), [(8, 2), (64, 8), (128, 4)])
def test_grouped_kernel_shapes_give_the_same_result(monkeypatch, keys, warps, kernel):
    """The shapes ``bench_decode_kernel.py`` tries (keys per step, warps) attend alike,
    keys per step below, at and above the block size."""
    gen = torch.Generator().manual_seed(keys)
    case = build_case(
        gen, [1, 45, 70, 16], [1, 1, 1, 1], tokens_per_block=16, num_kv_heads=2, group=2,
        head_dim=32, fill=float("nan"),
    )  # fmt: skip
    t = _to_cuda(case, torch.float32)
    args = (t["query"], t["pool"], t["tables"], t["ctx"])
    want = triton_paged.paged_decode(*args, kernel="per-head", sliding_window=20, sink_tokens=2)
    monkeypatch.setenv(triton_paged.KEYS_ENV, str(keys))
    monkeypatch.setenv(triton_paged.WARPS_ENV, str(warps))
    got = triton_paged.paged_decode(*args, kernel=kernel, sliding_window=20, sink_tokens=2)
    torch.testing.assert_close(got, want, atol=2e-5, rtol=0)


@cuda
def test_a_grouped_kernel_that_cannot_run_hands_over_to_the_per_head_one(monkeypatch):
    """A first grouped launch that fails (a Triton or GPU it does not build on) warns once,
    and this call and every later one take the per-head kernel; once the grouped kernel
    has run, a failure is raised as it is."""
    from engine.kernels import _triton_kernels

    gen = torch.Generator().manual_seed(4)
    case = build_case(
        gen, [20, 33], [1, 1], tokens_per_block=16, num_kv_heads=2, group=2, head_dim=32
    )
    t = _to_cuda(case, torch.float32)
    args = (t["query"], t["pool"], t["tables"], t["ctx"])
    want = triton_paged.paged_decode(*args, kernel="per-head")
    broken = BrokenKernel("no layout for this tile")
    monkeypatch.setattr(_triton_kernels, "paged_decode_grouped_kernel", broken)
    monkeypatch.setitem(triton_paged._GROUPED, "ran", False)
    monkeypatch.setitem(triton_paged._GROUPED, "failed", None)
    with pytest.warns(RuntimeWarning, match="grouped Triton decode kernel failed to run"):
        got = triton_paged.paged_decode(*args, kernel="grouped")
    assert torch.equal(got, want)
    assert triton_paged.grouped_failure() == "RuntimeError: no layout for this tile"
    assert torch.equal(triton_paged.paged_decode(*args, kernel="grouped"), want)
    assert len(broken.grids) == 1  # not tried again
    monkeypatch.setitem(triton_paged._GROUPED, "ran", True)
    monkeypatch.setitem(triton_paged._GROUPED, "failed", None)
    with pytest.raises(RuntimeError, match="no layout"):
        triton_paged.paged_decode(*args, kernel="grouped")


@cuda
def test_a_grouped_dot_kernel_that_cannot_run_hands_over_to_the_per_head_one(monkeypatch):
    from engine.kernels import _triton_kernels

    gen = torch.Generator().manual_seed(6)
    case = build_case(
        gen, [20, 33], [1, 1], tokens_per_block=16, num_kv_heads=2, group=2, head_dim=32
    )
    t = _to_cuda(case, torch.float32)
    args = (t["query"], t["pool"], t["tables"], t["ctx"])
    want = triton_paged.paged_decode(*args, kernel="per-head")
    broken = BrokenKernel("no mma for this shape")
    monkeypatch.setattr(_triton_kernels, "paged_decode_dot_kernel", broken)
    monkeypatch.setitem(triton_paged._DOT, "ran", False)
    monkeypatch.setitem(triton_paged._DOT, "failed", None)
    with pytest.warns(RuntimeWarning, match="grouped-dot Triton decode kernel failed to run"):
        got = triton_paged.paged_decode(*args, kernel="grouped-dot")
    assert torch.equal(got, want)
    assert triton_paged.dot_failure() == "RuntimeError: no mma for this shape"


@cuda
def test_fp8_pool_decode_and_prefill_match_reference():
    gen = torch.Generator().manual_seed(3)
    case = build_case(
        gen, [33, 50], [33, 1], tokens_per_block=16, num_kv_heads=1, group=4, head_dim=32
    )
    scale = fp8_scale_for(6.0)
    t = _to_cuda(case, torch.float16, cache_dtype=FP8_DTYPE, scale=scale)
    ref = _reference(t, None, 0, False, scale)
    pre = triton_paged.paged_prefill(
        t["query"], t["pool"], t["tables"], t["ctx"], t["qsl"], k_scale=scale, v_scale=scale
    )
    torch.testing.assert_close(pre.float(), ref, atol=5e-3, rtol=0)
    dec_rows = t["qsl"][1:] - 1
    for kernel in triton_paged.DECODE_KERNELS:
        dec = triton_paged.paged_decode(
            t["query"][dec_rows], t["pool"], t["tables"], t["ctx"], k_scale=scale,
            v_scale=scale, kernel=kernel,
        )  # fmt: skip
        torch.testing.assert_close(dec.float()[0], ref[32], atol=5e-3, rtol=0)
        torch.testing.assert_close(dec.float()[1], ref[-1], atol=5e-3, rtol=0)


@cuda
@pytest.mark.parametrize("cache_dtype", [torch.float32, torch.float16, torch.bfloat16, FP8_DTYPE])
def test_store_kernel_writes_what_the_reference_writes_and_skips_slot_minus_one(cache_dtype):
    """K/V rows as the model hands them over (strided views of one fused projection) land
    in their slots bit for bit as ``reference.store_kv`` puts them; slot -1 rows (the
    padding of a CUDA-graph batch) touch nothing."""
    from engine.kernels import reference

    gen = torch.Generator().manual_seed(5)
    n, hq, hkv, d = 6, 4, 2, 48
    dtype = torch.float32 if cache_dtype == torch.float32 else torch.float16
    qkv = torch.randn(n, (hq + 2 * hkv) * d, generator=gen).to(dtype).to(DEVICE)
    k = qkv[:, hq * d : (hq + hkv) * d].view(n, hkv, d)
    v = qkv[:, (hq + hkv) * d :].view(n, hkv, d)
    slots = torch.tensor([3, -1, 17, 40, -1, 63], device=DEVICE)
    pool = torch.randn(2, 4, 16, hkv, d, generator=gen).to(cache_dtype).to(DEVICE)
    scale = (0.05, 0.04) if cache_dtype == FP8_DTYPE else (1.0, 1.0)
    want = pool.clone()
    reference.store_kv(k, v, want, slots, *scale)
    before = pool.clone()
    assert triton_paged.supports_store(pool, k) or DEVICE == "cpu"
    triton_paged.store_kv(k, v, pool, slots, *scale)
    as_bytes = (lambda t: t.view(torch.uint8)) if cache_dtype == FP8_DTYPE else (lambda t: t)
    assert torch.equal(as_bytes(pool), as_bytes(want))
    changed = (as_bytes(pool) != as_bytes(before)).flatten(3).any(-1).any(0).flatten()
    assert set(changed.nonzero().flatten().tolist()) == {3, 17, 40, 63}
