"""`arbiter plan --ttft-model steploop` through the real oracle: each step priced by the
oracle's own per-op model (one request alone: TTFT is its prefill step, TPOT the oracle's),
the plan's pick carrying the step loop's TTFT for its point, recomputed here apart, and the
option named in the JSON; a model that is not one of the two is bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.plan.errors import PlanInputError
from arbiter.plan.request import DEFAULT_TTFT_MODEL, TTFT_MODELS
from tests.arbiter.plan.conftest import TTFT, needs_oracle, planned, small_request

ISL, OSL = 4000, 1000


def _pricer(engine: str = "trtllm"):
    from arbiter.plan.layout import Layout
    from arbiter.plan.oracle import Oracle
    from arbiter.plan.stepprice import StepPricer

    oracle = Oracle("h200_sxm", engine, "Qwen/Qwen3-32B")
    model, backend = oracle.session(Layout(tp=2))
    return oracle, StepPricer(model, backend, oracle.db, ISL, OSL)


@needs_oracle
@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_one_request_alone_waits_for_its_prefill_step_only(engine):
    from arbiter.plan.layout import Layout
    from arbiter.plan.stepprice import steploop_point

    oracle, pricer = _pricer(engine)
    loop = steploop_point(pricer, engine, batch=1, budget=8192, rounds=2, warmup_rounds=0)
    assert loop.ttft_ms == pytest.approx(pricer(ISL, 0))
    # its decode steps are the oracle's own: the same TPOT as the oracle's point at batch 1
    priced = oracle.price(Layout(tp=2), 1, 8192, ISL, OSL)
    assert priced is not None
    assert loop.tpot_ms == pytest.approx(priced.tpot_ms, rel=1e-6)


@needs_oracle
def test_two_clients_queue_behind_one_prefill_without_chunking():
    from arbiter.plan.stepprice import steploop_point

    _, pricer = _pricer()
    # a 4000-token budget holds one prompt: the second waits a step with the first's decode
    loop = steploop_point(
        pricer, "trtllm", batch=2, budget=ISL, rounds=1, warmup_rounds=0, chunked=False
    )
    first = pricer(ISL, 0)
    assert loop.ttfts_ms[0] == pytest.approx(first)
    # the second prompt does not fit beside the first's decode token (4001 > 4000): it runs
    # after the first finishes its OSL - 1 decode steps
    assert loop.ttfts_ms[1] == pytest.approx(first + (OSL - 1) * pricer(0, 1) + pricer(ISL, 0))


@needs_oracle
def test_the_pick_carries_the_step_loop_ttft_of_its_point():
    from arbiter.plan.stepprice import steploop_point

    report = planned("trtllm", ttft_model="steploop")
    assert report.request["ttft_model"] == "steploop"
    (ep,) = report.engines
    assert ep.pick is not None
    w = ep.pick.worker
    _, pricer = _pricer()
    loop = steploop_point(pricer, "trtllm", w.batch, w.budget)
    assert ep.pick.priced.ttft_ms == pytest.approx(loop.ttft_ms)
    assert ep.pick.priced.ttft_ms <= TTFT
    # the factor's plan of the same request prices the same point's TTFT differently
    factor = planned("trtllm")
    rows = {
        (r.worker.layout, r.worker.batch, r.worker.budget): r for r in factor.engines[0].table.rows
    }
    same = rows[(w.layout, w.batch, w.budget)]
    assert same.priced.ttft_ms != pytest.approx(loop.ttft_ms)
    assert same.priced.tpot_ms == pytest.approx(ep.pick.priced.tpot_ms)


def test_the_default_is_the_factor_and_a_bad_model_is_named():
    assert DEFAULT_TTFT_MODEL in TTFT_MODELS
    assert small_request().ttft_model == DEFAULT_TTFT_MODEL
    with pytest.raises(PlanInputError) as err:
        small_request(ttft_model="fixed")
    assert err.value.field == "ttft_model"
    assert "steploop" in str(err.value)


@needs_oracle
def test_the_command_takes_the_option():
    args = ["plan", "--model", "Qwen/Qwen3-32B", "--device", "1xH200", "--isl", "4000"]
    args += ["--osl", "1000", "--ttft", "2000", "--tpot", "40", "--max-batch", "24"]
    args += ["--budget-step", "4096", "--max-pp", "1", "--runners-up", "0", "--format", "json"]
    result = CliRunner().invoke(app, [*args, "--ttft-model", "steploop"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["request"]["ttft_model"] == "steploop"
    bad = CliRunner().invoke(app, [*args, "--ttft-model", "fixed"])
    assert bad.exit_code == 2
    assert "ttft_model" in bad.output
