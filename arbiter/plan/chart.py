"""The side-by-side chart of `arbiter plan --engine all`: tokens/s/GPU against
tokens/s/user, the Pareto front of each engine's admissible points (those meeting TTFT),
the pick of each engine marked, the TPOT target as a vertical line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..dialects import DIALECTS

OTHER = "#555555"  # an engine whose pack names no colour


def colour(engine: str) -> str:
    """The engine's line colour: its pack's `plan.COLOUR`."""
    entry = DIALECTS.entries.get(engine)
    if entry is None or not entry.plan_profile:
        return OTHER
    return str(getattr(DIALECTS.part(engine, "plan"), "COLOUR", OTHER))


def write_chart(data: dict[str, Any], path: Path) -> Path:
    """Write the chart to `path` (.svg or .png) and return it."""
    import matplotlib  # plotting loads only when a chart is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    fig, ax = plt.subplots(figsize=(7.5, 5))
    for e in data["engines"]:
        line = colour(e["engine"])
        front = e["pareto_front"]
        if front:
            ax.plot(
                [p["tokens_per_second_per_user"] for p in front],
                [p["tokens_per_second_per_gpu"] for p in front],
                "-o",
                markersize=2,
                color=line,
                label=f"{e['engine']} Pareto front",
            )
        if e["pick"]:
            p = e["pick"]
            ax.plot(
                p["tokens_per_second_per_user"],
                p["tokens_per_second_per_gpu"],
                "*",
                markersize=14,
                color=line,
                markeredgecolor="black",
                label=f"{e['engine']} pick ({p['tokens_per_second_per_gpu']:.0f} tok/s/GPU)",
            )
    r = data["request"]
    ax.axvline(1000.0 / r["tpot_ms"], linestyle="--", color="#888888", label="TPOT target")
    ax.set_xlabel("tokens/s/user")
    ax.set_ylabel("tokens/s/GPU")
    ax.set_title(f"{r['model']} on {r['device']}, ISL {r['isl']} / OSL {r['osl']}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
