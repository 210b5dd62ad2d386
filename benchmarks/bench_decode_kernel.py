"""The Triton paged decode kernels side by side on CUDA: "grouped" (one program per
sequence and KV head, its query heads sharing every K/V load) against "per-head" (one
program per sequence and query head), on the attention shape of the ~0.5B Llama of
``bench_engine.py --cuda-only`` (16 query heads, 8 KV heads, head dim 64, bf16 pool,
32-token blocks), at batch 1, 32 and 128 and two context lengths.

For each: microseconds per call (CUDA events, median of 5 timings of 50 calls each), the KV
bytes a call must read (every cached key and value once) over that time as GB/s, and the
largest difference between the two kernels' outputs (both are checked against each other:
more than 2e-2 fails the run). The last line names the kernel faster at the largest batch
(its contexts' times summed): ``gpu_checks.sh`` runs its later steps with it, and it is
what ``ENGINE_TRITON_DECODE`` should name by default. Then the grouped kernel at the
largest batch in other shapes (keys per step, warps): the fastest is printed for
``gpu_checks.sh`` to export (``ENGINE_TRITON_DECODE_KEYS`` / ``_WARPS``).

For comparison (it decides nothing): torch's paged FlashAttention,
``torch.nn.attention.varlen.varlen_attn`` with a block table (torch 2.13 has it), on the
same pool, where this torch and GPU run it; else the line says why not.

Run: ``python benchmarks/bench_decode_kernel.py`` on a GPU; ``--cpu-smoke`` runs a tiny
shape under Triton's interpreter on the CPU to prove the script (its times mean nothing).
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import sys
import traceback

import torch

HEADS, KV_HEADS, DIM, BLOCK = 16, 8, 64, 32
KERNELS = ("grouped", "per-head", "grouped-dot")
# (keys per step, warps) of the grouped kernel tried at the largest batch
SHAPES = (
    (8, 4), (16, 4), (32, 4), (64, 4), (16, 8), (32, 8), (64, 8),
    (16, 2), (32, 2), (16, 1), (32, 1),
)  # fmt: skip


def make_case(batch: int, ctx: int, dtype: torch.dtype, device: str, seed: int = 0):
    """A pool holding ``batch`` sequences of ``ctx`` keys in shuffled blocks."""
    gen = torch.Generator().manual_seed(seed)
    per_seq = -(-ctx // BLOCK)
    blocks = batch * per_seq + 1
    pool = torch.randn(2, blocks, BLOCK, KV_HEADS, DIM, generator=gen).to(device, dtype)
    order = torch.randperm(blocks, generator=gen)[: batch * per_seq]
    tables = order.view(batch, per_seq).to(device)
    lens = torch.full((batch,), ctx, dtype=torch.int64, device=device)
    query = torch.randn(batch, HEADS, DIM, generator=gen).to(device, dtype)
    return query, pool, tables, lens


def flash_decode(case):
    """``(call, None)``: torch's paged varlen FlashAttention over ``case``'s pool, or
    ``(None, why)`` where this torch or device cannot run it."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError as err:
        return None, f"torch {torch.__version__} has no varlen_attn ({err})"
    if "block_table" not in inspect.signature(varlen_attn).parameters:
        return None, f"torch {torch.__version__}'s varlen_attn takes no block table"
    query, pool, tables, lens = case
    batch = query.shape[0]
    cu_q = torch.arange(batch + 1, dtype=torch.int32, device=query.device)
    used = lens.to(torch.int32)
    cu_k = torch.zeros(batch + 1, dtype=torch.int32, device=query.device)
    cu_k[1:] = torch.cumsum(used, 0)
    table = tables.to(torch.int32).contiguous()
    max_k = tables.shape[1] * BLOCK

    def call():
        return varlen_attn(
            query, pool[0], pool[1], cu_q, cu_k, 1, max_k,
            enable_gqa=True, seqused_k=used, block_table=table,
        )  # fmt: skip

    try:
        call()
    except Exception as err:  # its kernels do not take this shape, dtype or device
        return None, f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return call, None


def time_calls(fn, calls: int, rounds: int, device: str) -> float:
    """Median microseconds per call."""
    fn()  # compile
    samples = []
    for _ in range(rounds):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            samples.append(1e3 * start.elapsed_time(end) / calls)
        else:
            import time

            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples.append(1e6 * (time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shape, interpreter")
    args = parser.parse_args()
    if args.cpu_smoke:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        device, dtype, calls, rounds = "cpu", torch.float32, 1, 1
        shapes = [(1, 40), (4, 70)]
    elif not torch.cuda.is_available():
        print("skipped: no GPU is present (use --cpu-smoke to prove the script)")
        return 0
    else:
        device, dtype, calls, rounds = "cuda", torch.bfloat16, 50, 5
        shapes = [(b, c) for b in (1, 32, 128) for c in (152, 1024)]
    from engine.kernels import triton_paged

    if not triton_paged.triton_available():
        print("skipped: Triton is not installed")
        return 0
    print(
        f"paged decode, {HEADS} query heads / {KV_HEADS} KV heads, head dim {DIM}, "
        f"{BLOCK}-token blocks, {str(dtype).removeprefix('torch.')}; us per call, KV GB/s"
    )
    print(
        f"{'batch':>6} {'context':>8} {'KV MB':>7}"
        + "".join(f" {k + ' us':>15} {'GB/s':>7} {'|diff|':>9}" for k in KERNELS)
        + f" {'torch flash us':>15} {'GB/s':>7} {'|diff|':>9}"
    )
    print("(|diff|: the largest difference from the per-head kernel's output)")
    flash_why: set[str] = set()
    failed = False
    kernels = list(KERNELS)  # those that still run and agree with the per-head one
    totals = dict.fromkeys(KERNELS, 0.0)  # us over the largest batch's rows
    largest = max(b for b, _ in shapes)
    broken = {"grouped": triton_paged.grouped_failure, "grouped-dot": triton_paged.dot_failure}
    for batch, ctx in shapes:
        query, pool, tables, lens = make_case(batch, ctx, dtype, device)
        kv_bytes = 2 * batch * ctx * KV_HEADS * DIM * pool.element_size()
        times, outs = {}, {}
        case = (query, pool, tables, lens)
        for kernel in list(kernels):

            def call(kernel=kernel, case=case):
                return triton_paged.paged_decode(*case, kernel=kernel)

            try:
                outs[kernel] = call().float()
            except Exception as err:  # a kernel that does not build or run here
                traceback.print_exc()
                print(f"FAILED: the {kernel} kernel at batch {batch}: {type(err).__name__}: {err}")
                if kernel == "per-head":
                    return 1
                kernels.remove(kernel)
                failed |= kernel == "grouped"  # the default must run
                continue
            why = broken[kernel]() if kernel in broken else None
            if why is not None:  # the library fell back to the per-head kernel
                print(f"FAILED: the {kernel} kernel at batch {batch}: {why}")
                kernels.remove(kernel)
                outs.pop(kernel)
                failed |= kernel == "grouped"
                continue
            times[kernel] = time_calls(call, calls, rounds, device)
        cells = ""
        for kernel in KERNELS:
            if kernel not in times:
                cells += f" {'-':>15} {'-':>7} {'-':>9}"
                continue
            diff = (outs[kernel] - outs["per-head"]).abs().max().item()
            if not diff <= 2e-2:
                print(f"FAILED: the {kernel} kernel differs from per-head by {diff:.3g}")
                kernels.remove(kernel)
                failed |= kernel == "grouped"
            us = times[kernel]
            cells += f" {us:>15.2f} {kv_bytes / us / 1e3:>7.1f} {diff:>9.3g}"
            if batch == largest:
                totals[kernel] += us
        flash, reason = flash_decode(case)
        extra = f" {'-':>15} {'-':>7} {'-':>9}"
        if flash is None:
            flash_why.add(str(reason))
        else:
            us = time_calls(flash, calls, rounds, device)
            off = (flash().float() - outs["per-head"]).abs().max().item()
            extra = f" {us:>15.2f} {kv_bytes / us / 1e3:>7.1f} {off:>9.3g}"
        print(f"{batch:>6} {ctx:>8} {kv_bytes / 1e6:>7.2f}{cells}{extra}", flush=True)
    for reason in sorted(flash_why):
        print(f"torch flash (varlen_attn with a block table) not measured: {reason}")
    # gpu_checks.sh reads the two lines below: the kernel its later steps run with (the
    # per-head one when the default disagrees or fails), and that kernel's fastest shape
    faster = min(kernels, key=lambda k: totals[k])
    if failed:
        faster = "per-head"
    elif faster != "per-head":
        failed |= not grouped_shapes(faster, shapes, largest, dtype, device, calls, rounds)
    if failed:
        print("FAILED: a kernel failed or its outputs differ by more than 2e-2")
        faster = "per-head"
    print(f"faster at batch {largest}: {faster}")
    return 1 if failed else 0


def grouped_shapes(
    kernel: str, shapes, largest: int, dtype, device: str, calls: int, rounds: int
) -> bool:
    """Time a grouped ``kernel`` at the largest batch in other shapes (keys per step,
    warps: the ``ENGINE_TRITON_DECODE_KEYS`` / ``_WARPS`` overrides) and print the
    fastest, which ``gpu_checks.sh`` exports for its later steps; False if a shape's
    output differs from the per-head kernel's."""
    from engine.kernels import triton_paged

    group_pad = 1 << (HEADS // KV_HEADS - 1).bit_length()
    if kernel == "grouped":
        default = triton_paged.grouped_config(group_pad, max(16, DIM))
    else:
        default = triton_paged.dot_config(max(16, DIM))
    floor = triton_paged.DOT_ROWS if kernel == "grouped-dot" else 1
    tried = [default] + [c for c in SHAPES if c != default and c[0] >= floor]
    contexts = [c for b, c in shapes if b == largest]
    print(f"{kernel} kernel shapes at batch {largest}, us per call (default first):")
    print(f"{'keys':>5} {'warps':>6}" + "".join(f" {f'ctx {c}':>10}" for c in contexts))
    best, best_us, ok = default, float("inf"), True
    saved = {k: os.environ.get(k) for k in (triton_paged.KEYS_ENV, triton_paged.WARPS_ENV)}
    try:
        for keys, warps in tried:
            os.environ[triton_paged.KEYS_ENV], os.environ[triton_paged.WARPS_ENV] = (
                str(keys),
                str(warps),
            )
            cells, total = [], 0.0
            for ctx in contexts:
                case = make_case(largest, ctx, dtype, device)
                want = triton_paged.paged_decode(*case, kernel="per-head").float()

                def call(case=case):
                    return triton_paged.paged_decode(*case, kernel=kernel)

                try:
                    diff = (call().float() - want).abs().max().item()
                except Exception as err:  # a shape this GPU cannot take
                    cells.append(f"{'failed':>10}")
                    total = float("inf")
                    print(f"   keys {keys}, warps {warps}: {type(err).__name__}: {err}")
                    continue
                ok &= diff <= 2e-2
                us = time_calls(call, calls, rounds, device)
                total += us
                cells.append(f" {us:>10.2f}")
            print(f"{keys:>5} {warps:>6}" + "".join(cells), flush=True)
            if total < best_us:
                best, best_us = (keys, warps), total
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print(f"best {kernel} shape at batch {largest}: keys {best[0]} warps {best[1]}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
