"""`plan()`: the fastest rule-valid configuration that meets an SLA, per engine.

For each engine: price the lattice (`table.build`: the oracle's figures, arbiter's rules and
memory verdict per point), solve the joint CP-SAT model (`solve.best`) for the highest
tokens/s/GPU under the targets, cut and re-solve any pick whose emitted config `arbiter
check` refuses, then the runners-up (the best of each other layout, in order), the Pareto
front, the memory disagreements between arbiter and the oracle, and, when nothing meets the
targets, why not and the least relaxation (`relax.why_not`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .disagg import plan_disagg
from .emit import PROFILES, Worker, check_worker, release, worker_config
from .errors import PlanInputError
from .oracle import Oracle, bundled_config, package_version, sdk
from .request import Lattice, PlanRequest
from .result import EnginePlan, PlanReport, Point
from .solve import Targets, best
from .table import Row, Table, build

_ORACLES: dict[tuple[str, str, str, str], Oracle] = {}


def plan(
    model: str | Path,
    device: str,
    isl: int,
    osl: int,
    ttft: float,
    tpot: float,
    engine: str | tuple[str, ...] = "trtllm",
    *,
    gpus_per_node: int = 8,
    min_tokens_per_user: float | None = None,
    kv_dtypes: tuple[str, ...] = ("auto",),
    nextn: int = 0,
    accept_rate: float | None = None,
    nextn_accept: float | None = None,
    lattice: Lattice | None = None,
    runners_up: int = 3,
    relax: bool = True,
) -> PlanReport:
    """Plan `model` on `device` ("8xH200") for ISL/OSL tokens under TTFT/TPOT (ms), for one
    engine ("trtllm", "vllm", "sglang") or "all". `nextn` > 0 also searches MTP speculative
    decoding up to that many draft tokens a step, priced with `accept_rate` (each draft
    token's acceptance) or `nextn_accept` (accepted tokens a step at depth `nextn`). Raises `PlanExtraMissing` without the
    oracle, `PlanInputError` / `OracleUnavailable` for what it cannot plan."""
    lat = lattice or Lattice(kv_dtypes=tuple(kv_dtypes))
    request = PlanRequest.make(
        model=model,
        device=device,
        isl=isl,
        osl=osl,
        ttft=ttft,
        tpot=tpot,
        engine=engine,
        gpus_per_node=gpus_per_node,
        min_tokens_per_user=min_tokens_per_user,
        nextn=nextn,
        accept_rate=accept_rate,
        nextn_accept=nextn_accept,
        lattice=lat,
    )
    return plan_request(request, runners_up=runners_up, relax=relax)


def plan_request(request: PlanRequest, *, runners_up: int = 3, relax: bool = True) -> PlanReport:
    sdk()  # the extra's absence is reported before any other work
    model_id, model_file = resolve_model(request.model)
    engines = [
        plan_engine(request, e, model_id, model_file, runners_up=runners_up, relax=relax)
        for e in request.engines
    ]
    return PlanReport(_request_json(request, model_id), engines)


def resolve_model(model: str) -> tuple[str, Path]:
    """(what the oracle is given, arbiter's config.json) for a model ID or path."""
    path = Path(model)
    if path.is_dir() and (path / "config.json").is_file():
        return str(path), path / "config.json"
    if path.is_file() and path.name.endswith(".json"):
        return str(path.parent), path
    found = bundled_config(model)
    if found is None:
        raise PlanInputError(
            "model",
            model,
            "a Hugging Face ID whose config.json the oracle bundles (aiconfigurator_core/"
            "model_configs, e.g. Qwen/Qwen3-32B) or a folder with a config.json",
        )
    return model, found


def oracle_for(request: PlanRequest, engine: str, model_id: str) -> Oracle:
    """One oracle per (system, engine, model, mode) per process: the database loads once."""
    key = (request.system, engine, model_id, request.database_mode)
    if key not in _ORACLES:
        _ORACLES[key] = Oracle(
            request.system, engine, model_id, database_mode=request.database_mode
        )
    return _ORACLES[key]


def plan_engine(
    request: PlanRequest,
    engine: str,
    model_id: str,
    model_file: Path,
    *,
    runners_up: int = 3,
    relax: bool = True,
) -> EnginePlan:
    """The plan of one engine (see the module doc)."""
    started = time.perf_counter()
    fresh = (request.system, engine, model_id, request.database_mode) not in _ORACLES
    oracle = oracle_for(request, engine, model_id)
    load_s = oracle.load_s if fresh else 0.0
    calls = oracle.points
    table = build(request, engine, oracle, model_file)
    calls = oracle.points - calls
    build_s = time.perf_counter() - started - load_s
    ep = EnginePlan(
        engine,
        PROFILES[engine],
        _oracle_json(oracle, engine),
        _lattice_json(request, table, oracle),
        refused=list(table.refused),
        table=table,
    )
    picker = Picker(request, engine, oracle, table, model_file)
    targets = Targets(request.ttft_ms, request.tpot_ms, request.min_tokens_per_user)
    solve_started = time.perf_counter()
    solved = best(table.rows, targets, layout_ids=picker.layout_ids, accept=picker.accept)
    ep.proven_optimal = solved.proven
    ep.lattice["oracle_calls"] = calls
    ep.lattice["cuts"] = len(solved.cuts)
    ep.lattice["status"] = solved.status
    if solved.index is not None:
        ep.pick = picker.point(solved.index)
        seen = [picker.layout_ids[solved.index]]
        for _ in range(runners_up):
            nxt = best(
                table.rows,
                targets,
                layout_ids=picker.layout_ids,
                forbid_layouts=seen,
                accept=picker.accept,
            )
            if nxt.index is None:
                break
            ep.runners_up.append(picker.point(nxt.index))
            seen.append(picker.layout_ids[nxt.index])
    ep.timings = {
        "database_load": load_s,
        "lattice": build_s,
        "solve": time.perf_counter() - solve_started,
    }
    if relax and request.lattice.disagg:  # not when a relaxation is only being confirmed
        ep.disagg = plan_disagg(request, engine, oracle, model_file)
        ep.timings["disagg"] = ep.disagg.seconds
    ep.front = pareto(table.rows, request.ttft_ms)
    ep.disagreements = disagreements(table)
    if ep.pick is None and relax:
        from .relax import why_not  # the relaxations re-plan; only an infeasible plan needs them

        ep.why_not = why_not(request, engine, model_id, model_file, table, picker, _replan)
    ep.timings["total"] = time.perf_counter() - started
    return ep


def _replan(request: PlanRequest, engine: str, model_id: str, model_file: Path) -> EnginePlan:
    """A plan without runners-up or relaxations (what a relaxation is confirmed with)."""
    return plan_engine(request, engine, model_id, model_file, runners_up=0, relax=False)


class Picker:
    """Turns table rows into checked, emitted, priced `Point`s (checks cached by row)."""

    def __init__(
        self, request: PlanRequest, engine: str, oracle: Oracle, table: Table, model_file: Path
    ):
        self.request, self.engine, self.oracle, self.table = request, engine, oracle, table
        self.model_file = model_file
        index = {
            layout: i for i, layout in enumerate(sorted({r.worker.layout for r in table.rows}))
        }
        self.layout_ids = [index[r.worker.layout] for r in table.rows]
        self._checked: dict[int, bool] = {}

    def accept(self, i: int) -> bool:
        """`arbiter check` of row i's emitted config (the lazy rule check of a pick)."""
        if i not in self._checked:
            w = self.table.rows[i].worker
            checked = check_worker(
                self.engine,
                worker_config(self.engine, w),
                self.model_file,
                self.request.device.name,
                w.layout.gpus,
            )
            self._checked[i] = checked.accepted
        return self._checked[i]

    def point(self, i: int) -> Point:
        row: Row = self.table.rows[i]
        w: Worker = row.worker
        mix = self.oracle.source_mix(
            w.layout,
            w.batch,
            w.budget,
            self.request.isl,
            self.request.osl,
            kv_dtype=w.kv_dtype,
            nextn=w.nextn,
            nextn_accept=w.draft_accept,
        )
        return Point(
            worker=w,
            priced=row.priced,
            config=worker_config(self.engine, w),
            accepted=self.accept(i),
            replicas=max(1, self.request.gpus // w.layout.gpus),
            source_mix=mix,
            kv_need_blocks=row.kv_need_blocks,
            kv_blocks=row.kv_blocks,
            weights_gib=row.weights_gib,
            memory_budget_gib=row.memory_budget_gib,
        )


def pareto(rows: list[Row], ttft_ms: float) -> list[tuple[float, float]]:
    """(tokens/s/user, tokens/s/GPU) of the admissible rows meeting TTFT that no other row
    beats on both, by rising tokens/s/user."""
    pts = sorted(
        {
            (r.priced.tokens_per_second_per_user, r.priced.tokens_per_second_per_gpu)
            for r in rows
            if r.fits and r.priced.ttft_ms <= ttft_ms
        },
        key=lambda p: (-p[0], -p[1]),
    )
    front: list[tuple[float, float]] = []
    top = -1.0
    for user, gpu in pts:
        if gpu > top:
            front.append((user, gpu))
            top = gpu
    return sorted(front)


def disagreements(table: Table) -> dict[str, Any]:
    """Points where arbiter's memory model and the oracle's disagree on fitting, counted,
    with the first few and both numbers."""
    both = [r for r in table.rows if r.fits == (r.priced.oracle_oom or r.priced.oracle_kv_oom)]
    examples = []
    for r in both[:5]:
        w = r.worker
        examples.append(
            {
                "layout": str(w.layout),
                "batch": w.batch,
                "token_budget": w.budget,
                "arbiter": f"{'fits' if r.fits else 'does not fit'}: {r.kv_need_blocks} KV blocks"
                f" needed, {r.kv_blocks} available per rank (weights {r.weights_gib:.1f} GiB"
                f" of {r.memory_budget_gib:.1f} GiB)",
                "oracle": f"{'does not fit' if (r.priced.oracle_oom or r.priced.oracle_kv_oom) else 'fits'}:"
                f" {r.priced.memory_gib:.1f} GiB per GPU"
                + (" (KV of the batch overflows)" if r.priced.oracle_kv_oom else "")
                + (" (weights and activations overflow)" if r.priced.oracle_oom else ""),
            }
        )
    arbiter_only = sum(1 for r in both if r.fits)
    return {
        "points": len(both),
        "arbiter_fits_oracle_not": arbiter_only,
        "oracle_fits_arbiter_not": len(both) - arbiter_only,
        "examples": examples,
    }


def _oracle_json(oracle: Oracle, engine: str) -> dict[str, Any]:
    return {
        "package": f"aiconfigurator-core {package_version()}",
        "system": oracle.system,
        "database_version": f"{engine} {oracle.version}",
        "database_mode": oracle.database_mode,
        "profile_release": release(engine),
        "version_skew": f"perf tables of {engine} {oracle.version}; rules and option"
        f" spelling of {release(engine)} (profile {PROFILES[engine]})",
    }


def _lattice_json(request: PlanRequest, table: Table, oracle: Oracle) -> dict[str, Any]:
    lat = request.lattice
    return {
        "points": table.size,
        "priced": len(table.rows),
        "admissible": sum(1 for r in table.rows if r.fits),
        "unpriced": table.unpriced,
        "pruned_beyond_memory": table.pruned,
        "cut_beyond_latency": table.cut,
        "latency_cutoff": lat.latency_cutoff,
        "layouts": [str(x) for x in table.layouts],
        "refused_layouts": len(table.refused),
        "refused_points": table.refused_points,
        "fine_points": table.fine_points,
        "refinement": (
            None
            if lat.refine_step is None or lat.refine_step >= lat.budget_step
            else f"per layout, token budgets every {lat.refine_step} (from {lat.min_budget})"
            f" less than {min(lat.budget_step, lat.refine_span)} tokens from its {lat.refine_centres}"
            " best budgets, batches"
            f" within {lat.refine_batches} of theirs"
        ),
        "batches": f"{min(lat.batch_values())}..{max(lat.batch_values())}"
        f" ({len(lat.batch_values())} values)",
        "token_budgets": list(lat.budget_values(request.isl)),
        "kv_dtypes": list(lat.kv_dtypes),
        "draft_depths": [{"draft_tokens": k, "accepted_per_step": a} for k, a in request.drafts()],
    }


def _request_json(request: PlanRequest, model_id: str) -> dict[str, Any]:
    return {
        "model": model_id,
        "device": f"{request.gpus}x{request.device.name}",
        "gpus": request.gpus,
        "nodes": request.nodes,
        "isl": request.isl,
        "osl": request.osl,
        "ttft_ms": request.ttft_ms,
        "tpot_ms": request.tpot_ms,
        "min_tokens_per_user": request.min_tokens_per_user,
        "nextn": request.nextn,
        "accept_rate": request.accept_rate,
        "nextn_accept": request.nextn_accept,
        "engines": list(request.engines),
    }
