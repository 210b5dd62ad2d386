"""Disaggregated serving: a pool of prefill workers and a pool of decode workers, each worker
priced on its own phase by the oracle and checked in its own role by the engine's rules,
the pool sizes chosen within the GPU budget.

The model is the oracle's own disaggregated one (aiconfigurator 0.12.0, the `aiconfigurator`
package: `sdk/inference_session.py` `DisaggInferenceSession.run_disagg`, `sdk/picking.py`,
`cli/api.py`), so a disaggregated figure compares with the aggregated ones and with
AIConfigurator's own disaggregated picks under one estimator:

- a prefill worker (layout P, `b` prompts a step, the whole prompts in one step) is priced by
  `run_static` in `static_ctx` mode with its latencies scaled by 1.1
  (`DEFAULT_PREFILL_LATENCY_CORRECTION_SCALE`); its TTFT is 1.8 x that latency (the queueing
  correction of `picking.py`), its rate the oracle's `seq/s`;
- a decode worker (layout D, batch `n`) by `static_gen`, latencies scaled by 1.08
  (`DEFAULT_DECODE_LATENCY_CORRECTION_SCALE`): its TPOT and `seq/s`;
- `x` prefill and `y` decode workers serve min(0.9 x r_P, 0.92 y r_D) requests a second
  (the rate-matching degradations of `picking.py`) on x |P| + y |D| GPUs; tokens/s/GPU = that
  x OSL / GPUs, tokens/s/user = 1000 / TPOT.

For fixed layouts a faster worker never hurts (the targets bound each role alone), so each
layout keeps its fastest admissible row per role, and every (P, D, x, y) within the budget is
enumerated: the optimum over the priced lattice is exact, the order of candidates fixed, the
answer deterministic. The KV transfer between the pools is not priced (as in the oracle).

Each role's config is written with the engine's disaggregation settings (vLLM's NIXL
connector, SGLang `disaggregation-mode`, TensorRT-LLM's cache transceiver, with the overlap
scheduler off on context servers as its disaggregated serving guide requires) and checked
with `arbiter check`; arbiter's memory model bounds each role's batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dialects import DIALECTS
from .emit import Worker, check_worker, worker_config
from .layout import Layout, layouts
from .oracle import Oracle
from .request import PlanRequest
from .table import Memory, _consistent, _is_moe

TTFT_CORRECTION = 1.8  # the oracle's disaggregated TTFT correction (prefill queueing)
PREFILL_SCALE = 1.1  # the oracle's prefill latency correction scale
DECODE_SCALE = 1.08  # the oracle's decode latency correction scale
PREFILL_DERATE = 0.9  # the oracle's rate-matching degradation of the prefill pool
DECODE_DERATE = 0.92  # and of the decode pool
PREFILL_BATCHES = (1, 2, 4, 8)  # prompts per prefill step
ROLES = ("prefill", "decode")


@dataclass(frozen=True)
class RolePoint:
    """One priced worker of a role: its latency (TTFT or TPOT, ms) and requests/s."""

    role: str
    worker: Worker
    latency_ms: float
    rate: float  # requests a second one worker serves
    oracle_memory_gib: float

    def to_json(self) -> dict[str, Any]:
        key = "ttft_ms" if self.role == "prefill" else "tpot_ms"
        return {
            "role": self.role,
            **self.worker.to_json(),
            key: round(self.latency_ms, 3),
            "requests_per_second": round(self.rate, 4),
            "oracle_memory_gib": round(self.oracle_memory_gib, 2),
        }


@dataclass
class DisaggPick:
    """x prefill workers and y decode workers, with the configs each is served with."""

    prefill: RolePoint
    decode: RolePoint
    prefill_workers: int
    decode_workers: int
    osl: int
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        p, d = self.prefill.worker.layout.gpus, self.decode.worker.layout.gpus
        return self.prefill_workers * p + self.decode_workers * d

    @property
    def requests_per_second(self) -> float:
        return min(
            PREFILL_DERATE * self.prefill_workers * self.prefill.rate,
            DECODE_DERATE * self.decode_workers * self.decode.rate,
        )

    @property
    def tokens_per_second_per_gpu(self) -> float:
        return self.requests_per_second * self.osl / self.gpus

    @property
    def ttft_ms(self) -> float:
        return self.prefill.latency_ms

    @property
    def tpot_ms(self) -> float:
        return self.decode.latency_ms

    @property
    def tokens_per_second_per_user(self) -> float:
        return 1000.0 / self.decode.latency_ms

    def to_json(self) -> dict[str, Any]:
        roles = (
            (self.prefill, self.prefill_workers),
            (self.decode, self.decode_workers),
        )
        return {
            "tokens_per_second_per_gpu": round(self.tokens_per_second_per_gpu, 3),
            "tokens_per_second_per_user": round(self.tokens_per_second_per_user, 3),
            "ttft_ms": round(self.ttft_ms, 3),
            "tpot_ms": round(self.tpot_ms, 3),
            "requests_per_second": round(self.requests_per_second, 4),
            "gpus": self.gpus,
            "workers": [
                {
                    **point.to_json(),
                    "count": count,
                    "config": self.configs[point.role],
                    "arbiter_check": "accepted",
                }
                for point, count in roles
            ],
        }


@dataclass
class DisaggPlan:
    """The disaggregated answer of one engine: the pick (or None) and what was searched."""

    pick: DisaggPick | None = None
    priced: dict[str, int] = field(default_factory=lambda: {r: 0 for r in ROLES})
    refused: list[dict[str, Any]] = field(default_factory=list)
    combinations: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "feasible": self.pick is not None,
            "pick": self.pick.to_json() if self.pick else None,
            "priced_points": dict(self.priced),
            "pool_combinations": self.combinations,
            "refused_roles": self.refused,
            "model": (
                f"the oracle's disaggregated model: phases priced apart (latency x"
                f" {PREFILL_SCALE} prefill, x {DECODE_SCALE} decode), TTFT = {TTFT_CORRECTION} x"
                f" prefill latency, pools rate-matched with {PREFILL_DERATE} / {DECODE_DERATE}"
                " derates; KV transfer not priced; optimum exact over the priced lattice"
            ),
        }


def role_config(engine: str, worker: Worker, role: str) -> dict[str, Any]:
    """A worker's config in its role, in the engine's own format (its pack's `plan`)."""
    return DIALECTS.part(engine, "plan").role_config(worker_config(engine, worker), role)


def _role_worker(request: PlanRequest, layout: Layout, role: str, batch: int) -> Worker:
    max_len = request.isl + request.osl
    budget = batch * request.isl if role == "prefill" else max(batch, 2048)
    return Worker(layout, batch, budget, "auto", max_len)


def plan_disagg(request: PlanRequest, engine: str, oracle: Oracle, model_file: Path) -> DisaggPlan:
    """The fastest disaggregated deployment that meets the targets (see the module doc)."""
    started = time.perf_counter()
    out = DisaggPlan()
    moe = _is_moe(model_file)
    lat = request.lattice
    best: dict[str, dict[Layout, RolePoint]] = {r: {} for r in ROLES}
    for layout in layouts(
        engine, request.gpus, moe, max_pp=lat.max_pp, gpus_per_node=request.gpus_per_node
    ):
        for role in ROLES:
            batches = PREFILL_BATCHES if role == "prefill" else lat.batch_values()
            point = _fastest(request, engine, oracle, model_file, layout, role, batches, out)
            if point is not None:
                best[role][layout] = point
    candidates: list[tuple[float, int, tuple[Any, ...], DisaggPick]] = []
    for p_layout, p in sorted(best["prefill"].items()):
        for d_layout, d in sorted(best["decode"].items()):
            for x in range(1, request.gpus // p_layout.gpus + 1):
                room = request.gpus - x * p_layout.gpus
                for y in range(1, room // d_layout.gpus + 1):
                    out.combinations += 1
                    pick = DisaggPick(p, d, x, y, request.osl)
                    floor = request.min_tokens_per_user
                    if floor is not None and pick.tokens_per_second_per_user < floor:
                        continue
                    order = (p_layout, d_layout, x, y)
                    candidates.append((-pick.tokens_per_second_per_gpu, pick.gpus, order, pick))
    candidates.sort(key=lambda c: c[:3])
    for _, _, _, pick in candidates:
        configs = {
            "prefill": role_config(engine, pick.prefill.worker, "prefill"),
            "decode": role_config(engine, pick.decode.worker, "decode"),
        }
        if all(
            check_worker(
                engine, configs[r], model_file, request.device.name, w.layout.gpus
            ).accepted
            for r, w in (("prefill", pick.prefill.worker), ("decode", pick.decode.worker))
        ):
            pick.configs = configs
            out.pick = pick
            break
    out.seconds = time.perf_counter() - started
    return out


def _fastest(
    request: PlanRequest,
    engine: str,
    oracle: Oracle,
    model_file: Path,
    layout: Layout,
    role: str,
    batches: tuple[int, ...],
    out: DisaggPlan,
) -> RolePoint | None:
    """The role's fastest admissible worker on a layout (most requests/s within its target),
    or None; the layout's role config is checked once at its largest batch."""
    ref = _role_worker(request, layout, role, max(batches))
    checked = _consistent(
        check_worker(
            engine,
            role_config(engine, ref, role),
            model_file,
            request.device.name,
            layout.gpus,
        ),
        layout,
    )
    if not checked.accepted:
        out.refused.append({"layout": str(layout), "role": role, "reason": checked.reason})
        return None
    memory = Memory(checked, ref)
    target = request.ttft_ms if role == "prefill" else request.tpot_ms
    factor = request.lattice.latency_cutoff
    cutoff = factor * target if factor is not None else None
    fastest: RolePoint | None = None
    for batch in batches:
        worker = _role_worker(request, layout, role, batch)
        if not memory.fits(batch, worker.budget):
            break  # a larger batch needs more KV and gets less
        scale = PREFILL_SCALE if role == "prefill" else DECODE_SCALE
        row = oracle.static(layout, batch, request.isl, request.osl, role, scale)
        if row is None:
            continue
        out.priced[role] += 1
        latency = row["latency_ms"] * (TTFT_CORRECTION if role == "prefill" else 1.0)
        rate = row["rate"]
        if row["oom"]:
            break
        if latency <= target:
            point = RolePoint(role, worker, latency, rate, row["memory_gib"])
            if fastest is None or point.rate > fastest.rate:
                fastest = point
        elif cutoff is not None and latency > cutoff:
            break  # latency grows with the batch
    return fastest
