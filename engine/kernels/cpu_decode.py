"""The CPU decode-attention kernel (``csrc/cpu_decode_attention.cpp``): built on first use,
loaded with ``ctypes``, called by ``engine.kernels.decode_mirror`` over its kept copies.

Why a kernel of our own: a decode query attends a few hundred keys per sequence, and
torch's CPU flash kernel pays a fixed cost per (sequence, KV head) and scores every key up
to the batch's longest row. This kernel scores each row's own keys only, reads every key
and value once for all the query heads that share it, and takes the keys transposed
(``[R, Hkv, D, cap]``), so that a run of keys is one vector load per channel. It matches
the flash kernel to float32 rounding (both about 2e-7 from a float64 reference), not bit
for bit.

Building: ``g++`` (or ``$CXX``) with ``-O3 -march=native -fopenmp``, no torch headers (a
fraction of a second), into ``$ENGINE_KERNEL_CACHE`` or ``~/.cache/arbiter-engine/kernels``,
one file per source, flags, compiler and CPU (``-march=native`` code may not run on another
CPU). Several processes may build at once: each writes its own temporary file and renames
it into place. Without a compiler, or when the build fails, :func:`kernel` returns None
(the reason is in :func:`unavailable_reason`) and the mirror attends with torch's kernel as
before. ``ENGINE_CPU_DECODE_KERNEL=0`` turns the kernel off; :func:`switched_off` does so
for a block of code.

Threads: built with OpenMP, the library links ``libgomp.so.1``, which the dynamic loader
resolves to the OpenMP runtime torch has already loaded, so the kernel shares torch's
threads (``torch.set_num_threads``) rather than starting its own; a call with enough work
(4,096 key and KV-head pairs) shares its (slot, KV head) pairs out over them. A compiler
without OpenMP gives a one-thread build, which the mirror uses only while torch runs one
intra-op thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

__all__ = ["DecodeKernel", "kernel", "supports", "switched_off", "unavailable_reason"]

ENV_SWITCH = "ENGINE_CPU_DECODE_KERNEL"
ENV_CACHE = "ENGINE_KERNEL_CACHE"
SOURCE = Path(__file__).with_name("csrc") / "cpu_decode_attention.cpp"
FLAGS = ("-O3", "-march=native", "-std=c++17", "-shared", "-fPIC")
MAX_GROUP = 8  # query heads per KV head
MAX_HEAD_DIM = 256
LANES = 16  # keys per vector in the kernel; the scratch rows get this much slack

_P, _I = ctypes.c_void_p, ctypes.c_int64
# q, q_row, slot_rows, new_k, k_row, new_v, v_row, carried, kt, v, out, out_row, lens,
# B, H, G, D, cap, scale, scratch, threads
_ARGTYPES: list[Any] = [_P, _I, _P, _P, _I, _P, _I, _I, _P, _P, _P, _I, _P]
_ARGTYPES += [_I, _I, _I, _I, _I, ctypes.c_float, _P, _I]


class DecodeKernel:
    """The loaded kernel: ``attend`` computes decode attention over one layer's copies."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        fn = lib.engine_decode_attention
        fn.restype = None
        fn.argtypes = _ARGTYPES
        self._fn = fn
        self._read = lib.engine_mirror_read
        self._read.restype = None
        self._read.argtypes = [_P, _P, _P, _I, _P, _I, _I, _I, _I, _I, _I, _P, _P]
        self._move = lib.engine_mirror_move
        self._move.restype = None
        self._move.argtypes = [_P, _P, _P, _I, _I, _I, _I, _P, _P]
        self.path = path
        # Built with OpenMP: its threads are the runtime's torch already uses.
        self.parallel = bool(lib.engine_decode_parallel())
        self._scratch = torch.empty(0)

    def attend(
        self,
        query: torch.Tensor,
        keys_t: torch.Tensor,
        values: torch.Tensor,
        lens: torch.Tensor,
        scale: float,
        slot_rows: torch.Tensor | None = None,
        new: tuple[torch.Tensor, torch.Tensor, int] | None = None,
    ) -> torch.Tensor:
        """Attention of the step's rows ``query[N, Hkv, G, D]`` over the copies
        ``keys_t[R, Hkv, D, cap]`` and ``values[R, Hkv, cap, D]``: slot ``s`` (``s < B``,
        ``B = len(lens)``, ``R >= B``) is step row ``slot_rows[s]`` (default: ``s``) and
        sees its first ``lens[s]`` keys (int64, each in ``1..cap``). ``new = (key, value,
        carried)``: first write each of the slots below ``carried`` its row's new
        ``key``/``value`` (``[N, Hkv, D]``) at key ``lens[s] - 1``. Each tensor's rows may
        be strided, each row contiguous. Returns a new ``[N, Hkv, G, D]`` tensor whose
        rows not in ``slot_rows`` are unset."""
        n, hkv, g, d = query.shape
        b = lens.shape[0]
        cap = values.shape[2]
        query = _rows_contiguous(query)
        if slot_rows is None:
            slot_rows = torch.arange(b, dtype=torch.int64)
        key = value = query
        carried = 0
        if new is not None:
            key, value, carried = _rows_contiguous(new[0]), _rows_contiguous(new[1]), new[2]
        threads = torch.get_num_threads() if self.parallel else 1
        need = threads * g * (cap + LANES)
        if self._scratch.numel() < need:
            self._scratch = torch.empty(need, dtype=torch.float32)
        out = torch.empty((n, hkv, g, d), dtype=torch.float32)
        self._fn(
            query.data_ptr(),
            query.stride(0),
            slot_rows.data_ptr(),
            key.data_ptr(),
            key.stride(0),
            value.data_ptr(),
            value.stride(0),
            carried,
            keys_t.data_ptr(),
            values.data_ptr(),
            out.data_ptr(),
            out.stride(0),
            lens.data_ptr(),
            b,
            hkv,
            g,
            d,
            cap,
            scale,
            self._scratch.data_ptr(),
            threads,
        )
        return out

    def read_rows(
        self,
        kv_layer: torch.Tensor,
        tables: torch.Tensor,
        lens: torch.Tensor,
        first: int,
        keys_t: torch.Tensor,
        values: torch.Tensor,
    ) -> None:
        """Slots ``first..first+n-1`` of the copies read from the pool layer
        ``kv_layer[2, blocks, bs, Hkv, D]`` (contiguous): slot ``first + i`` gets the
        first ``lens[i]`` keys of the sequence with block table ``tables[i]`` (int64,
        contiguous, no hole below its length)."""
        _, _, bs, hkv, d = kv_layer.shape
        n, width = tables.shape
        self._read(
            kv_layer[0].data_ptr(),
            kv_layer[1].data_ptr(),
            tables.data_ptr(),
            width,
            lens.data_ptr(),
            n,
            first,
            bs,
            hkv,
            d,
            values.shape[2],
            keys_t.data_ptr(),
            values.data_ptr(),
        )

    def move_rows(
        self,
        dst: torch.Tensor,
        src: torch.Tensor,
        lens: torch.Tensor,
        keys_t: torch.Tensor,
        values: torch.Tensor,
    ) -> None:
        """Slot ``dst[i]`` of the copies gets slot ``src[i]``'s first ``lens[i]`` keys
        (int64 tensors; no slot both a source and a destination)."""
        _, hkv, cap, d = values.shape
        self._move(
            dst.data_ptr(),
            src.data_ptr(),
            lens.data_ptr(),
            dst.shape[0],
            hkv,
            d,
            cap,
            keys_t.data_ptr(),
            values.data_ptr(),
        )


def _rows_contiguous(x: torch.Tensor) -> torch.Tensor:
    """``x`` with each row (all but the first dimension) contiguous; copied only if not."""
    expected, size = [], 1
    for dim in reversed(x.shape[1:]):
        expected.append(size)
        size *= dim
    return x if list(x.stride()[1:]) == expected[::-1] else x.contiguous()


_state: dict[str, object] = {}


def supports(query: torch.Tensor, hkv: int, dtype: torch.dtype) -> bool:
    """Whether the kernel takes a decode call of ``query[B, Hq, D]`` over copies of
    ``dtype`` (float32 on a CPU; ``D`` a multiple of 16 up to 256; at most 8 query heads
    per KV head) and is available (built with OpenMP, or torch on one thread)."""
    _, hq, d = query.shape
    if not (
        query.device.type == "cpu"
        and query.dtype == dtype == torch.float32
        and d % LANES == 0
        and d <= MAX_HEAD_DIM
        and hq % hkv == 0
        and hq // hkv <= MAX_GROUP
    ):
        return False
    found = kernel()
    return found is not None and (found.parallel or torch.get_num_threads() == 1)


def kernel() -> DecodeKernel | None:
    """The kernel, built and loaded on the first call; None when it is switched off or
    cannot be built here (see :func:`unavailable_reason`)."""
    if "kernel" in _state:
        return _state["kernel"]  # type: ignore[return-value]
    loaded: DecodeKernel | None = None
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "off", "false", "no"):
        _state["reason"] = f"{ENV_SWITCH} is off"
    else:
        try:
            loaded = DecodeKernel(_build())
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            _state["reason"] = f"the CPU decode kernel could not be built: {exc}"
    _state["kernel"] = loaded
    return loaded


@contextlib.contextmanager
def switched_off() -> Iterator[None]:
    """Within the block, :func:`kernel` is None (the kept copies take torch's kernel): for
    measuring the kernel against torch's in one process."""
    found = kernel()
    _state["kernel"] = None
    try:
        yield
    finally:
        _state["kernel"] = found


def unavailable_reason() -> str | None:
    """Why :func:`kernel` is None (None when it is loaded or not yet tried)."""
    return _state.get("reason")  # type: ignore[return-value]


def _build() -> Path:
    """The kernel's shared library, built with OpenMP if the compiler can, else without."""
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise RuntimeError("no C++ compiler (g++, c++ or $CXX) on PATH")
    try:
        return _build_with(compiler, (*FLAGS, "-fopenmp"))
    except RuntimeError:
        return _build_with(compiler, FLAGS)


def _build_with(compiler: str, flags: tuple[str, ...]) -> Path:
    source = SOURCE.read_bytes()
    version = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    key = hashlib.sha256(
        b"\0".join([source, " ".join(flags).encode(), version.encode(), _cpu_id().encode()])
    ).hexdigest()[:16]
    cache = Path(os.environ.get(ENV_CACHE) or _default_cache())
    target = cache / f"cpu_decode_attention-{key}.so"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
    os.close(fd)
    try:
        done = subprocess.run(
            [compiler, *flags, "-o", tmp, str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{compiler} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arbiter-engine" / "kernels"


def _cpu_id() -> str:
    """What ``-march=native`` depends on: the CPU's model and feature flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() + platform.machine()
    keep = [line for line in text.splitlines() if line.startswith(("model name", "flags"))]
    return "\n".join(sorted(set(keep)))
