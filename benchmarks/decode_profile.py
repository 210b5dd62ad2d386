"""Where a CPU decode step's time goes, engine against transformers (``bench_engine.py
--profile``): ATen ops per decode step and their self CPU time under the torch profiler.

Each side generates ``1 + steps`` tokens and 1 token under the profiler; the difference,
divided by ``steps``, is one decode step (prefill and set-up cancel). The profiler adds a
few microseconds to every op, so the times are inflated for the small ops; the op counts
are exact.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.profiler import ProfilerActivity, profile

Stats = dict[str, tuple[float, float]]  # op -> (calls per step, self CPU us per step)


def per_step(run: Callable[[int], object], steps: int) -> Stats:
    """Ops of one decode step of ``run(n)`` (generates ``n`` tokens), as described above."""
    run(2)  # warm-up
    seen: dict[int, dict[str, tuple[int, float]]] = {}
    for n in (1, 1 + steps):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run(n)
        seen[n] = {e.key: (e.count, e.self_cpu_time_total) for e in prof.key_averages()}
    out: Stats = {}
    for key in set(seen[1]) | set(seen[1 + steps]):
        c1, t1 = seen[1].get(key, (0, 0.0))
        c2, t2 = seen[1 + steps].get(key, (0, 0.0))
        if c2 - c1 > 0:
            out[key] = ((c2 - c1) / steps, (t2 - t1) / steps)
    return out


def table(ours: Stats, theirs: Stats, rows: int = 14) -> str:
    """The two sides' op counts and self times per step, the costliest ops first."""
    lines = [
        f"{'':>4}{'op':<48} {'engine calls':>12} {'us':>8} {'transformers calls':>18} {'us':>8}",
        f"{'':>4}{'all ops':<48} {sum(c for c, _ in ours.values()):>12.0f}"
        f" {sum(t for _, t in ours.values()):>8.0f}"
        f" {sum(c for c, _ in theirs.values()):>18.0f} {sum(t for _, t in theirs.values()):>8.0f}",
    ]
    keys = sorted(
        set(ours) | set(theirs),
        key=lambda k: -max(ours.get(k, (0, 0.0))[1], theirs.get(k, (0, 0.0))[1]),
    )
    for key in keys[:rows]:
        (c1, t1), (c2, t2) = ours.get(key, (0, 0.0)), theirs.get(key, (0, 0.0))
        name = key.removeprefix("aten::")[:48]
        lines.append(f"{'':>4}{name:<48} {c1:>12.1f} {t1:>8.0f} {c2:>18.1f} {t2:>8.0f}")
    return "\n".join(lines)
