"""TTFT of aggregated serving, two models against NVIDIA's shipped measurements, side by side.

The measurements: `aiconfigurator_core/systems/silicon_sample.csv` (aiconfigurator-core 0.12.0,
5,222 rows: the deployed layout, batch = concurrency per attention-DP rank, ISL/OSL, measured
TTFT and TPOT). The rows used: aggregated mode, H100 / H200 / B200, the five models of the
plan study (Qwen3-32B, Llama-3.1-70B, DeepSeek-V3, gpt-oss-120b, Qwen3-235B-A22B-FP8); per
(engine, GPU, model) stratum up to `--per-stratum` rows spread evenly over the stratum sorted
by (ISL, OSL, batch, tp), every row outside that sample with `--rest`, or all with `--all`.
Both models price every row with the same oracle model (the row's layout and quant modes, the
latest database, SILICON mode: what NVIDIA's
`tools/accuracy_regression_testing/predict_silicon_sample.py` asks `cli_estimate` for):

- **factor**: AIConfigurator's own TTFT (`run_agg`): one prompt's prefill time x its fixed
  queueing factor.
- **steploop**: `arbiter/plan/steploop.py` over a closed loop of `batch` clients, 2 warm-up
  requests each and then `--rounds` measured (AIConfigurator's own benchmark: 50; the warm-up
  is modelled as the start of the same loop), the engine's policy, each step priced by the
  same oracle model (`arbiter/plan/stepprice.py`).

Each model at two token budgets, since the sample does not record the deployed one: ISL
(`cli_estimate`'s default `ctx_tokens`, what NVIDIA's harness prices with) and the engine's
default ("deployed"): TensorRT-LLM `roundup(batch + ISL + 500, 32)` unchunked (the agg rule
of AIConfigurator 0.12.0's generator, `generator/rule_plugin/trtllm.rule`, read for the plan
study), vLLM 8192 chunked (`vllm/engine/arg_utils.py`, `get_batch_defaults`: 8192 for the API
server on GPUs with >= 70 GiB), SGLang `chunked_prefill_size` 8192 on H100/H200 and 16384 on
B200 (`python/sglang/srt/server_args.py`, by GPU memory).

Error per row: |predicted - measured| / measured; per engine the median and the mean (MAPE),
and the signed median. Rows the oracle cannot price (no data, OOM) are counted apart.

    PYTHONPATH=. python benchmarks/bench_ttft.py [--per-stratum 8 [--rest] | --all]
        [--rounds 50] [--warmup-rounds 2] [--budget isl|deployed|both]
        [--start burst|steady] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = (
    "Qwen/Qwen3-32B",
    "meta-llama/Llama-3.1-70B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-120b",
    "Qwen/Qwen3-235B-A22B-FP8",
)
SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm")
# the sample's model name -> the oracle's bundled config of the same architecture (the oracle
# fetches any other name from Hugging Face, which this machine cannot reach)
ORACLE_NAME = {"meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B"}
ENGINES = ("trtllm", "vllm", "sglang")


def sample_rows(per_stratum: int | None, rest: bool = False) -> list[dict[str, str]]:
    """The stratified sample (`per_stratum` rows a stratum; None: all rows), or with `rest`
    every row outside it (a held-out set for a choice made on the sample)."""
    import aiconfigurator_core

    path = Path(aiconfigurator_core.__file__).parent / "systems" / "silicon_sample.csv"
    with path.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["mode"] == "agg"
            and r["system"] in SYSTEMS
            and r["model_path"] in MODELS
            and r["silicon_ttft_ms"]
        ]
    strata: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for r in rows:
        strata.setdefault((r["backend"], r["system"], r["model_path"]), []).append(r)
    chosen: list[dict[str, str]] = []
    for key in sorted(strata):
        group = sorted(
            strata[key],
            key=lambda r: (
                int(r["isl"]),
                int(r["osl"]),
                _int(r["batch_size"]),
                _int(r["tp_size"]),
                r["id"],
            ),
        )
        if per_stratum is None or len(group) <= per_stratum:
            chosen += group
        else:
            step = len(group) / per_stratum
            chosen += [group[int(i * step + step / 2)] for i in range(per_stratum)]
    if rest:
        ids = {r["id"] for r in chosen}
        return [r for key in sorted(strata) for r in strata[key] if r["id"] not in ids]
    return chosen


def _int(text: str | None, default: int = 1) -> int:
    return int(float(text)) if text not in (None, "") else default


class Sessions:
    """One oracle model per (system, engine, model, layout, quant modes), as `cli_estimate`
    builds it for an aggregated row; databases loaded once per (system, engine)."""

    def __init__(self) -> None:
        from arbiter.plan.oracle import sdk

        self.api = sdk()
        self.dbs: dict[tuple[str, str], Any] = {}
        self.models: dict[tuple, tuple[Any, Any]] = {}
        self.load_s = 0.0

    def db(self, system: str, engine: str) -> Any:
        if (system, engine) not in self.dbs:
            started = time.perf_counter()
            version = self.api["latest"](system=system, backend=engine)
            self.dbs[system, engine] = self.api["get_database_view"](
                system, engine, version, allow_missing_data=False, database_mode="SILICON"
            )
            self.load_s += time.perf_counter() - started
        return self.dbs[system, engine]

    def get(self, row: dict[str, str]) -> tuple[Any, Any, Any]:
        from aiconfigurator_core.sdk.config import ModelConfig
        from aiconfigurator_core.sdk.models.helpers import (
            check_is_moe,
            resolve_dsv4_moe_arch,
            resolve_nvfp4_for_system,
        )

        system, engine = row["system"], row["backend"]
        model_path = ORACLE_NAME.get(row["model_path"], row["model_path"])
        tp, pp, dp = _int(row["tp_size"]), _int(row["pp_size"]), _int(row["attention_dp_size"])
        moe_tp = _int(row["moe_tp_size"], 0) or None
        moe_ep = _int(row["moe_ep_size"], 0) or None
        gemm, moe_q = row["gemm_quant_mode"] or None, row["moe_quant_mode"] or None
        key = (system, engine, model_path, tp, pp, dp, moe_tp, moe_ep, gemm, moe_q)
        db = self.db(system, engine)
        if key not in self.models:
            if check_is_moe(model_path):
                cfg = ModelConfig(
                    tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp, moe_ep_size=moe_ep
                )
                moe_tp, moe_ep = cfg.resolve_moe_parallelism()
            mc = self.api["build_model_config"](tp, pp, dp, moe_tp, moe_ep, gemm, None, None, moe_q)
            self.api["resolve_fmha"](mc, model_path, db, engine, is_context_role=True)
            resolve_dsv4_moe_arch(mc, model_path, system_name=system, backend_name=engine)
            resolve_nvfp4_for_system(mc, system, model_path)
            model = self.api["get_model"](model_path, mc, engine)
            self.models[key] = (model, self.api["get_backend"](engine))
        model, backend = self.models[key]
        return model, backend, db


def deployed_budget(engine: str, system: str, batch: int, isl: int) -> int:
    """The token budget of the engine's default deployment (module doc, with sources)."""
    if engine == "trtllm":
        return -(-(batch + isl + 500) // 32) * 32
    if engine == "sglang" and system == "b200_sxm":
        return 16384
    return 8192


def predict(
    sessions: Sessions,
    row: dict[str, str],
    rounds: int,
    budgets: list[str],
    start: str,
    warmup: int = 2,
) -> dict[str, Any]:
    from arbiter.plan.stepprice import StepPricer, steploop_point

    model, backend, db = sessions.get(row)
    isl, osl, batch = int(row["isl"]), int(row["osl"]), _int(row["batch_size"])
    runtime = sessions.api["RuntimeConfig"](isl=isl, osl=osl, batch_size=batch)
    summary = backend.run_agg(model, db, runtime, ctx_tokens=isl)
    if summary.check_oom():
        raise RuntimeError("OOM under the oracle")
    out: dict[str, Any] = {"factor_tpot": float(summary.get_result_dict()["tpot"])}
    pricer = StepPricer(model, backend, db, isl, osl)
    for name in budgets:
        budget = (
            isl if name == "isl" else deployed_budget(row["backend"], row["system"], batch, isl)
        )
        factor = backend.run_agg(model, db, runtime, ctx_tokens=budget)
        out[f"factor_{name}"] = float(factor.get_result_dict()["ttft"])
        chunked = None if name == "deployed" else True
        loop = steploop_point(
            pricer,
            row["backend"],
            batch,
            budget,
            rounds=rounds,
            warmup_rounds=warmup,
            chunked=chunked,
            start=start,
        )
        out[f"steploop_{name}"] = loop.ttft_ms
        out[f"steploop_{name}_tpot"] = loop.tpot_ms
    return out


def errors(pred: list[float], meas: list[float]) -> dict[str, float]:
    ape = [abs(p - m) / m for p, m in zip(pred, meas, strict=True)]
    signed = [(p - m) / m for p, m in zip(pred, meas, strict=True)]
    return {
        "n": len(ape),
        "median": statistics.median(ape) * 100,
        "mape": statistics.fmean(ape) * 100,
        "signed_median": statistics.median(signed) * 100,
        "within_20": sum(a <= 0.2 for a in ape) / len(ape) * 100,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-stratum", type=int, default=8)
    parser.add_argument("--all", action="store_true", help="every predictable row")
    parser.add_argument("--rest", action="store_true", help="the rows outside the sample")
    parser.add_argument(
        "--rounds", type=int, default=50, help="measured requests per client (after the warm-up)"
    )
    parser.add_argument("--warmup-rounds", type=int, default=2, help="warm-up requests per client")
    parser.add_argument("--budget", choices=("deployed", "isl", "both"), default="both")
    parser.add_argument("--start", choices=("burst", "steady"), default="burst")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    for name in ("aiconfigurator_core", "aiconfigurator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    budgets = ["isl", "deployed"] if args.budget == "both" else [args.budget]
    started = time.perf_counter()
    rows = sample_rows(None if args.all else args.per_stratum, rest=args.rest)
    sessions = Sessions()
    results, refused = [], []
    for row in rows:
        try:
            pred = predict(sessions, row, args.rounds, budgets, args.start, args.warmup_rounds)
        except Exception as exc:  # the oracle's refusals: no data for the row, OOM
            refused.append({"id": row["id"], "why": str(exc).splitlines()[0][:160]})
            continue
        pred.update(
            id=row["id"],
            engine=row["backend"],
            system=row["system"],
            model=row["model_path"],
            batch=_int(row["batch_size"]),
            isl=int(row["isl"]),
            osl=int(row["osl"]),
            measured=float(row["silicon_ttft_ms"]),
            measured_tpot=float(row["silicon_tpot_ms"] or "nan"),
        )
        results.append(pred)
    models = [f"{m}_{b}" for b in budgets for m in ("factor", "steploop")]
    table: dict[str, dict[str, dict[str, float]]] = {}
    for engine in (*ENGINES, "all"):
        mine = [r for r in results if engine in ("all", r["engine"])]
        if not mine:
            continue
        meas = [r["measured"] for r in mine]
        table[engine] = {m: errors([r[m] for r in mine], meas) for m in models}
        tp = [r for r in mine if math.isfinite(r["measured_tpot"]) and r["measured_tpot"] > 0]
        table[engine]["tpot_factor"] = errors(
            [r["factor_tpot"] for r in tp], [r["measured_tpot"] for r in tp]
        )
        table[engine]["tpot_steploop"] = errors(
            [r[f"steploop_{budgets[0]}_tpot"] for r in tp], [r["measured_tpot"] for r in tp]
        )
    wall = time.perf_counter() - started
    header = (
        "| engine | n | " + " | ".join(f"{m} median / MAPE / signed median" for m in models) + " |"
    )
    print(
        f"TTFT error against silicon_sample.csv ({len(results)} rows priced, "
        f"{len(refused)} refused by the oracle; {args.warmup_rounds} warm-up + {args.rounds}"
        f" measured requests per client, start {args.start})\n"
    )
    print(header)
    print("|" + "---|" * (2 + len(models)))
    for engine, cols in table.items():
        cells = [
            f"{cols[m]['median']:.1f}% / {cols[m]['mape']:.1f}% / {cols[m]['signed_median']:+.1f}%"
            for m in models
        ]
        print(f"| {engine} | {cols[models[0]]['n']} | " + " | ".join(cells) + " |")
    print("\nTPOT (same rows; the step loop's first budget):")
    for engine, cols in table.items():
        f, s = cols["tpot_factor"], cols["tpot_steploop"]
        print(
            f"  {engine}: factor median {f['median']:.1f}% (MAPE {f['mape']:.1f}%), "
            f"steploop median {s['median']:.1f}% (MAPE {s['mape']:.1f}%)"
        )
    print(f"\nwall {wall:.0f} s (database loads {sessions.load_s:.0f} s)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "table": table,
                    "rows": results,
                    "refused": refused,
                    "wall_s": wall,
                    "rounds": args.rounds,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
