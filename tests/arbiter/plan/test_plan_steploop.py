"""The step-loop TTFT model on small streams whose answer is worked out by hand.

The step price here is linear: 10 ms a step, 0.01 ms a context token, 1 ms a decode request,
so price(1000, 0) = 20, price(1000, 1) = 21, price(512, 0) = 15.12, price(0, 1) = 11."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.dialects import DIALECTS
from arbiter.plan.errors import PlanInputError
from arbiter.plan.steploop import POLICIES, simulate


def price(ctx: int, decodes: int) -> float:
    return 10.0 + 0.01 * ctx + 1.0 * decodes


def run(**kw):
    args = dict(isl=1000, osl=3, max_batch=8, budget=2048, clients=1)
    args.update(kw)
    return simulate(price, **args)


@pytest.mark.parametrize("policy", POLICIES)
def test_single_request_ttft_is_its_prefill_time(policy):
    result = run(policy=policy)
    assert result.ttfts_ms == pytest.approx((20.0,))
    # two decode steps of one request follow the prefill
    assert result.tpot_ms == pytest.approx(11.0)
    assert result.steps == 3


def test_single_chunked_request_pays_each_chunk():
    result = run(budget=512, chunked=True)
    assert result.ttft_ms == pytest.approx(price(512, 0) + price(488, 0))


def test_two_requests_queue_behind_the_budget():
    # 1500 tokens a step, prompts whole: A runs alone (B does not fit beside it), then B
    # beside A's first decode
    result = run(clients=2, budget=1500, chunked=False)
    assert result.ttfts_ms == pytest.approx((20.0, 20.0 + 21.0))
    assert result.ttft_ms == pytest.approx(30.5)


def test_two_requests_share_a_step_when_the_budget_holds_both():
    result = run(clients=2, budget=2000, chunked=False)
    assert result.ttfts_ms == pytest.approx((30.0, 30.0))


def test_mixed_policy_chunks_the_second_prompt_beside_decodes():
    # step 1: A 1000 + B 48 (budget 1048); step 2: A decodes, B its last 952 tokens
    result = run(clients=2, budget=1048, chunked=True)
    assert result.ttfts_ms == pytest.approx((price(1048, 0), price(1048, 0) + price(952, 1)))


def test_prefill_first_runs_prompts_before_any_decode():
    # SGLang: B's prefill comes before A's decodes, so A's decodes wait one step
    result = run(clients=2, budget=1000, policy="prefill-first")
    assert result.ttfts_ms == pytest.approx((20.0, 40.0))
    # then two decode steps of both: A's 2 tokens after 40 ms, at 13 ms each
    assert result.makespan_ms == pytest.approx(40.0 + 2 * 12.0)


def test_a_full_batch_makes_the_next_client_wait_for_a_finish():
    # one slot: B is admitted only when A has finished (20 + 2 x 11 = 42 ms)
    result = run(clients=2, max_batch=1)
    assert result.ttfts_ms == pytest.approx((20.0, 42.0 + 20.0))


def test_closed_stream_sends_the_next_request_at_the_finish():
    result = run(clients=1, requests=3)
    assert result.ttfts_ms == pytest.approx((20.0, 20.0, 20.0))
    assert result.makespan_ms == pytest.approx(3 * 42.0)


def test_open_stream_idles_until_the_next_arrival():
    result = simulate(price, isl=1000, osl=3, max_batch=8, budget=2048, arrivals=[0.0, 100.0])
    assert result.ttfts_ms == pytest.approx((20.0, 20.0))
    assert result.makespan_ms == pytest.approx(142.0)


def test_one_token_outputs_finish_at_the_first_token():
    result = run(clients=2, osl=1, budget=1000)
    assert result.ttfts_ms == pytest.approx((20.0, 40.0))
    assert result.tpot_ms == 0.0


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"policy": "lifo"}, "steploop.policy"),
        ({"budget": 512, "chunked": False}, "steploop.budget"),
        ({"clients": 2, "requests": 1}, "steploop.requests"),
        ({"max_batch": 0}, "steploop.max_batch"),
    ],
)
def test_bad_input_names_the_field(kw, field):
    with pytest.raises(PlanInputError) as err:
        run(**kw)
    assert err.value.field == field
    assert field in str(err.value)


def test_every_planned_engine_has_a_known_policy():
    planned = ("trtllm", "vllm", "sglang")  # the engines with performance tables
    policies = {e: DIALECTS.part(e, "plan").STEP_POLICY for e in planned}
    assert {p for p, _ in policies.values()} <= set(POLICIES)
    assert policies["sglang"] == ("prefill-first", True) and policies["trtllm"][1] is False


def curved(ctx: int, decodes: int) -> float:
    return 5.0 + 0.02 * ctx + 0.3 * decodes**1.2


@settings(max_examples=60, deadline=None)
@given(
    isl=st.integers(1, 300),
    osl=st.integers(1, 40),
    max_batch=st.integers(1, 6),
    budget=st.integers(300, 700),
    policy=st.sampled_from(POLICIES),
    chunked=st.booleans(),
    clients=st.integers(1, 8),
    rounds=st.integers(1, 3),
    spread=st.sampled_from([0.0, 37.5]),
)
def test_jumping_over_decode_runs_changes_nothing(
    isl, osl, max_batch, budget, policy, chunked, clients, rounds, spread
):
    args = dict(
        isl=isl,
        osl=osl,
        max_batch=max_batch,
        budget=budget,
        policy=policy,
        chunked=chunked,
        clients=clients,
        requests=clients * rounds,
        spread_ms=spread,
    )
    fast, slow = simulate(curved, **args), simulate(curved, jump=False, **args)
    assert fast.steps == slow.steps
    assert fast.ttfts_ms == pytest.approx(slow.ttfts_ms)
    assert fast.tpot_ms == pytest.approx(slow.tpot_ms)
    assert fast.makespan_ms == pytest.approx(slow.makespan_ms)


@settings(max_examples=30, deadline=None)
@given(gaps=st.lists(st.floats(0.0, 200.0), min_size=1, max_size=12), osl=st.integers(1, 30))
def test_jumping_matches_on_open_streams(gaps, osl):
    arrivals = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    args = dict(isl=100, osl=osl, max_batch=3, budget=256, arrivals=arrivals)
    fast, slow = simulate(curved, **args), simulate(curved, jump=False, **args)
    assert fast.steps == slow.steps
    assert fast.ttfts_ms == pytest.approx(slow.ttfts_ms)
