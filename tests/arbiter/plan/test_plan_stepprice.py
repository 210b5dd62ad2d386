"""The step loop priced by the real oracle (`arbiter/plan/stepprice.py`): one request alone
waits for its prefill step only and decodes at the oracle's own TPOT; two clients without
chunking queue behind the first one's decodes."""

from __future__ import annotations

import pytest

from tests.arbiter.plan.conftest import needs_oracle

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
