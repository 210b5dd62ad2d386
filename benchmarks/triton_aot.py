"""Compile every Triton kernel of the engine for a GPU without one: Triton's own compiler
and the ``ptxas`` its wheel bundles, ahead of time, for an NVIDIA target (default sm_90,
the H200's). Catches what Triton's interpreter lets through on a CPU (types that do not
merge across branches, constructs the code generator refuses, shapes a layout cannot
take) and prints each kernel's registers, spills and shared memory, from ``ptxas -v``.

How: the engine's own launch wrappers (``triton_paged``, ``fused``) run on CPU tensors of
the ~0.5B benchmark model's shapes with every kernel replaced by a recorder, so each
launch's arguments are the wrapper's; each distinct launch (kernel, argument types,
compile-time constants, ``num_warps``) is then compiled with ``triton.compile`` for the
target. A failure prints its error and makes the exit status 1.

Run: ``python benchmarks/triton_aot.py [--arch 90] [--dtypes bf16,fp16,fp32]`` (without
``TRITON_INTERPRET``, which swaps the kernels for interpreted ones). Needs Triton with its
NVIDIA backend (the PyPI wheel has it); no GPU, no CUDA driver.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch

HQ, HKV, DIM, BLOCK = 16, 8, 64, 32  # the ~0.5B Llama of bench_engine.py --cuda-only
HIDDEN, INTER = 1024, 4096
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TYPE_CODES = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.uint8: "u8",
    torch.float8_e4m3fn: "fp8e4nv",
}
OPTIONS = ("num_warps", "num_stages")


@dataclass
class Launch:
    kernel: str
    signature: dict[str, str]
    constants: dict[str, object]
    options: dict[str, int] = field(default_factory=dict)
    aligned: tuple[int, ...] = ()  # arguments the JIT would mark divisible by 16

    def key(self) -> tuple:
        return (
            self.kernel,
            tuple(self.signature.items()),
            tuple(sorted(self.constants.items())),
            tuple(sorted(self.options.items())),
            self.aligned,
        )


def _aligned(value: object) -> bool:
    """Whether Triton's JIT specializes this argument as divisible by 16 (a tensor whose
    address is, an int that is; ``backends.compiler.BaseBackend``'s rule), so that the
    code compiled here is the code a launch on a GPU compiles."""
    if isinstance(value, torch.Tensor):
        return value.data_ptr() % 16 == 0
    return isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0


def _arg_type(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + TYPE_CODES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"no Triton type for {type(value).__name__}")


class Recorder:
    """Stands in for a kernel: ``kernel[grid](*args, **kwargs)`` records the launch."""

    def __init__(self, name: str, fn, seen: list[Launch]) -> None:
        self.name, self.fn, self.seen = name, fn, seen

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            names = self.fn.arg_names
            signature, constants, aligned = {}, {}, []
            for index, (name, value) in enumerate(zip(names, args, strict=False)):
                signature[name] = _arg_type(value)
                if _aligned(value):
                    aligned.append(index)
            options = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
            for name, value in kwargs.items():
                signature[name] = "constexpr"
                constants[name] = value
            missing = [n for n in names if n not in signature]
            if missing:
                raise TypeError(f"{self.name}: no value for {missing}")
            self.seen.append(Launch(self.name, signature, constants, options, tuple(aligned)))

        return launch


def record(dtypes: list[torch.dtype]) -> list[Launch]:
    """Every launch the wrappers make for the benchmark model's shapes in ``dtypes``."""
    from engine.kernels import _triton_fused, _triton_kernels, fused, triton_paged

    seen: list[Launch] = []
    for module in (_triton_kernels, _triton_fused):
        for name in dir(module):
            fn = getattr(module, name)
            if name.endswith("_kernel") and hasattr(fn, "arg_names"):
                setattr(module, name, Recorder(name, fn, seen))
    fp8 = torch.float8_e4m3fn
    gen = torch.Generator().manual_seed(0)
    batch, blocks = 4, 24
    tables = torch.arange(batch * 4, dtype=torch.int64).view(batch, 4)
    lens = torch.full((batch,), 100, dtype=torch.int64)
    starts = torch.arange(batch + 1, dtype=torch.int64) * 8
    slots = torch.arange(batch, dtype=torch.int64) * 3
    for dtype in dtypes:
        pools = [torch.zeros(2, blocks, BLOCK, HKV, DIM, dtype=dtype)]
        if dtype != torch.float32:
            pools.append(torch.zeros(2, blocks, BLOCK, HKV, DIM, dtype=fp8))
        qkv = torch.randn(batch, (HQ + 2 * HKV) * DIM, generator=gen).to(dtype)
        query = qkv[:, : HQ * DIM].view(batch, HQ, DIM)
        cos = torch.ones(batch, DIM, dtype=dtype)
        sin = torch.zeros(batch, DIM, dtype=dtype)
        sink_q = torch.randn(batch, HQ, DIM, generator=gen).to(dtype)
        for pool in pools:
            for kernel in triton_paged.DECODE_KERNELS:
                for window, sinks, sq in ((None, 0, None), (64, 4, sink_q)):
                    triton_paged.paged_decode(
                        query, pool, tables, lens, kernel=kernel, sliding_window=window,
                        sink_tokens=sinks, sink_query=sq,
                    )  # fmt: skip
            prefill_q = torch.randn(batch * 8, HQ, DIM, generator=gen).to(dtype)
            triton_paged.paged_prefill(prefill_q, pool, tables, lens, starts, max_query_len=8)
            key = qkv[:, HQ * DIM : (HQ + HKV) * DIM].view(batch, HKV, DIM)
            value = qkv[:, (HQ + HKV) * DIM :].view(batch, HKV, DIM)
            triton_paged.store_kv(key, value, pool, slots)
        pool = pools[0]
        for window, sinks, sq in ((None, 0, None), (64, 4, sink_q)):
            triton_paged.paged_decode_rope_store(
                qkv, cos, sin, pool, slots, tables, lens, num_heads=HQ, num_kv_heads=HKV,
                head_dim=DIM, sliding_window=window, sink_tokens=sinks, sink_query=sq,
            )  # fmt: skip
        x = torch.randn(batch, HIDDEN, generator=gen).to(dtype)
        weight = torch.ones(HIDDEN, dtype=dtype)
        fused.add_rms_norm(x, None, weight, 1e-6)
        fused.add_rms_norm(x, x.clone(), weight, 1e-6)
        fused.silu_mul(torch.randn(batch, 2 * INTER, generator=gen).to(dtype))
        fused.rope_(qkv, cos, sin, num_heads=HQ + HKV, head_dim=DIM)
        fused.rope_store_(qkv, cos, sin, pool, slots, num_heads=HQ, num_kv_heads=HKV, head_dim=DIM)
    unique: dict[tuple, Launch] = {}
    for launch in seen:
        unique.setdefault(launch.key(), launch)
    return list(unique.values())


def _ptxas_report(ptx: str, arch: int) -> str:
    """``registers, spill stores/loads`` of the kernel in ``ptx``, from ``ptxas -v`` (the
    one Triton itself uses for ``arch``)."""
    from triton.backends.nvidia.compiler import get_ptxas

    ptxas = get_ptxas(arch).path
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        suffix = "a" if arch >= 90 else ""
        proc = subprocess.run(
            [
                str(ptxas),
                "-v",
                f"--gpu-name=sm_{arch}{suffix}",
                str(src),
                "-o",
                str(Path(tmp) / "k.o"),
            ],
            capture_output=True,
            text=True,
        )
    text = proc.stdout + proc.stderr
    regs = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    return (
        f"{regs.group(1) if regs else '?':>4} regs, spills"
        f" {spills.group(1) + '/' + spills.group(2) if spills else '?':>7}"
    )


def compile_all(launches: list[Launch], arch: int) -> int:
    """Compile each launch for ``sm_<arch>``; print one line each; the number that failed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from engine.kernels import _triton_fused, _triton_kernels

    target = GPUTarget("cuda", arch, 32)
    failed = 0
    for launch in launches:
        module = _triton_kernels if hasattr(_triton_kernels, launch.kernel) else _triton_fused
        fn = getattr(module, launch.kernel).fn  # the recorder holds the JIT function
        types = {n: t for n, t in launch.signature.items() if t != "constexpr"}
        dtypes = sorted({t for t in types.values() if t.startswith("*") and t[1] in "bfu"})
        label = (
            f"{launch.kernel} [{','.join(dtypes)}]"
            f" {','.join(f'{k}={v}' for k, v in launch.constants.items())}"
        )
        start = time.perf_counter()
        try:
            attrs = {(i,): [["tt.divisibility", 16]] for i in launch.aligned}
            src = ASTSource(fn, launch.signature, launch.constants, attrs)
            compiled = triton.compile(src, target=target, options=dict(launch.options))
            report = _ptxas_report(compiled.asm["ptx"], arch)
            shared = compiled.metadata.shared
            print(
                f"ok   {time.perf_counter() - start:5.1f} s {report}, shared {shared:>6} B  {label}",
                flush=True,
            )
        except Exception as err:  # a kernel the compiler refuses: report it, go on
            failed += 1
            print(f"FAIL {label}: {type(err).__name__}: {str(err).splitlines()[:3]}")
            traceback.print_exc()
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 80, 90")
    parser.add_argument("--dtypes", default="bf16,fp16,fp32", help="model dtypes to compile for")
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("unset TRITON_INTERPRET: under the interpreter there is nothing to compile")
        return 2
    try:
        import triton  # noqa: F401
    except ImportError:
        print("skipped: Triton is not installed")
        return 0
    dtypes = [DTYPES[d] for d in args.dtypes.split(",")]
    launches = record(dtypes)
    if args.arch < 89:  # the engine's ``triton_paged.supports`` keeps fp8 pools off these
        fp8 = [x for x in launches if "*fp8e4nv" in x.signature.values()]
        launches = [x for x in launches if x not in fp8]
        print(f"{len(fp8)} launches over an fp8 pool left out: the kernels take one from sm_89")
    print(f"{len(launches)} distinct launches, compiled for sm_{args.arch}")
    failed = compile_all(launches, args.arch)
    print(f"{len(launches) - failed} compiled, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
