"""Chained decode windows (``Runtime.chain_windows``) on a CPU, through the capture-ready
static step run without a graph: the next window is planned and queued before the host
reads the current one's tokens, and the tokens stay those of single steps whatever ends a
row meanwhile (its length, a stop token, a cancel, a release), with requests arriving
during a chain, a pool too small for the next window, streaming, and over a sliding
window; the KV invariants hold and every block comes back.

On a GPU the chained window is queued on the device behind the current one, so the
device runs it while the host feeds the current one's tokens back
(``benchmarks/bench_engine.py --cuda-only``, the "window" column)."""

from __future__ import annotations

import pytest

from engine import SamplingParams
from engine.model.testing import make_tiny_model_dir
from tests.engine.test_decode_window import PROMPTS, _llm, _tokens, _windowed

pytest.importorskip("transformers")

PARAMS = SamplingParams(max_tokens=20, ignore_eos=True)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("llama"), "llama", seed=2)


@pytest.fixture(scope="module")
def expected(model_dir) -> list[list[int]]:
    return _tokens(_llm(model_dir), PARAMS)


def _check_drained(llm) -> None:
    rt = llm.runtime
    rt.kv.check_valid()
    assert rt._inflight is None
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks  # every reserved block came back


@pytest.mark.parametrize("steps", [2, 4, 8])
def test_chained_windows_give_the_single_step_tokens(model_dir, expected, steps):
    chained = _windowed(model_dir, steps)
    one_by_one = _windowed(model_dir, steps)
    one_by_one.runtime.chain_windows = False
    assert _tokens(chained, PARAMS) == _tokens(one_by_one, PARAMS) == expected
    a, b = chained.runtime, one_by_one.runtime
    # the same windows, all but the first queued behind another when chained
    assert a.windows == b.windows == 19 // steps + (19 % steps > 1)
    assert a.chained == a.windows - 1 and b.chained == 0
    assert a.graphs.replays == b.graphs.replays == 19
    _check_drained(chained)


def test_rows_ending_by_length_become_padding_rows(model_dir, expected):
    """Lengths 3, 6 and 20 with windows of 4: a row whose length ends it inside a window
    is a padding row of the chained one; the chain goes on for the others."""
    llm = _windowed(model_dir, 4)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 6, 20)]
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == [expected[0][:3], expected[1][:6], expected[2]]
    assert llm.runtime.chained > 0
    _check_drained(llm)


def test_a_stop_token_drops_the_rows_chained_tokens(model_dir, expected):
    """A stop token in a window is seen only after the next window was queued: the row's
    chained tokens are computed and dropped, its slots freed with its blocks."""
    stop = expected[2][5]  # inside the first window of 8 (tokens 1-8)
    params = SamplingParams(max_tokens=20, stop_token_ids=(stop,))
    want = _tokens(_llm(model_dir), params)
    assert want[2][-1] == stop and 2 <= len(want[2]) <= 9  # in the first window
    llm = _windowed(model_dir, 8)
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == want
    assert outs[2].finish_reason == "stop"
    assert llm.runtime.chained > 0
    _check_drained(llm)


def test_a_chain_whose_rows_all_stopped_is_read_and_dropped(model_dir):
    """Every row stops in the first window: the window queued behind it has no row left,
    so it is waited for and dropped in the same step (nothing stays queued)."""
    firsts = _tokens(_llm(model_dir), SamplingParams(max_tokens=3, ignore_eos=True))
    stops = tuple({row[2] for row in firsts})  # each row's third token, in window 1
    params = SamplingParams(max_tokens=20, stop_token_ids=stops)
    want = _tokens(_llm(model_dir), params)
    llm = _windowed(model_dir, 4)
    assert _tokens(llm, params) == want
    assert all(len(row) <= 3 for row in want)
    assert llm.runtime.chained == 1
    _check_drained(llm)


def test_cancel_and_release_while_a_window_is_queued(model_dir, expected):
    """Between steps a chained window is queued for every row; aborting one request and
    releasing another then leaves the third's tokens as they were."""
    llm = _windowed(model_dir, 4)
    rt = llm.runtime
    reqs = [rt.add_request(p, PARAMS) for p in PROMPTS]
    while rt._inflight is None:
        rt.step()
    rt.abort(reqs[0].request_id)
    rt.release(reqs[1].request_id)
    while rt.has_unfinished:
        rt.step()
    assert reqs[2].token_ids == expected[2]
    assert reqs[0].finish_reason == "aborted"
    assert len(reqs[0].token_ids) < 20
    _check_drained(llm)


@pytest.mark.parametrize("how", ["abort", "release", "close the stream"])
def test_cancelling_every_row_of_a_queued_window_drops_it(model_dir, expected, how):
    """Found by the runtime's property test: with the last running requests cancelled
    while their chained window was queued, no step was left to read it, and it outlived
    them (on a GPU: still writing into their freed blocks when the next work came). Now
    the cancel that stops its last row waits for it and drops it."""
    llm = _windowed(model_dir, 4)
    rt = llm.runtime
    if how == "close the stream":
        stream = llm.generate_stream(PROMPTS, PARAMS)
        while rt._inflight is None:
            next(stream)
        stream.close()
    else:
        reqs = [rt.add_request(p, PARAMS) for p in PROMPTS]
        while rt._inflight is None:
            rt.step()
        for req in reqs:
            getattr(rt, how)(req.request_id)
    assert not rt.has_unfinished
    _check_drained(llm)
    assert _tokens(llm, PARAMS) == expected  # and the next work runs as before
    _check_drained(llm)


def test_a_request_arriving_during_a_chain_is_admitted_after_it(model_dir, expected):
    llm = _windowed(model_dir, 4)
    rt = llm.runtime
    first = [rt.add_request(p, PARAMS) for p in PROMPTS[:2]]
    while rt._inflight is None:
        rt.step()
    late = rt.add_request(PROMPTS[2], PARAMS)
    chained = rt.chained
    rt.step()  # reads the queued window; a request waits: no new chain
    assert rt._inflight is None and rt.chained == chained
    while rt.has_unfinished:
        rt.step()
    assert [r.token_ids for r in first + [late]] == expected
    _check_drained(llm)


def test_a_small_pool_ends_the_chain(model_dir, expected):
    """Too few free blocks to reserve the next window for every row: rows get what
    there is, a row left without a slot ends the chain, single steps take over."""
    kv = {"tokens_per_block": 16, "max_tokens": 16 * 9}  # 9 blocks: prompts take 7
    llm = _windowed(model_dir, 16, kv)
    assert _tokens(llm, PARAMS) == expected
    _check_drained(llm)


def test_streaming_through_chained_windows(model_dir, expected):
    llm = _windowed(model_dir, 4)
    got: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for delta in llm.generate_stream(PROMPTS, PARAMS):
        got[delta.index].extend(delta.token_ids)
    assert [got[i] for i in range(3)] == expected
    assert llm.runtime.chained > 0
    _check_drained(llm)


@pytest.mark.parametrize("steps", [4, 8])
def test_chains_over_a_sliding_window(tmp_path, steps):
    """Mistral's sliding window (16 keys here): blocks leave it as each window's tokens
    are marked computed, while the next window is already queued; the tokens are those
    of single steps and of windows one at a time."""
    path = make_tiny_model_dir(tmp_path / "mistral", "mistral", seed=3)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 9, 30)]
    want = [o.token_ids for o in _llm(path).generate(PROMPTS, params)]
    llm = _windowed(path, steps)
    rt = llm.runtime
    assert rt.kv.layout.window == 16
    assert [o.token_ids for o in llm.generate(PROMPTS, params)] == want
    assert rt.chained > 0 and rt.kv.counters.window_releases > 0
    _check_drained(llm)


def test_a_row_the_pool_cannot_serve_ahead_ends_the_chain(model_dir, expected, monkeypatch):
    """When a chained window finds no slot for a row (the pool ran dry), the row is a
    padding row of it and the chain ends there: the row is not left behind for long,
    single steps and fresh windows serve it, and the tokens are unchanged."""
    llm = _windowed(model_dir, 4)
    rt = llm.runtime
    real = rt.kv.reserve_decode_window
    starved: list[int] = []

    def reserve(seq, steps, ahead=0):
        if ahead and not starved and len(seq) > 40:  # the third prompt's row, once
            starved.append(seq.seq_id)
            return 0
        return real(seq, steps, ahead)

    monkeypatch.setattr(rt.kv, "reserve_decode_window", reserve)
    plans: list[list[int] | None] = []
    chain = rt._chain

    def chain_spy(current, timer):
        nxt = chain(current, timer)
        plans.append(None if nxt is None else list(nxt.steps))
        return nxt

    rt._chain = chain_spy
    assert _tokens(llm, PARAMS) == expected
    assert starved
    starved_at = next(i for i, p in enumerate(plans) if p is not None and 0 in p)
    assert plans[starved_at] == [4, 4, 0]  # its row a padding row, the others served
    assert plans[starved_at + 1] is None  # the chain ended right after
    assert any(p is not None for p in plans[starved_at + 2 :])  # and began again later
    _check_drained(llm)
