"""The plan's emitted worker configs through the engines' own configuration code: vLLM
0.33.0's `vllm serve` parser and `create_engine_config`, SGLang 0.5.23's parser,
`resolve_once` and `check_server_args`, each in its throwaway venv
(benchmarks/plan_engine_parse.py). Every config of the small plans (pick, runners-up,
both disaggregated roles, MTP drafts, MoE attention-DP) is accepted, and the engine
rewrites no value except the ones `arbiter check` says it changes, to the same value.

The engine tests are slow and skip where a venv is absent (CI builds none; docs/plan.md
says so). What the default run keeps is a replay: the configs emit.py writes today must be
those of the recorded shapes batch (tests/arbiter/plan/records/engine-parse-shapes.json),
which the engines accepted.
TensorRT-LLM's wheel cannot be installed here, so its YAML is not run (the script's
docstring says why)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from .conftest import needs_oracle

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "plan_engine_parse.py"


def _script():
    spec = importlib.util.spec_from_file_location("plan_engine_parse", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


parse = _script()
_ROWS: dict[str, list] = {}


def _rows(engine: str) -> list[dict]:
    """The compared rows of every scenario for one engine (planned once per session)."""
    if engine not in _ROWS:
        items = []
        for scenario in parse.SCENARIOS:
            items += parse.emitted(parse.plan_scenario(scenario, engine), scenario["name"])
        _ROWS[engine] = parse.compare(items, parse.PYTHONS)
    return _ROWS[engine]


def _needs_venv(engine: str):
    python = parse.PYTHONS[engine]
    return pytest.mark.skipif(
        not python.exists(),
        reason=f"{engine}'s venv {python} is absent: build it with"
        f" `scripts/engine_venvs.sh /tmp {engine}` (benchmarks/plan_engine_parse.py runs it)",
    )


ENGINES = [pytest.param(e, marks=_needs_venv(e)) for e in parse.RUNS_HERE]


@pytest.mark.slow
@needs_oracle
@pytest.mark.parametrize("engine", ENGINES)
def test_every_emitted_config_is_accepted_by_the_engines_own_code(engine):
    rows = _rows(engine)
    # the scenarios reach every kind of worker the plan emits
    sources = {r["source"] for r in rows}
    assert {"pick", "runner-up 1", "disagg prefill", "disagg decode"} <= sources, sources
    assert {r["scenario"] for r in rows} == {s["name"] for s in parse.SCENARIOS}
    refused = [(r["scenario"], r["source"], r["engine_verdict"]) for r in rows if not r["accepted"]]
    assert refused == []
    for row in rows:
        assert row["arbiter"]["verdict"] in ("accept", "adjust"), row["arbiter"]
        # a rewrite is one arbiter predicts, to the same value
        assert row["rewrites_agree"], (row["scenario"], row["rewrites"], row["arbiter"])
        # arbiter says "adjust" exactly when the engine rewrites a value
        assert (row["arbiter"]["verdict"] == "adjust") == bool(row["rewrites"]), row


@pytest.mark.slow
@needs_oracle
@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_serves_the_planned_limits(engine):
    """What the engine ends with is what was priced: the batch, the token budget per
    rank and the sequence length of each worker."""
    for row in _rows(engine):
        config, derived = row["config"], row["engine_verdict"]["derived"]
        if engine == "vllm":
            assert derived["max_num_seqs"] == config["max-num-seqs"]
            assert derived["max_num_batched_tokens"] == config["max-num-batched-tokens"]
            assert derived["max_model_len"] == config["max-model-len"] == 5000
        else:
            ranks = config.get("attn-dp-size", 1)
            # SGLang keeps the running requests whole (split per DP worker at scheduling)
            # and stores the per-rank chunk (arg_groups: chunked_prefill_size // attn_dp)
            assert derived["max_running_requests"] == config["max-running-requests"]
            assert derived["chunked_prefill_size"] == config["chunked-prefill-size"] // ranks
            if "cuda-graph-max-bs-decode" in config:
                assert derived["cuda_graph_max_bs"] == config["cuda-graph-max-bs-decode"]


# what the shapes arbiter refuses are refused for: the weights do not fit the worker's GPUs
# (in a minimal conflict with the rules that bound how many GPUs it could have), which the
# engines find only when they load the weights on the GPUs, a stage no CPU reaches
WEIGHTS_RULE = "memory.weights-fit"  # constraints/shared/rules/memory.py


@pytest.mark.slow
@needs_oracle
@pytest.mark.parametrize("engine", ENGINES)
def test_every_shape_the_plan_may_emit_is_accepted_by_the_engine(engine):
    """Every layout the plan enumerates on 8 GPUs, in each role, KV dtype and MTP depth
    (the script's shapes batch): what `arbiter check` accepts, the engine accepts, with
    only the rewrites arbiter names; what it refuses is refused for memory alone."""
    rows = parse.compare(parse.shapes(engine), parse.PYTHONS)
    passing = [r for r in rows if parse.passes_check(r)]
    assert len(passing) >= 100, len(passing)
    assert [r["source"] for r in passing if not r["accepted"]] == []
    assert all(r["rewrites_agree"] for r in passing)
    configs = [r["config"] for r in passing]
    if engine == "vllm":
        assert any("enable-expert-parallel" in c for c in configs)
        assert any("speculative-config" in c for c in configs)
    else:
        assert any("ep-size" in c for c in configs) and any("attn-dp-size" in c for c in configs)
        assert any("speculative-algorithm" in c for c in configs)
    for row in rows:
        if not parse.passes_check(row):
            assert WEIGHTS_RULE in row["arbiter"]["rules"], row["arbiter"]


def _recorded() -> dict[tuple[str, str, str], dict]:
    data = json.loads(parse.RECORD.read_text())
    return {(r["engine"], r["model"], r["source"]): r for r in data["rows"]}


@pytest.mark.parametrize("engine", parse.RUNS_HERE)
def test_what_emit_writes_today_is_what_the_engines_accepted(engine):
    """The default run's stand-in for the slow tests (no venv, no oracle): the shapes
    batch emit.py writes today is, config for config, the recorded one, which the engine
    accepted wherever `arbiter check` did. A change to what emit.py writes fails here
    until `python benchmarks/plan_engine_parse.py --shapes --record` is rerun."""
    recorded = _recorded()
    items = parse.shapes(engine)
    assert len(items) >= 100
    for item in items:
        key = (engine, item["model"], item["source"])
        assert key in recorded, f"{key}: not in the record; rerun the script with --record"
        row = recorded[key]
        assert row["config"] == item["config"], (key, "rerun the script with --record")
        if row["arbiter"] in ("accept", "adjust"):
            assert row["verdict"] in ("accept", "adjust"), (key, row["message"])
            assert (row["arbiter"] == "adjust") == bool(row["rewrites"]), row
            assert row["rewrites_agree"], row
        else:
            assert WEIGHTS_RULE in row["arbiter_rules"], row
