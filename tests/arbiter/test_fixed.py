"""Options the hard claims fix (arbiter/fixed.py): constants in the solve's model, which
is smaller and gives the same answer as the model that keeps them variables."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import arbiter.problem as problem_module
from arbiter import func, load_claims, perf, setup
from arbiter.claims import FuncClaim, SetupClaim
from arbiter.core import solve
from arbiter.fixed import fixed_options
from arbiter.problem import ArbitrationProblem, prepare_claims, resolve_facts

SCENARIO = Path(__file__).resolve().parents[2] / "arbiter" / "scenarios" / "server_h100.yaml"
PROFILE = "trtllm-tensorrt"
QUANT = "quant_config.quant_algo"
TP = "parallel_config.tensor_parallel_size"
BATCH = "build_config.max_batch_size"
REUSE = "kv_cache_config.enable_block_reuse"


def _fixed(claims) -> dict:
    facts, _ = resolve_facts(claims)
    return fixed_options(prepare_claims(claims), facts)


def test_the_equalities_of_func_and_setup_claims_on_small_domains_are_fixed():
    claims = [
        func("fp8", {QUANT: "FP8", BATCH: 256}),  # batch: a numeric size, left a variable
        func("tp_at_least_2", {TP: {"ge": 2}}),  # not an equality
        perf("fusion", {"plugin_config.reduce_fusion": True}),  # may be dropped
        setup("gpu", {"device.sm": 90, "plugin_config.use_fused_mlp": True}),
        func("nullable", {"kv_cache_config.max_attention_window": None}),
    ]
    assert _fixed(claims) == {QUANT: "FP8", "plugin_config.use_fused_mlp": True}


def test_options_two_claims_set_apart_are_not_fixed_and_the_solve_finds_no_answer():
    setups = [c for c in load_claims(SCENARIO) if isinstance(c, SetupClaim)]
    claims = [
        *setups,
        func("reuse", {REUSE: True}),
        func("no_reuse", {REUSE: False}),
        func("fp8", {QUANT: "FP8"}),
    ]
    assert _fixed(claims) == {QUANT: "FP8"}
    assert (
        solve(ArbitrationProblem.prepare(claims, profile=PROFILE)) is None
    )  # then explained as before


def test_the_realistic_scenario_compiles_its_precisions_and_tensor_parallelism_away():
    problem = ArbitrationProblem.prepare(load_claims(SCENARIO), profile=PROFILE)
    fixed = problem.compile(fixed=True)
    whole = problem.compile()
    assert {QUANT, "quant_config.kv_cache_quant_algo", TP} <= fixed.fixed.keys()
    assert QUANT not in fixed.vars and TP not in fixed.vars
    # (309 of 449 constraints: the whole model shrank from 642 when TensorRT-LLM's memory
    # budget after loading became one shared product per tensor-parallel range, the fixed
    # one stayed at 309-310)
    assert len(fixed.model.proto.constraints) < len(whole.model.proto.constraints) * 3 / 4


def _variants(seed: int) -> list:
    """The realistic scenario with some claims left out and a few small-domain ones added."""
    rng = random.Random(seed)
    base = load_claims(SCENARIO)
    claims = [c for c in base if isinstance(c, SetupClaim) or rng.random() < 0.7]
    extra = {
        TP: rng.choice([1, 2, 4]),
        REUSE: rng.choice([True, False]),
        "parallel_config.pipeline_parallel_size": rng.choice([1, 2]),
    }
    for i, (path, value) in enumerate(rng.sample(sorted(extra.items()), 2)):
        claims = [c for c in claims if not (isinstance(c, FuncClaim) and path in c.expr.paths())]
        claims.append(func(f"x{i}", {path: value}))
    return claims


@pytest.mark.parametrize("seed", range(4))
def test_fixing_options_leaves_the_answer_unchanged(seed, monkeypatch):
    problem = ArbitrationProblem.prepare(_variants(seed), profile=PROFILE)
    assert fixed_options(problem.claims, problem.facts)  # the case under test
    fixed = solve(problem)
    monkeypatch.setattr(problem_module, "fixed_options", lambda claims, facts: {})
    plain = solve(problem)
    if fixed is None or plain is None:
        assert fixed is None and plain is None
        return
    assert fixed.values == plain.values
    assert fixed.status == plain.status
