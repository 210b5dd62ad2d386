"""`arbiter.core.one_solve`: every stage and the numeric tie-break folded into one CP-SAT
objective reaches the same lexicographic optimum as the stages solved one by one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import arbiter.core as core
from arbiter import arbitrate, func, load_claims, perf
from arbiter.claims import SetupClaim
from arbiter.problem import ArbitrationProblem

SCENARIO = Path(__file__).resolve().parents[2] / "arbiter" / "scenarios" / "server_h100.yaml"
PROFILE = "trtllm-tensorrt"
NUMERIC = (
    ("build_config.max_num_tokens", 64, 32768),
    ("build_config.max_batch_size", 1, 1024),
    ("build_config.max_seq_len", 256, 131072),
    ("kv_cache_config.tokens_per_block", 8, 256),
    ("kv_cache_config.sink_token_length", 0, 64),
    ("kv_cache_config.free_gpu_memory_fraction", 0.5, 0.95),
)


def _instance(seed: int) -> list:
    """The realistic scenario's setups, some of its other claims, and random numeric wishes."""
    rng = random.Random(seed)
    base = load_claims(SCENARIO)
    claims = [c for c in base if isinstance(c, SetupClaim) or rng.random() < 0.6]
    for i in range(rng.randint(1, 6)):
        path, lo, hi = rng.choice(NUMERIC)
        value = rng.uniform(lo, hi) if isinstance(lo, float) else rng.randint(lo, hi)
        value = round(value, 2) if isinstance(lo, float) else value
        op = rng.choice(["ge", "le"])
        if rng.random() < 0.3:
            claims.append(func(f"f{i}", {path: {op: value}}))
        else:
            claims.append(perf(f"n{i}", {path: {op: value}}, weight=rng.randint(1, 9)))
    return claims


def _score(problem: ArbitrationProblem, solved: core.Solved, model: core.Solved) -> list[int]:
    """Each stage's value, most important first, then the tie-break's (objectives of
    `model`'s compiled model, read in `solved`'s solution: the same claims and rules
    compile to the same variables)."""
    parts = core.objective_parts(problem, model.compiled)
    tie = core.Objective.of((d, 1) for d in model.compiled.distance_terms())
    return [expr.value(solved.solution) for expr, _, _ in parts] + [tie.value(solved.solution)]


@pytest.mark.parametrize("seed", range(12))
def test_one_solve_reaches_the_staged_optimum(seed, monkeypatch):
    problem = ArbitrationProblem.prepare(_instance(seed), profile=PROFILE)
    one = core.solve(problem)
    monkeypatch.setattr(core, "ONE_SOLVE_LIMIT", 0)  # nothing fits: the stages one by one
    staged = core.solve(problem)
    if one is None or staged is None:
        assert one is None and staged is None
        return
    assert len(one.solution) == len(staged.solution)
    assert _score(problem, one, one) == _score(problem, staged, one)
    assert staged.solves >= 2


def test_the_realistic_scenario_takes_one_solve():
    resolution = arbitrate(load_claims(SCENARIO), profile=PROFILE)
    assert resolution.stats["solves"] == 1
    assert resolution.status == "optimal"


def test_weights_past_the_limit_go_stage_by_stage(monkeypatch):
    monkeypatch.setattr(core, "ONE_SOLVE_LIMIT", 1 << 10)
    resolution = arbitrate(load_claims(SCENARIO), profile=PROFILE)
    assert resolution.stats["solves"] == 2
