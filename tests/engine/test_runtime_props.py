"""Property test of the whole runtime on a CPU: requests arriving at random steps, with
random lengths and stop tokens, greedy or sampled with their own seeds, some cancelled
mid-run, through single steps or decode windows (chained or not, over the capture-ready
static step), in a roomy pool or one small enough to preempt, with or without block
reuse and a sliding attention window. Each request's tokens must be those it gets alone
(a cancelled one: a prefix of them), and the pool must end whole and valid."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine import SamplingParams
from engine.model.testing import make_tiny_model_dir
from engine.runtime import Request, Runtime
from tests.engine.test_decode_window import _llm, _windowed

pytest.importorskip("transformers")

NEW = 12  # the longest output asked for
PROMPT_LENGTHS = (1, 17, 30, 24, 9, 30)


@cache
def model_dir() -> Path:
    import tempfile

    return make_tiny_model_dir(Path(tempfile.mkdtemp(prefix="runtime-props-")), "llama", seed=4)


def prompt_of(index: int) -> list[int]:
    """Prompts of several lengths; the even ones are prefixes of one text, so that block
    reuse has something to find."""
    index %= SAMPLED
    length = PROMPT_LENGTHS[index % len(PROMPT_LENGTHS)]
    seed = 0 if index % 2 == 0 else index
    return [(7 * seed + 5 * i) % 150 + 3 for i in range(length)]


SAMPLED = 12  # requests from this index on sample (seeded) instead of taking the argmax


def params_of(index: int, max_tokens: int, stops: tuple[int, ...] = ()) -> SamplingParams:
    """Greedy below ``SAMPLED``; above, temperature 0.8 and top-k 20 with the request's own
    seed, whose draws must not depend on what else is in the batch either."""
    if index < SAMPLED:
        return SamplingParams(max_tokens=max_tokens, stop_token_ids=stops, ignore_eos=True)
    return SamplingParams(
        max_tokens=max_tokens,
        stop_token_ids=stops,
        ignore_eos=True,
        temperature=0.8,
        top_k=20,
        seed=index,
    )


@cache
def alone(index: int, window: int | None = None) -> tuple[int, ...]:
    """The request's first ``NEW`` greedy tokens, run alone (under the same attention
    window)."""
    llm = _llm(model_dir(), {"tokens_per_block": 4, "max_tokens": 1024, **attention(window)})
    out = llm.generate([prompt_of(index)], params_of(index, NEW))
    return tuple(out[0].token_ids)


def attention(window: int | None) -> dict[str, int]:
    return {} if window is None else {"max_attention_window": window}


def expected(index: int, max_tokens: int, stop_at: int | None, window: int | None) -> list[int]:
    """What the request must produce: its tokens alone, cut at the stop token (the token
    at position ``stop_at`` of its output, where the first occurrence ends it)."""
    own = alone(index, window)
    tokens = list(own[:max_tokens])
    if stop_at is not None and stop_at < len(own):
        stop = own[stop_at]
        if stop in tokens:
            tokens = tokens[: tokens.index(stop) + 1]
    return tokens


REQUEST = st.tuples(
    st.integers(0, 17),  # prompt (12 and up: sampled with a seed)
    st.integers(1, NEW),  # max_tokens
    st.one_of(st.none(), st.integers(0, NEW - 1)),  # stop token: output position
    st.integers(0, 4),  # arrival step
)


def run_and_check(
    requests: list[tuple[int, int, int | None, int]],
    cancels: list[tuple[int, int]],
    window: int,
    chain: bool,
    small_pool: bool,
    policy: str,
    reuse: bool,
    attention_window: int | None,
) -> Runtime:
    """Run the requests (each: prompt, max_tokens, stop position, arrival step) through
    one runtime, check every request's tokens and finish reason and the pool, and return
    the runtime for its counters."""
    kv = {
        "tokens_per_block": 4,
        "max_tokens": 48 if small_pool else 1024,
        "enable_block_reuse": reuse,
        **attention(attention_window),
    }
    sched = {"capacity_scheduler_policy": policy}
    if window > 1:
        llm = _windowed(model_dir(), window, kv, scheduler_config=sched)
    else:
        llm = _llm(model_dir(), kv, scheduler_config=sched)
    rt = llm.runtime
    rt.chain_windows = chain
    added: dict[int, Request] = {}  # position in `requests` -> its request
    cancelled: set[int] = set()
    for step in range(300):
        for i, (prompt, max_tokens, stop_at, arrival) in enumerate(requests):
            if arrival == step:
                own = alone(prompt, attention_window)
                stops = (own[stop_at],) if stop_at is not None else ()
                added[i] = rt.add_request(prompt_of(prompt), params_of(prompt, max_tokens, stops))
        for at, which in cancels:
            if at == step and which in added:
                rt.abort(added[which].request_id)
                cancelled.add(which)
        if rt.has_unfinished:
            rt.step()
        elif len(added) == len(requests):
            break
    else:
        raise AssertionError("the requests did not finish")
    for i, (prompt, max_tokens, stop_at, _) in enumerate(requests):
        req = added[i]
        want = expected(prompt, max_tokens, stop_at, attention_window)
        if i in cancelled and req.finish_reason == "aborted":
            assert req.token_ids == want[: len(req.token_ids)]
        else:
            assert req.token_ids == want, (i, req.finish_reason)
            own = alone(prompt, attention_window)
            stop = own[stop_at] if stop_at is not None else None
            ends = "stop" if stop in own[:max_tokens] else "length"
            assert req.finish_reason == ends, (i, want)
    rt.kv.check_valid()
    assert rt._inflight is None
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks
    return rt


@settings(max_examples=25, deadline=None)
@given(
    requests=st.lists(REQUEST, min_size=2, max_size=6),
    cancels=st.lists(st.tuples(st.integers(1, 12), st.integers(0, 4)), max_size=3),
    window=st.sampled_from([1, 2, 4]),
    chain=st.booleans(),
    small_pool=st.booleans(),
    policy=st.sampled_from(["GUARANTEED_NO_EVICT", "MAX_UTILIZATION"]),
    reuse=st.booleans(),
    attention_window=st.sampled_from([None, None, 16]),
)
def test_tokens_are_each_requests_own_whatever_the_batch(**case) -> None:
    rt = run_and_check(**case)
    counters = rt.kv.stats().counters
    event(f"preempted: {rt.scheduler.num_preemptions > 0}")
    event(f"chained windows: {rt.chained > 0}")
    event(
        f"cancelled while running: {any(r.finish_reason == 'aborted' for r in rt.requests.values())}"
    )
    event(f"prefix reused: {counters.hit_blocks > 0}")


@pytest.mark.parametrize("steps", [1, 4])
def test_a_preempting_run_with_chained_windows_and_a_cancel(steps) -> None:
    """Three prompts of 17 tokens growing to 29 in a 12-block pool (a preemption), windows
    of 4 chained once one is left (or single steps), and a cancel of the second at step 5."""
    requests = [(1, 12, None, 0), (9, 12, None, 0), (11, 12, None, 0)]
    rt = run_and_check(requests, [(5, 1)], steps, True, True, "MAX_UTILIZATION", True, None)
    assert rt.scheduler.num_preemptions > 0
    assert rt.requests[2].finish_reason == "aborted"  # ids: 0, 2, 4 (sequences between)
    assert (rt.chained > 0) == (steps > 1)
