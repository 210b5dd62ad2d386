"""The command line's start-up cost: CPU time (user + sys of a child process, median of N)
of `arbiter --help`, `arbiter check` on a shipped vLLM, SGLang and TensorRT-LLM example,
and `arbiter solve` on the built-in scenario.

CPU time, not wall time, so that a loaded machine measures the same work. Each command
runs as `python -m engine.cli ...` (the `arbiter` console script's module) from the
repository root, with its output thrown away; the exit code is checked against the one
the command is known to give, so a broken command cannot pass as a fast one.

Bytecode: an installed package runs from cached bytecode after its first run, so by default
the children write and read it under a temporary `PYTHONPYCACHEPREFIX` (nothing lands in
the repository) and a first, uncounted run of each command warms it. `--cold` measures
with no bytecode cache at all (every module compiled from source on every run), which is
what a shell with PYTHONDONTWRITEBYTECODE=1 gets.

    python benchmarks/bench_cli.py            # 5 runs of each
    python benchmarks/bench_cli.py -n 9 --json

Goals (issue 30): `--help` <= 0.3 s, `check` <= 1.0 s CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    """One command line, the exit code it gives, and its goal in CPU seconds."""

    name: str
    args: tuple[str, ...]
    exit_code: int
    goal_s: float | None


CASES = (
    Case("--help", ("--help",), 0, 0.3),
    Case("check --help", ("check", "--help"), 0, 0.3),
    Case(
        "check vLLM",
        (
            "check",
            "examples/vllm/llama-3.1-8b-h100.yaml",
            "--dialect",
            "vllm",
            "--model",
            "tests/fixtures/models/llama-3.1-8b.json",
            "--device",
            "H100-80GB",
        ),
        0,
        1.0,
    ),
    Case(
        "check SGLang",
        (
            "check",
            "examples/sglang/eagle_chain_h100.yaml",
            "--dialect",
            "sglang",
            "--model",
            "examples/models/llama-3-8b.json",
            "--device",
            "H100-80GB",
        ),
        0,
        1.0,
    ),
    Case(
        "check TensorRT-LLM",
        (
            "check",
            "examples/trtllm/streamingllm.yaml",
            "--model",
            "examples/models/llama-3-8b.json",
            "--device",
            "H100-80GB",
        ),
        0,
        1.0,
    ),
    Case("solve (built-in)", ("solve",), 0, None),
)


def child_env(cache: str | None) -> dict[str, str]:
    """The children's environment: this repository first on the path, no colour, and
    bytecode cached under `cache` (None: no bytecode cache)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def cpu_seconds(args: tuple[str, ...], expected: int, env: dict[str, str]) -> float:
    """Run one child and return its user + sys CPU seconds."""
    child = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if child.returncode != expected:
        raise SystemExit(
            f"arbiter {' '.join(args)}: exit {child.returncode}, expected {expected}\n{stderr}"
        )
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="runs of each command (median)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--cold", action="store_true", help="no bytecode cache (see above)")
    opts = parser.parse_args()
    if opts.n < 1:
        parser.error("-n must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-cli-pycache-") as cache:
        rows = measure(opts.n, child_env(None if opts.cold else cache), warm=not opts.cold)
    if opts.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"bytecode cache: {'none (--cold)' if opts.cold else 'warm'}; median of {opts.n}")
    print(f"{'command':<22} {'median CPU s':>12} {'min':>7} {'goal':>6}")
    for row in rows:
        goal = "" if row["goal_s"] is None else f"{row['goal_s']:.1f}"
        print(f"{row['name']:<22} {row['median_cpu_s']:>12.3f} {row['min_cpu_s']:>7.3f} {goal:>6}")


def measure(n: int, env: dict[str, str], *, warm: bool) -> list[dict[str, object]]:
    """Median and minimum CPU seconds of each case over `n` runs (after one warm-up run
    when `warm`)."""
    rows: list[dict[str, object]] = []
    for case in CASES:
        if warm:
            cpu_seconds(case.args, case.exit_code, env)
        times = [cpu_seconds(case.args, case.exit_code, env) for _ in range(n)]
        rows.append(
            {
                "command": f"arbiter {' '.join(case.args)}",
                "name": case.name,
                "median_cpu_s": round(statistics.median(times), 3),
                "min_cpu_s": round(min(times), 3),
                "goal_s": case.goal_s,
                "runs": n,
                "bytecode_cache": warm,
            }
        )
    return rows


if __name__ == "__main__":
    main()
