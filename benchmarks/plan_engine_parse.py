"""The plan's emitted worker configs through the engines' own configuration code.

`arbiter plan` writes each worker's config in its engine's format (arbiter/plan/emit.py,
disagg.py) and checks it with `arbiter check`. This script feeds the same configs to the
engines themselves, configuration stage only, on this CPU machine:

- vLLM 0.33.0 (`/tmp/v-vllm`): the `vllm serve` argument parser with `--config`,
  `AsyncEngineArgs.from_cli_args`, `create_engine_config` (benchmarks/oracle_vllm.py
  `resolve`, which says what the CPU platform changes and cannot speak for);
- SGLang 0.5.23 (`/tmp/v-sglang`): its `--config` merger and parser, `ServerArgs.
  from_cli_args`, `resolve_once`, `check_server_args` (benchmarks/oracle_sglang.py
  `resolve`, with its CPU patches for the GPU's memory and compute capability);
- TensorRT-LLM: not run. The PyPI releases of `tensorrt-llm` (1.2.0, 1.2.1) are 10 kB
  source stubs that fetch the wheel from pypi.nvidia.com, which this machine cannot
  reach (`pip download --no-deps tensorrt-llm==1.2.0`: "Name or service not known").

For every worker config (the pick, the runners-up, both disaggregated roles) the report
says whether the engine accepts it, which values it rewrites (a field the config sets that
ends with another value), the reason when it refuses, and `arbiter check`'s verdict and
changes on the same config.

    python benchmarks/plan_engine_parse.py                  # plans the scenarios below
    python benchmarks/plan_engine_parse.py --plans a.json   # `arbiter plan --format json` files
    python benchmarks/plan_engine_parse.py --shapes --record   # every layout, recorded
        [--out report.json] [--vllm-python P] [--sglang-python P] [--scenario NAME]

`--record` writes tests/arbiter/plan/records/engine-parse-shapes.json, which the default
test run replays without the engines (the configs emit.py writes today must be the ones
the engines accepted); rerun it when emit.py changes what it writes.

The venvs come from `scripts/engine_venvs.sh /tmp vllm` and `scripts/engine_venvs.sh /tmp
sglang`. The same file runs inside a venv as `--engine-side vllm|sglang` (configs on stdin,
verdicts on stdout, no arbiter import there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHONS = {"vllm": Path("/tmp/v-vllm/bin/python"), "sglang": Path("/tmp/v-sglang/bin/python")}
# the engines whose configuration code runs here (TensorRT-LLM: see the module docstring)
RUNS_HERE = tuple(PYTHONS)
# the engines' releases in the venvs (scripts/engine_venvs.sh)
RELEASES = {"vllm": "0.33.0", "sglang": "0.5.23"}

# The plans: the small scenarios of tests/arbiter/plan (conftest.small_lattice on 2x H200,
# the disaggregated one of test_plan_disagg.py on 4x H200, the MTP one of
# test_plan_speculative.py), and a MoE one for the attention-DP / expert-parallel shapes.
SMALL = {"batches": tuple(range(4, 129, 4)), "budgets": (512, 2048, 4000, 8192), "max_pp": 2}
SCENARIOS: list[dict[str, Any]] = [
    {
        "name": "qwen3-32b-2xh200-agg",
        "args": ("Qwen/Qwen3-32B", "2xH200", 4000, 1000, 2000, 40),
        "lattice": {**SMALL, "disagg": False},
        "kw": {},
    },
    {
        "name": "qwen3-32b-4xh200-disagg",
        "args": ("Qwen/Qwen3-32B", "4xH200", 4000, 1000, 2000, 40),
        "lattice": {"batches": tuple(range(8, 129, 8)), "budgets": (2048, 4000), "max_pp": 1},
        "kw": {"runners_up": 0},
    },
    {
        "name": "qwen3.5-27b-2xh200-mtp",
        "args": ("Qwen/Qwen3.5-27B", "2xH200", 4000, 1000, 2000, 30),
        "lattice": {"batches": tuple(range(8, 65, 8)), "budgets": (2048, 4000), "max_pp": 1},
        "kw": {"runners_up": 2, "nextn": 2, "accept_rate": 0.8},
    },
    {
        "name": "qwen3-235b-a22b-8xh200-moe",
        "args": ("Qwen/Qwen3-235B-A22B", "8xH200", 4000, 1000, 2000, 40),
        "lattice": {"batches": tuple(range(8, 129, 8)), "budgets": (2048, 4000), "max_pp": 1},
        "kw": {"runners_up": 2},
    },
    {
        "name": "qwen3-32b-2xh200-fp8kv",
        "args": ("Qwen/Qwen3-32B", "2xH200", 4000, 1000, 2000, 40),
        "lattice": {**SMALL, "kv_dtypes": ("auto", "fp8"), "disagg": False},
        "kw": {"runners_up": 3},
    },
]


# The shapes batch (`--shapes`): every layout the plan enumerates on 8 GPUs (dense with up
# to 2 pipeline stages, MoE in the engine's attention-DP / MoE-TP / EP shapes), each emitted
# as an aggregated worker and in both disaggregated roles, with the checkpoint's and an FP8
# KV cache, and MTP drafts of depth 1 and 2 on Qwen3.5-27B; a worker of batch 32 (per
# attention-DP rank), a 2048-token budget, ISL + OSL 5000. The plan emits only what
# `arbiter check` accepts, so the shapes it refuses are counted apart.
SHAPE_MODELS = (("Qwen/Qwen3-32B", False), ("Qwen/Qwen3-235B-A22B", True))
MTP_MODEL = "Qwen/Qwen3.5-27B"


def shapes(engine: str) -> list[dict[str, Any]]:
    """The shapes batch's items for one engine (see SHAPE_MODELS)."""
    from arbiter.plan.disagg import role_config  # arbiter's side only
    from arbiter.plan.emit import PROFILES, Worker, worker_config
    from arbiter.plan.layout import Layout, layouts

    def item(model: str, source: str, worker: Worker, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "scenario": f"shapes {model.split('/')[-1]}",
            "engine": engine,
            "profile": PROFILES[engine],
            "source": source,
            "model": model,
            "gpu": "H200",
            "gpus": worker.layout.gpus,
            "config": config,
        }

    out = []
    for model, moe in SHAPE_MODELS:
        for layout in layouts(engine, 8, moe, max_pp=2):
            for kv in ("auto", "fp8"):
                worker = Worker(layout, 32, 2048, kv, 5000)
                name = f"{layout} kv {kv}"
                out.append(item(model, name, worker, worker_config(engine, worker)))
                for role in ("prefill", "decode"):
                    config = role_config(engine, worker, role)
                    out.append(item(model, f"{name} {role}", worker, config))
    for tp in (1, 2):
        for depth in (1, 2):
            worker = Worker(Layout(tp=tp), 32, 2048, "auto", 5000, depth, 1.0)
            out.append(
                item(MTP_MODEL, f"tp{tp} mtp {depth}", worker, worker_config(engine, worker))
            )
    return out


# ---------------------------------------------------------------- arbiter's side


def plan_scenario(scenario: dict[str, Any], engine: str) -> dict[str, Any]:
    """The JSON of `arbiter plan --format json` for one scenario and engine."""
    from arbiter.plan import Lattice, plan  # the plan extra: only on arbiter's side

    model, device, isl, osl, ttft, tpot = scenario["args"]
    lattice = Lattice(**scenario["lattice"])
    report = plan(model, device, isl, osl, ttft, tpot, engine, lattice=lattice, **scenario["kw"])
    return report.to_json()


def emitted(plan_json: dict[str, Any], scenario: str = "") -> list[dict[str, Any]]:
    """Every worker config a plan emits (pick, runners-up, disaggregated roles), with
    what the engine needs to read it: the model, the GPU and the worker's GPU count."""
    request = plan_json["request"]
    gpu = str(request["device"]).split("x", 1)[-1]
    out: list[dict[str, Any]] = []
    for ep in plan_json["engines"]:
        points = [("pick", ep.get("pick"))]
        points += [(f"runner-up {i + 1}", p) for i, p in enumerate(ep.get("runners_up") or [])]
        disagg = (ep.get("disagg") or {}).get("pick")
        points.append(("disagg", disagg))
        for source, point in points:
            for worker in (point or {}).get("workers", []):
                role = worker["role"]
                out.append(
                    {
                        "scenario": scenario,
                        "engine": ep["engine"],
                        "profile": ep["profile"],
                        "source": source if role == "aggregated" else f"{source} {role}",
                        "model": request["model"],
                        "gpu": gpu,
                        "gpus": worker["layout"]["gpus"],
                        "config": worker["config"],
                    }
                )
    return out


def arbiter_verdict(item: dict[str, Any]) -> dict[str, Any]:
    """`arbiter check` of one emitted config for its profile: verdict and changes."""
    from arbiter.application.check import check_verdict  # arbiter's side only
    from arbiter.plan.planner import resolve_model

    _, model_file = resolve_model(item["model"])
    verdict = check_verdict(
        dict(item["config"]),
        item["engine"],
        model=model_file,
        device=item["gpu"],
        gpus=item["gpus"],
        profile=item["profile"],
    )
    return {
        "verdict": verdict.verdict,
        "changes": list(verdict.changes),
        "rules": list(verdict.rules),
    }


def engine_verdicts(engine: str, items: list[dict[str, Any]], python: Path) -> list[dict[str, Any]]:
    """The engine's own verdict on each item, computed in its venv by this file's
    `--engine-side` mode (one process for all of them)."""
    from arbiter.plan.planner import resolve_model  # arbiter's side only

    payload = []
    for item in items:
        _, model_file = resolve_model(item["model"])
        payload.append({**item, "model_config": json.loads(Path(model_file).read_text())})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu"}
    done = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--engine-side", engine],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{engine} side failed ({done.returncode}): {done.stderr[-2000:]}")
    marker = "\n@@verdicts@@\n"  # the engine's own logging may write to stdout first
    return list(json.loads(done.stdout.rsplit(marker, 1)[-1]))


def agree(engine_row: dict[str, Any], arbiter_row: dict[str, Any]) -> bool:
    """Every value the engine rewrites is one `arbiter check` says it changes, to the same
    value: a change line naming the field with "before -> after" ("chunked-prefill-size:
    32000 -> 4000 (...)"); an engine that rewrites nothing agrees."""
    lines = [line.replace("-", "_").replace("_>", "->") for line in arbiter_row["changes"]]
    return all(
        any(
            line.startswith(f"{name}:") and f"{change['before']} -> {change['after']}" in line
            for line in lines
        )
        for name, change in engine_row.get("adjust", {}).items()
    )


def compare(items: list[dict[str, Any]], pythons: dict[str, Path]) -> list[dict[str, Any]]:
    """One row per emitted config: arbiter's verdict beside the engine's."""
    rows = []
    for engine in RUNS_HERE:
        mine = [i for i in items if i["engine"] == engine]
        if not mine:
            continue
        verdicts = engine_verdicts(engine, mine, pythons[engine])
        for item, ours in zip(mine, verdicts, strict=True):
            theirs = arbiter_verdict(item)
            rows.append(
                {
                    **item,
                    "release": RELEASES[engine],
                    "engine_verdict": ours,
                    "accepted": ours["verdict"] != "reject",
                    "rewrites": ours.get("adjust", {}),
                    "arbiter": theirs,
                    "rewrites_agree": agree(ours, theirs),
                }
            )
    rows += [
        {**item, "engine_verdict": None, "accepted": None, "not_run": "no wheel here"}
        for item in items
        if item["engine"] not in RUNS_HERE
    ]
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per engine, over the configs `arbiter check` accepts (all of a plan's): how many,
    how many the engine accepts, rewrites values of, and whose rewrites arbiter names; and
    the configs arbiter refuses (shapes batch), with how many of those the engine refuses."""
    out: dict[str, dict[str, int]] = {}
    keys = ("configs", "accepted", "rewritten", "agree", "arbiter_refused", "both_refuse")
    for row in rows:
        if row.get("accepted") is None:
            continue
        s = out.setdefault(row["engine"], dict.fromkeys(keys, 0))
        if not passes_check(row):
            s["arbiter_refused"] += 1
            s["both_refuse"] += not row["accepted"]
            continue
        s["configs"] += 1
        s["accepted"] += bool(row["accepted"])
        s["rewritten"] += bool(row["rewrites"])
        s["agree"] += bool(row["rewrites_agree"])
    return out


def passes_check(row: dict[str, Any]) -> bool:
    return row["arbiter"]["verdict"] in ("accept", "adjust")


# The shapes batch's record (`--shapes --record`): each config with the engine's verdict and
# rewrites and arbiter's, for tests/arbiter/plan/test_plan_engine_parse.py's replay (the
# configs emit.py writes today are the ones the engines answered on)
RECORD = ROOT / "tests" / "arbiter" / "plan" / "records" / "engine-parse-shapes.json"


def record(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of a shapes run: per row the engine, model, source, config, the
    engine's verdict (message when refused) and rewrites, whether arbiter names those
    rewrites with the same values, arbiter's verdict and rules."""
    return {
        "what": "benchmarks/plan_engine_parse.py --shapes: emitted worker configs through"
        " the engines' own configuration code on a CPU",
        "command": "python benchmarks/plan_engine_parse.py --shapes --record",
        "releases": RELEASES,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "rows": [
            {
                "engine": r["engine"],
                "model": r["model"],
                "source": r["source"],
                "config": r["config"],
                "verdict": r["engine_verdict"]["verdict"],
                "message": r["engine_verdict"].get("message", ""),
                "rewrites": r["rewrites"],
                "rewrites_agree": r["rewrites_agree"],
                "arbiter": r["arbiter"]["verdict"],
                "arbiter_rules": r["arbiter"]["rules"],
            }
            for r in rows
        ],
    }


def write_record(path: Path, rows: list[dict[str, Any]]) -> None:
    """One row a line, so a change to one config is a one-line diff."""
    body = record(rows)
    head = json.dumps({k: v for k, v in body.items() if k != "rows"}, sort_keys=True)[:-1]
    lines = ",\n".join(json.dumps(r, sort_keys=True) for r in body["rows"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{head}, "rows": [\n{lines}\n]}}\n')


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        verdict = row["engine_verdict"] or {}
        what = verdict.get("verdict", "not run")
        detail = verdict.get("message") or (
            ", ".join(f"{k} {v['before']} -> {v['after']}" for k, v in row["rewrites"].items())
            if row.get("rewrites")
            else ""
        )
        arb = row.get("arbiter", {}).get("verdict", "-")
        print(
            f"{row['scenario']:30} {row['engine']:7} {row['source']:22} {what:7} arbiter {arb:7} {detail}"
        )


# ---------------------------------------------------------------- the engine's side


def engine_side(engine: str) -> int:
    """In the engine's venv: read the items, answer the engine's verdict on each."""
    import contextlib
    import importlib
    import io
    import logging

    logging.disable(logging.WARNING)
    items = json.loads(sys.stdin.read())
    sys.path.insert(0, str(HERE))
    import oracle_common  # the engines' shared model folders (benchmarks/)

    noise = io.StringIO()
    with contextlib.redirect_stdout(noise):
        # benchmarks/oracle_vllm.py or oracle_sglang.py, set up as their own main does
        oracle: Any = importlib.import_module(f"oracle_{engine}")
        if engine == "vllm":
            if oracle.oracle_vllm_torchvision.needed():
                oracle.oracle_vllm_torchvision.install()
            oracle._cpu_platform()
        else:
            oracle.install_cpu_shims()
        out = []
        for item in items:
            name = "plan-" + item["model"].replace("/", "--").lower()
            oracle_common.MODELS[name] = item["model_config"]
            if engine == "vllm":
                row = oracle.resolve(dict(item["config"]), model=name)
            else:
                row = oracle.resolve(dict(item["config"]), model=name, gpu=item["gpu"])
            out.append(row)
    sys.stdout.write("\n@@verdicts@@\n" + json.dumps(out, default=str))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-side", choices=RUNS_HERE, help=argparse.SUPPRESS)
    parser.add_argument("--plans", nargs="*", type=Path, help="`arbiter plan --format json` files")
    parser.add_argument("--out", type=Path, default=None, help="the report (JSON)")
    parser.add_argument("--scenario", action="append", help="only these SCENARIOS (by name)")
    parser.add_argument("--shapes", action="store_true", help="the shapes batch, not plans")
    parser.add_argument(
        "--record",
        nargs="?",
        const=RECORD,
        type=Path,
        help=f"with --shapes: write the record (default {RECORD.relative_to(ROOT)})",
    )
    parser.add_argument("--vllm-python", type=Path, default=PYTHONS["vllm"])
    parser.add_argument("--sglang-python", type=Path, default=PYTHONS["sglang"])
    opts = parser.parse_args(argv)
    if opts.engine_side:
        return engine_side(opts.engine_side)
    pythons = {"vllm": opts.vllm_python, "sglang": opts.sglang_python}
    missing = [f"{e}: {p}" for e, p in pythons.items() if not p.exists()]
    if missing:
        print(f"missing venv ({'; '.join(missing)}): run scripts/engine_venvs.sh /tmp vllm|sglang")
        return 2
    started = time.perf_counter()
    items: list[dict[str, Any]] = []
    if opts.shapes:
        for engine in RUNS_HERE:
            items += shapes(engine)
    elif opts.plans:
        for path in opts.plans:
            items += emitted(json.loads(path.read_text()), path.stem)
    else:
        chosen = [s for s in SCENARIOS if not opts.scenario or s["name"] in opts.scenario]
        for scenario in chosen:
            for engine in RUNS_HERE:
                items += emitted(plan_scenario(scenario, engine), scenario["name"])
    rows = compare(items, pythons)
    print_rows(rows)
    totals = summary(rows)
    for engine, s in totals.items():
        print(
            f"{engine} {RELEASES[engine]}: {s['configs']} configs arbiter accepts,"
            f" {s['accepted']} accepted by the engine, {s['rewritten']} with values rewritten,"
            f" {s['agree']} whose rewrites arbiter names; {s['arbiter_refused']} arbiter"
            f" refuses, {s['both_refuse']} of them refused by the engine too"
        )
    print(f"{time.perf_counter() - started:.0f} s")
    if opts.record and opts.shapes:
        write_record(opts.record, rows)
    if opts.out:
        opts.out.write_text(json.dumps({"summary": totals, "rows": rows}, indent=1) + "\n")
    refused = [r for r in rows if r.get("accepted") is False and passes_check(r)]
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
