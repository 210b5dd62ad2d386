"""`arbiter plan` against AIConfigurator's own search, side by side in one run, both priced
by the same oracle (aiconfigurator-core 0.12.0, SILICON mode).

Per scenario: AIConfigurator's default pick (`cli default`, in process: `build_default_tasks`
and `_execute_and_wrap_result`, what its CLI runs) and its pick with
`--enable-chunked-prefill`; arbiter's pick; each aggregated pick re-priced through arbiter's
oracle adapter (the session path) so the ratio compares like with like; whether each meets
the SLA under the oracle; `arbiter check` of every config arbiter emits; wall time of each
tool with the database load apart. Disaggregated picks: arbiter's (prefill and decode pools,
priced by the oracle's own disaggregated model) and AIConfigurator's with its own figure
(the same model: `tests/arbiter/plan/test_plan_disagg.py` pins arbiter's arithmetic to it);
"ours best" and "AIC best" are the faster of each tool's aggregated and disaggregated picks.

Needs the `aiconfigurator` CLI package (plotting libraries), so run it from a throwaway venv:

    python -m venv /tmp/aic --system-site-packages && /tmp/aic/bin/pip install aiconfigurator==0.12.0
    PYTHONPATH=. /tmp/aic/bin/python benchmarks/bench_plan.py [--only N,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (engine, model, device, isl, osl, ttft ms, tpot ms)
SCENARIOS = [
    ("trtllm", "Qwen/Qwen3-32B", "8xH200", 4000, 1000, 2000, 40),
    ("vllm", "meta-llama/Meta-Llama-3.1-70B", "8xH200", 4000, 1000, 2000, 40),
    ("sglang", "Qwen/Qwen3-32B", "8xB200", 1000, 1000, 2000, 20),
    ("trtllm", "Qwen/Qwen3-32B", "8xH100", 1000, 1000, 1000, 30),
    ("trtllm", "Qwen/Qwen3-235B-A22B", "8xH200", 4000, 1000, 2000, 40),
    # the headroom study's other cases (plan-anchors section 9), same targets as its 4k/1k set
    ("trtllm", "meta-llama/Meta-Llama-3.1-70B", "8xH200", 4000, 1000, 2000, 40),
    ("sglang", "Qwen/Qwen3-32B", "8xH200", 4000, 1000, 2000, 40),
    ("trtllm", "openai/gpt-oss-120b", "8xH200", 4000, 1000, 2000, 40),
    ("trtllm", "meta-llama/Meta-Llama-3.1-70B", "8xH200", 4000, 1000, 300, 10),  # infeasible
]


def aic_search(
    engine: str,
    model: str,
    system: str,
    gpus: int,
    isl: int,
    osl: int,
    ttft: float,
    tpot: float,
    chunked: bool,
) -> dict[str, Any]:
    """AIConfigurator's own search and pick (agg and disagg), with its wall time."""
    from aiconfigurator.cli.api import _execute_and_wrap_result
    from aiconfigurator.cli.main import build_default_tasks

    started = time.perf_counter()
    tasks = build_default_tasks(
        model_path=model,
        total_gpus=gpus,
        system=system,
        backend=engine,
        isl=isl,
        osl=osl,
        ttft=ttft,
        tpot=tpot,
        enable_chunked_prefill=chunked,
    )
    try:
        result = _execute_and_wrap_result(tasks, mode="default", top_n=3)
    except Exception as exc:  # its "no feasible configuration" and kin
        return {
            "wall_s": time.perf_counter() - started,
            "error": f"{type(exc).__name__}: {exc}"[:300],
        }
    wall = time.perf_counter() - started
    out: dict[str, Any] = {"wall_s": wall, "chosen": result.chosen_exp, "picks": {}}
    for exp, frame in result.best_configs.items():
        if frame is None or len(frame) == 0:
            continue
        row = frame.iloc[0].to_dict()
        out["picks"][exp] = {k: _plain(v) for k, v in row.items()}
    return out


def _plain(v: Any) -> Any:
    try:
        return v.item()  # numpy scalars
    except AttributeError:
        return v if isinstance(v, (int, float, str, bool, type(None))) else str(v)


def reprice_agg(
    pick: dict[str, Any], engine: str, model: str, system: str, isl: int, osl: int
) -> dict[str, Any] | None:
    """AIConfigurator's aggregated pick priced through arbiter's oracle adapter."""
    from arbiter.plan.layout import Layout
    from arbiter.plan.oracle import Oracle
    from arbiter.plan.planner import _ORACLES

    def num(key: str, default: int | None = None) -> int | None:
        value = pick.get(key)
        if value is None or value == "None" or (isinstance(value, float) and value != value):
            return default
        return int(value)

    moe_tp, moe_ep = num("moe_tp"), num("moe_ep")
    if (moe_tp, moe_ep) == (1, 1) and (num("dp", 1) or 1) == 1:
        moe_tp = moe_ep = None  # AIConfigurator writes 1 / 1 for a dense model
    layout = Layout(num("tp", 1) or 1, num("pp", 1) or 1, num("dp", 1) or 1, moe_tp, moe_ep)
    key = (system, engine, model, "SILICON")
    oracle = _ORACLES.get(key) or Oracle(system, engine, model)
    batch, budget = num("bs", 1) or 1, num("ctx_tokens", isl) or isl
    priced = oracle.price(layout, batch, budget, isl, osl)
    if priced is None:
        return None
    return {"layout": str(layout), "batch": batch, "budget": budget, **priced.to_json()}


def ours(
    engine: str, model: str, device: str, isl: int, osl: int, ttft: float, tpot: float
) -> dict[str, Any]:
    from arbiter.plan import plan

    started = time.perf_counter()
    report = plan(model, device, isl, osl, ttft, tpot, engine)
    wall = time.perf_counter() - started
    data = report.to_json()["engines"][0]
    points = [p for p in [data["pick"], *data["runners_up"]] if p]
    dis = (data.get("disagg") or {}).get("pick")
    checked = [p["workers"][0]["arbiter_check"] == "accepted" for p in points]
    if dis:
        checked += [w["arbiter_check"] == "accepted" for w in dis["workers"]]
    return {
        "disagg": dis,
        "best_mode": data.get("best_mode"),
        "wall_s": wall,
        "database_load_s": data["timings_s"]["database_load"],
        "pick": data["pick"],
        "proven_optimal": data["proven_optimal"],
        "lattice_points": data["lattice"]["points"],
        "lattice_fine_points": data["lattice"].get("fine_points", 0),
        "pick_at": _where(data["pick"], data["lattice"]),
        "configs_checked": len(checked),
        "configs_accepted": sum(checked),
        "why_not": data["why_not"],
    }


def _where(pick: dict[str, Any] | None, lattice: dict[str, Any]) -> str:
    """ "tp4 b87 t512" for a pick, starred when the denser second lattice holds it (its
    budget not on the first lattice's grid)."""
    if not pick:
        return "-"
    from arbiter.plan.layout import Layout

    w = pick["workers"][0]
    par = w["layout"]
    layout = Layout(par["tp"], par["pp"], par["attention_dp"], par["moe_tp"], par["moe_ep"])
    star = "" if w["token_budget"] in lattice["token_budgets"] else "*"
    return f"{layout} b{w['batch']} t{w['token_budget']}{star}"


def run(
    scenario: tuple, *, chunked: bool = True, reuse: dict[str, Any] | None = None
) -> dict[str, Any]:
    from arbiter.plan.request import PlanRequest

    engine, model, device, isl, osl, ttft, tpot = scenario
    req = PlanRequest.make(
        model=model, device=device, isl=isl, osl=osl, ttft=ttft, tpot=tpot, engine=engine
    )
    row: dict[str, Any] = {
        "scenario": f"{engine} {model} {device} {isl}/{osl} TTFT {ttft} TPOT {tpot}"
    }
    row["ours"] = ours(engine, model, device, isl, osl, ttft, tpot)  # loads the database first
    for name, flag in (
        (("aic_default", False), ("aic_chunked", True)) if chunked else (("aic_default", False),)
    ):
        if reuse and name in reuse.get(row["scenario"], {}):
            row[name] = reuse[row["scenario"]][name]  # an earlier run of the same search
            continue
        found = aic_search(engine, model, req.system, req.gpus, isl, osl, ttft, tpot, flag)
        agg = found.get("picks", {}).get("agg")
        if agg:
            found["agg_repriced"] = reprice_agg(agg, engine, model, req.system, isl, osl)
        row[name] = found
    return row


def _agg(r: dict[str, Any], name: str) -> float | None:
    rep = r.get(name, {}).get("agg_repriced")
    return rep["tokens_per_second_per_gpu"] if rep else None


def _best_own(r: dict[str, Any], name: str) -> str:
    f = r.get(name, {})
    if "error" in f:
        return "none"
    picks = f.get("picks", {})
    chosen = f.get("chosen", "")
    p = picks.get(chosen) or next(iter(picks.values()), {})
    value = p.get("tokens/s/gpu") or p.get("tokens/s/gpu_cluster")
    return f"{chosen} {value:.1f}" if isinstance(value, (int, float)) else str(chosen)


def _aic_disagg(r: dict[str, Any]) -> float | None:
    p = r.get("aic_default", {}).get("picks", {}).get("disagg") or {}
    value = p.get("tokens/s/gpu")
    return float(value) if isinstance(value, (int, float)) else None


def summarise(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| scenario | ours agg | our agg pick | ours disagg | ours best | AIC agg (repriced)"
        " | AIC chunked agg | AIC disagg (own) | gain vs AIC default agg | gain vs chunked"
        " | gain vs AIC best | SLA ours | checks | lattice (dense) | ours s (db) | AIC s /"
        " chunked s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    gains, best_gains = [], []
    for r in rows:
        o = r["ours"]
        agg_thr = o["pick"]["tokens_per_second_per_gpu"] if o["pick"] else None
        dis = o.get("disagg")
        dis_thr = dis["tokens_per_second_per_gpu"] if dis else None
        ours_thr = max((x for x in (agg_thr, dis_thr) if x), default=None)
        d, c, ad = _agg(r, "aic_default"), _agg(r, "aic_chunked"), _aic_disagg(r)
        aic_best = max((x for x in (d, ad) if x), default=None)
        gd = f"{ours_thr / d - 1:+.1%}" if ours_thr and d else "-"
        gc = f"{ours_thr / c - 1:+.1%}" if ours_thr and c else "-"
        gb = f"{ours_thr / aic_best - 1:+.1%}" if ours_thr and aic_best else "-"
        if ours_thr and d:
            gains.append(ours_thr / d - 1)
        if ours_thr and aic_best:
            best_gains.append(ours_thr / aic_best - 1)
        ttft = float(r["scenario"].split("TTFT ")[1].split()[0])
        tpot = float(r["scenario"].split("TPOT ")[1])
        sla = "-"
        met = [p for p in (o["pick"], dis) if p]
        if met:
            ok = all(p["ttft_ms"] <= ttft and p["tpot_ms"] <= tpot for p in met)
            sla = "met" if ok else "MISSED"
        elif o["why_not"]:
            sla = "infeasible: " + "; ".join(x["relaxation"] for x in o["why_not"]["relaxations"])
        lines.append(
            f"| {r['scenario']} | {agg_thr or 'none'} | {o.get('pick_at', '-')}"
            f" | {dis_thr or '-'} | {ours_thr or 'none'}"
            f" | {d or '-'} | {c or '-'} | {ad or '-'} | {gd} | {gc} | {gb} | {sla} |"
            f" {o['configs_accepted']}/{o['configs_checked']} |"
            f" {o['lattice_points']} ({o.get('lattice_fine_points', 0)}) |"
            f" {o['wall_s']:.0f} ({o['database_load_s']:.0f}) |"
            f" {r.get('aic_default', {}).get('wall_s', 0):.0f} /"
            f" {r.get('aic_chunked', {}).get('wall_s', 0):.0f} |"
        )
    if gains:
        lines.append("")
        lines.append(
            f"median gain over AIC's default agg pick: {statistics.median(gains):+.1%}"
            f" (n={len(gains)}); over AIC's best (agg or disagg):"
            f" {statistics.median(best_gains):+.1%} (n={len(best_gains)})"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated scenario indices")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--no-chunked", action="store_true", help="skip AIC's chunked run")
    parser.add_argument("--reuse-aic", type=Path, help="AIC's results from an earlier --json")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    picked = [SCENARIOS[int(i)] for i in args.only.split(",")] if args.only else SCENARIOS
    reuse = (
        {r["scenario"]: r for r in json.loads(args.reuse_aic.read_text())}
        if args.reuse_aic
        else None
    )
    rows = []
    for scenario in picked:
        rows.append(run(scenario, chunked=not args.no_chunked, reuse=reuse))
        print(json.dumps(rows[-1], default=str)[:2000], flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1, default=str))
    print(summarise(rows))


if __name__ == "__main__":
    main()
