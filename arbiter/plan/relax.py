"""Why not, and what would: when no lattice point meets the targets, the binding constraint
with its numbers and the least relaxation, each found by re-solving the joint model and
confirmed by re-pricing the point with the oracle.

- memory: no layout's weights fit (arbiter's arithmetic of the largest refused worker), or
  no batch's KV fits; relaxed by more GPUs (whole nodes past one node) or a smaller checkpoint
  the oracle bundles (the model's "-FP8" variant).
- TTFT: the fastest prefill found, with its layout; relaxed to the least TTFT bound (whole
  ms) at which some point also meets TPOT: minimise TTFT under the TPOT bound. That bound
  less 1 ms is infeasible (re-solved to show it).
- TPOT likewise, under the TTFT bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import ArbiterError
from .oracle import bundled_config
from .request import PlanRequest
from .result import Relaxation, WhyNot
from .solve import Targets, best
from .table import Table

MAX_NODES = 8  # the GPU relaxation stops at this many nodes


def why_not(
    request: PlanRequest,
    engine: str,
    model_id: str,
    model_file: Path,
    table: Table,
    picker: Any,
    replan: Callable[..., Any],
) -> WhyNot:
    """The binding constraint and the least relaxations; `replan(request, engine, model_id,
    model_file)` plans again at a larger GPU budget or with another checkpoint."""
    rows = table.rows
    fit = [r for r in rows if r.fits]
    lines: list[str] = []
    binding: list[str] = []
    relaxations: list[Relaxation] = []
    if not fit:
        binding.append("memory")
        lines.append(_memory_line(request, table))
    else:
        ids = picker.layout_ids
        fast_pre = best(rows, Targets(math.inf, math.inf), layout_ids=ids, objective="ttft")
        fast_dec = best(rows, Targets(math.inf, math.inf), layout_ids=ids, objective="tpot")
        pre, dec = rows[fast_pre.index], rows[fast_dec.index]  # type: ignore[index]
        if pre.priced.ttft_ms > request.ttft_ms:
            binding.append("ttft")
        if dec.priced.tpot_ms > request.tpot_ms:
            binding.append("tpot")
        if not binding:
            binding.append("ttft+tpot")  # each alone can be met, not both at once
        lines.append(
            f"fastest prefill found: TTFT {pre.priced.ttft_ms:.1f} ms at {pre.worker.layout}"
            f" batch {pre.worker.batch}, token budget {pre.worker.budget}"
            f" (target {request.ttft_ms:g} ms)"
        )
        lines.append(
            f"fastest decode found: TPOT {dec.priced.tpot_ms:.2f} ms at {dec.worker.layout}"
            f" batch {dec.worker.batch} (target {request.tpot_ms:g} ms)"
        )
        for kind in ("ttft", "tpot"):
            found = _relax_target(request, table, picker, kind)
            if found is not None:
                relaxations.append(found)
    if "memory" in binding or not relaxations:
        relaxations += _relax_gpus(request, engine, model_id, model_file, replan)
    if "memory" in binding:
        relaxations += _relax_checkpoint(request, engine, model_id, replan)
    return WhyNot(binding, lines, relaxations)


def _relax_target(request: PlanRequest, table: Table, picker, kind: str) -> Relaxation | None:
    """The least `kind` bound (whole ms; TPOT in 0.1 ms) at which a point meets the other
    target, confirmed by the oracle, with the next step down shown infeasible."""
    rows, ids = table.rows, picker.layout_ids
    other = (
        Targets(math.inf, request.tpot_ms) if kind == "ttft" else Targets(request.ttft_ms, math.inf)
    )
    least = best(rows, other, layout_ids=ids, objective=kind, accept=picker.accept)
    if least.index is None:
        return None
    figure = getattr(rows[least.index].priced, f"{kind}_ms")
    step = 1.0 if kind == "ttft" else 0.1
    bound = math.ceil(figure / step - 1e-9) * step
    relaxed = _targets(request, kind, bound)
    pick = best(rows, relaxed, layout_ids=ids, accept=picker.accept)
    if pick.index is None:  # pragma: no cover - the least point itself meets `relaxed`
        return None
    point = picker.point(pick.index)
    w = point.worker
    again = picker.oracle.price(
        w.layout, w.batch, w.budget, request.isl, request.osl, kv_dtype=w.kv_dtype
    )
    if again is None or getattr(again, f"{kind}_ms") > bound + 1e-9:
        return None  # the oracle does not confirm it: no relaxation is claimed
    lower = _targets(request, kind, bound - step)
    below = best(rows, lower, layout_ids=ids, accept=picker.accept)
    name = kind.upper()
    shown = f"{bound:.0f} ms" if kind == "ttft" else f"{bound:.1f} ms"
    below_text = f"{bound - step:.0f}" if kind == "ttft" else f"{bound - step:.1f}"
    return Relaxation(
        kind,
        f"{name} >= {shown}",
        round(bound, 3),
        point,
        next_step=(
            f"{name} <= {below_text} ms: infeasible on the lattice"
            if below.index is None
            else f"{name} <= {below_text} ms: feasible (not minimal)"
        ),
    )


def _targets(request: PlanRequest, kind: str, bound: float) -> Targets:
    if kind == "ttft":
        return Targets(bound, request.tpot_ms, request.min_tokens_per_user)
    return Targets(request.ttft_ms, bound, request.min_tokens_per_user)


def gpu_steps(gpus: int, per_node: int) -> list[int]:
    """GPU counts past `gpus`: doubling within a node, then whole nodes."""
    steps: list[int] = []
    g = gpus
    while True:
        g = g * 2 if g < per_node else (g // per_node + 1) * per_node
        if g > per_node * MAX_NODES:
            return steps
        steps.append(g)


def _relax_gpus(
    request: PlanRequest, engine: str, model_id: str, model_file: Path, replan: Callable[..., Any]
) -> list[Relaxation]:
    previous = request.gpus
    for gpus in gpu_steps(request.gpus, request.gpus_per_node):
        bigger = request.with_gpus(gpus)
        try:
            ep = replan(bigger, engine, model_id, model_file)
        except ArbiterError:
            return []
        if ep.pick is not None:
            nodes = -(-gpus // request.gpus_per_node)
            return [
                Relaxation(
                    "gpus",
                    f"{gpus} GPUs ({nodes} node{'s' if nodes > 1 else ''})",
                    gpus,
                    ep.pick,
                    next_step=f"{previous} GPUs: infeasible",
                )
            ]
        previous = gpus
    return []


def _relax_checkpoint(
    request: PlanRequest, engine: str, model_id: str, replan: Callable[..., Any]
) -> list[Relaxation]:
    for variant in (model_id + "-FP8",):
        path = bundled_config(variant)
        if path is None:
            continue
        try:
            ep = replan(request, engine, variant, path)
        except ArbiterError:
            continue
        if ep.pick is not None:
            return [Relaxation("checkpoint", f"an FP8 checkpoint ({variant})", variant, ep.pick)]
    return []


def _memory_line(request: PlanRequest, table: Table) -> str:
    with_numbers = [r for r in table.refused if r.memory]
    if with_numbers:
        widest = max(with_numbers, key=lambda r: r.layout.gpus)
        return (
            f"memory: {request.model} does not fit any worker of up to {request.gpus}"
            f" {request.device.name}: at {widest.layout} {widest.memory}"
        )
    if table.rows:
        r = min(table.rows, key=lambda r: r.kv_need_blocks - r.kv_blocks)
        return (
            f"memory: no batch's KV fits: {r.worker.layout} batch {r.worker.batch} needs"
            f" {r.kv_need_blocks} KV blocks per rank, arbiter's memory model gives"
            f" {r.kv_blocks} (weights {r.weights_gib:.1f} GiB of {r.memory_budget_gib:.1f} GiB)"
        )
    reasons = "; ".join(f"{r.layout}: {r.reason}" for r in table.refused[:3])
    return f"no layout of up to {request.gpus} GPUs is accepted: {reasons}"
