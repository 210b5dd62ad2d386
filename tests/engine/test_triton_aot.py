"""Every Triton kernel of the engine compiles for NVIDIA GPUs without one
(``benchmarks/triton_aot.py``: the engine's launch wrappers record their launches on CPU
tensors, Triton compiles each for the target with the ``ptxas`` its wheel bundles) and
none spills registers. Triton's interpreter, which runs the kernels in the other tests on
a CPU, accepts code the GPU compiler refuses; this catches that before a GPU run.

A subprocess, since the conftest sets ``TRITON_INTERPRET=1`` for this process and the
interpreter replaces the compiled kernels.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "benchmarks" / "triton_aot.py"


def _nvidia_backend() -> bool:
    try:
        import triton  # noqa: F401
        from triton.backends.nvidia.compiler import get_ptxas

        return Path(get_ptxas(90).path).exists()
    except Exception:  # no Triton, or one without its NVIDIA backend
        return False


pytestmark = pytest.mark.skipif(
    not _nvidia_backend(), reason="needs Triton with its NVIDIA backend (ptxas)"
)


def _compile(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, stated
    proc = subprocess.run(
        [sys.executable, str(TOOL), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _check(out: str, kernels: int, *, spill_bytes: int = 0) -> None:
    """Every launch compiled; none spills more than ``spill_bytes`` (stores) a thread."""
    lines = [line for line in out.splitlines() if line.startswith(("ok ", "FAIL"))]
    assert len(lines) >= kernels, out
    assert all(line.startswith("ok ") for line in lines), out
    for line in lines:
        m = re.search(r"spills\s+(\d+)/(\d+),", line)
        assert m is not None, line  # ptxas reported
        assert int(m.group(1)) <= spill_bytes, line
    assert re.search(r"\b0 failed", out)


def test_every_kernel_compiles_for_sm90_in_bf16_without_spills():
    out = _compile("--arch", "90", "--dtypes", "bf16")
    _check(out, 23)
    for kernel in (
        "paged_decode_grouped_kernel", "paged_decode_kernel", "paged_decode_dot_kernel",
        "paged_prefill_kernel",
        "store_kv_kernel", "paged_decode_rope_store_kernel", "add_rms_norm_kernel",
        "silu_mul_kernel", "rope_kernel", "rope_store_kernel",
    ):  # fmt: skip
        assert kernel in out


@pytest.mark.slow  # ~55 s: every dtype for the H200's sm_90 and the A100's sm_80
@pytest.mark.parametrize(("arch", "launches"), [("90", 60), ("80", 46)])
def test_every_kernel_compiles_in_every_dtype(arch, launches):
    """On sm_80 the fp8-pool launches are left out: the engine keeps fp8 pools off the
    Triton attention kernels there (``triton_paged.supports``)."""
    _check(_compile("--arch", arch), launches)
