"""The plan's emitted worker configs through the engines' own configuration code: vLLM
0.33.0's `vllm serve` parser and `create_engine_config`, SGLang 0.5.23's parser,
`resolve_once` and `check_server_args`, each in its throwaway venv
(benchmarks/plan_engine_parse.py). Every config of the small plans (pick, runners-up,
both disaggregated roles, MTP drafts, MoE attention-DP) is accepted, and the engine
rewrites no value except the ones `arbiter check` says it changes, to the same value.

Slow, and skipped where a venv is absent (CI builds none: the engines' wheels are CUDA
builds of several GB; docs/plan.md says so). TensorRT-LLM's wheel cannot be installed
here, so its YAML is not run (the script's docstring says why)."""

from __future__ import annotations

import importlib.util
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


# the rules behind the shapes arbiter refuses: the weights do not fit the worker's GPUs
# and more GPUs than the worker has cannot be given (the ranks, and vLLM's DP replicas,
# must fit the devices), which the engines find only when they load the weights on the
# GPUs (a stage no CPU reaches); constraints/shared/rules/memory.py
MEMORY_RULES = {
    "machine.parallel-fits-devices",
    "machine.vllm-dp-replicas-fit-devices",
    "memory.weights-fit",
}


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
            assert set(row["arbiter"]["rules"]) <= MEMORY_RULES, row["arbiter"]
