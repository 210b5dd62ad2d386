"""What a plan answers: per engine the pick and its runners-up (each a priced, emitted and
checked worker), the lattice's size, the refused layouts, where arbiter's memory model and
the oracle disagree, the oracle's version against the profile's, and, when nothing meets the
targets, why not and what would (`WhyNot`). `to_json` is the one JSON shape (CLI, service)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .emit import Worker
from .oracle import Priced
from .table import Refusal


@dataclass
class Point:
    """A planned deployment: `replicas` copies of one worker, priced, emitted, checked."""

    worker: Worker
    priced: Priced
    config: dict[str, Any]
    accepted: bool  # `arbiter check` of `config` for the engine's profile
    replicas: int
    source_mix: dict[str, float]
    kv_need_blocks: int
    kv_blocks: int
    weights_gib: float
    memory_budget_gib: float

    @property
    def memory_agrees(self) -> bool:
        oracle_fits = not (self.priced.oracle_oom or self.priced.oracle_kv_oom)
        return oracle_fits == (self.kv_need_blocks <= self.kv_blocks)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_per_second_per_gpu": round(self.priced.tokens_per_second_per_gpu, 3),
            "tokens_per_second_per_user": round(self.priced.tokens_per_second_per_user, 3),
            "ttft_ms": round(self.priced.ttft_ms, 3),
            "tpot_ms": round(self.priced.tpot_ms, 3),
            "layout": self.worker.layout.to_json(),
            "replicas": self.replicas,
            "gpus": self.replicas * self.worker.layout.gpus,
            "workers": [
                {
                    "role": "aggregated",
                    "count": self.replicas,
                    **self.worker.to_json(),
                    "config": self.config,
                    "arbiter_check": "accepted" if self.accepted else "refused",
                }
            ],
            "oracle": {**self.priced.to_json(), "source_mix": self.source_mix},
            "memory": {
                "arbiter_kv_blocks_needed": self.kv_need_blocks,
                "arbiter_kv_blocks": self.kv_blocks,
                "arbiter_weights_gib": round(self.weights_gib, 2),
                "arbiter_budget_gib": round(self.memory_budget_gib, 2),
                "oracle_memory_gib": round(self.priced.memory_gib, 2),
                "oracle_fits": not (self.priced.oracle_oom or self.priced.oracle_kv_oom),
                "agree": self.memory_agrees,
            },
        }


@dataclass
class Relaxation:
    """One least relaxation that makes the targets feasible, confirmed by the oracle."""

    kind: str  # "ttft", "tpot", "gpus", "checkpoint"
    text: str  # "TTFT >= 412 ms"
    value: float | int | str
    confirmed: Point | None = None
    next_step: str = ""  # the next step down, shown infeasible

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "relaxation": self.text,
            "value": self.value,
            "next_step_infeasible": self.next_step,
            "confirmed": self.confirmed.to_json() if self.confirmed else None,
        }


@dataclass
class WhyNot:
    """Why no configuration meets the targets: the binding constraint with its numbers."""

    binding: list[str]  # "memory", "ttft", "tpot"
    lines: list[str]  # the numbers, one finding a line
    relaxations: list[Relaxation] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "binding": self.binding,
            "findings": self.lines,
            "relaxations": [r.to_json() for r in self.relaxations],
        }


@dataclass
class EnginePlan:
    """The plan of one engine."""

    engine: str
    profile: str
    oracle: dict[str, Any]
    lattice: dict[str, Any]
    pick: Point | None = None
    runners_up: list[Point] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    disagreements: dict[str, Any] = field(default_factory=dict)
    why_not: WhyNot | None = None
    proven_optimal: bool = False
    front: list[tuple[float, float]] = field(default_factory=list)  # (tok/s/user, tok/s/gpu)
    timings: dict[str, float] = field(default_factory=dict)
    table: Any = None  # the priced lattice (`table.Table`), for checks; not in the JSON
    disagg: Any = None  # `disagg.DisaggPlan`: the disaggregated answer, when searched

    @property
    def disagg_pick(self) -> Any:
        return self.disagg.pick if self.disagg is not None else None

    @property
    def best_mode(self) -> str | None:
        """ "aggregated" or "disaggregated": the faster feasible answer (tokens/s/GPU)."""
        agg = self.pick.priced.tokens_per_second_per_gpu if self.pick else None
        dis = self.disagg_pick.tokens_per_second_per_gpu if self.disagg_pick else None
        if agg is None and dis is None:
            return None
        if dis is not None and (agg is None or dis > agg):
            return "disaggregated"
        return "aggregated"

    @property
    def best_figure(self) -> float | None:
        mode = self.best_mode
        if mode is None:
            return None
        if mode == "disaggregated":
            return float(self.disagg_pick.tokens_per_second_per_gpu)
        return float(self.pick.priced.tokens_per_second_per_gpu) if self.pick else None

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "profile": self.profile,
            "feasible": self.pick is not None,
            "proven_optimal": self.proven_optimal,
            "pick": self.pick.to_json() if self.pick else None,
            "best_mode": self.best_mode,
            "disagg": self.disagg.to_json() if self.disagg is not None else None,
            "runners_up": [p.to_json() for p in self.runners_up],
            "lattice": self.lattice,
            "oracle": self.oracle,
            "refused_layouts": [r.to_json() for r in self.refused],
            "memory_disagreements": self.disagreements,
            "why_not": self.why_not.to_json() if self.why_not else None,
            "pareto_front": [
                {
                    "tokens_per_second_per_user": round(u, 3),
                    "tokens_per_second_per_gpu": round(g, 3),
                }
                for u, g in self.front
            ],
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }


@dataclass
class PlanReport:
    """The plan for every engine asked for, and the request it answers."""

    request: dict[str, Any]
    engines: list[EnginePlan]

    @property
    def best(self) -> EnginePlan | None:
        scored = [(e.best_figure, e) for e in self.engines if e.best_figure is not None]
        return max(scored, key=lambda s: s[0])[1] if scored else None

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "request": self.request,
            "best_engine": best.engine if best else None,
            "engines": [e.to_json() for e in self.engines],
            "promise": (
                "optimal under the oracle (AIConfigurator's estimator) on the priced lattice,"
                " every emitted config accepted by arbiter check; the oracle's own error"
                " against measurements is ~26 % (TPOT) and ~41 % (TTFT) median"
            ),
        }
