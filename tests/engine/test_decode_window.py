"""Multi-step decode windows (``num_scheduler_steps``) on a CPU, through the capture-ready
static step run without a graph: a window of k greedy decode steps with one host round
trip gives the tokens of k single steps, whatever stops a row inside it (its length, a
stop token, ``max_seq_len``), with prefix caching, a pool too small to reserve the whole
window, and streaming; windows never run while a request waits, for beams or sampled
requests; and the KV invariants hold after every run.

On a GPU the same windows replay the captured graphs (``tests/engine/test_cuda_identity.py``
and ``benchmarks/bench_engine.py --cuda-only``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import LLM, InvalidLlmArg, SamplingParams
from engine.cuda_graphs import DecodeGraphs
from engine.kv import KvCacheManager, KvCacheSpec
from engine.sequence import Sequence

pytest.importorskip("transformers")

PROMPTS = [[5, 6, 7, 8, 9], [40] * 37, list(range(3, 70))]
KV = {"tokens_per_block": 16, "max_tokens": 2048}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    from engine.model.testing import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("llama"), "llama", seed=2)


def _llm(path: Path, kv: dict | None = None, **kw) -> LLM:
    return LLM(path, device="cpu", dtype="float32", kv_cache_config=kv or KV, **kw)


def _windowed(path: Path, steps: int, kv: dict | None = None, **kw) -> LLM:
    """An LLM whose decode steps go through the static step with ``steps``-step windows."""
    llm = _llm(path, kv, num_scheduler_steps=steps, **kw)
    llm.runtime.graphs = llm.runtime.new_graphs(capture=False, window_steps=steps)
    return llm


def _tokens(llm: LLM, params) -> list[list[int]]:
    return [o.token_ids for o in llm.generate(PROMPTS, params)]


@pytest.fixture(scope="module")
def expected(model_dir) -> list[list[int]]:
    return _tokens(_llm(model_dir), SamplingParams(max_tokens=20, ignore_eos=True))


@pytest.mark.parametrize("steps", [2, 4, 8])
def test_windows_give_the_single_step_tokens(model_dir, expected, steps):
    llm = _windowed(model_dir, steps)
    assert _tokens(llm, SamplingParams(max_tokens=20, ignore_eos=True)) == expected
    rt = llm.runtime
    # 19 decode tokens after the prompt step, in windows of `steps` substeps; a last
    # single token is a plain (static) step
    assert rt.windows == 19 // steps + (19 % steps > 1)
    assert rt.graphs.replays == 19
    assert rt.num_decode_tokens == 3 * 19
    rt.kv.check_valid()
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks  # every reserved block came back


def test_rows_ending_inside_a_window(model_dir, expected):
    """Lengths 3, 6 and 20 with windows of 4: the short rows stop inside a window and
    take no token after their last; the window goes on for the others."""
    llm = _windowed(model_dir, 4)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 6, 20)]
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == [expected[0][:3], expected[1][:6], expected[2]]
    assert [o.finish_reason for o in outs] == ["length"] * 3
    llm.runtime.kv.check_valid()


def test_a_stop_token_inside_a_window(model_dir, expected):
    """A stop token sampled mid-window ends the request there, as in single steps; the
    slots the window wrote after it are freed with the request's blocks."""
    # The prompt step samples token 0, the first window of 8 tokens 1-8: stop at the
    # third request's token 5, in the middle of that window.
    stop = expected[2][5]
    params = SamplingParams(max_tokens=20, stop_token_ids=(stop,))
    want = _tokens(_llm(model_dir), params)
    assert want[2][-1] == stop and len(want[2]) <= 6
    llm = _windowed(model_dir, 8)
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == want
    assert outs[2].finish_reason == "stop"
    assert llm.runtime.windows > 0
    llm.runtime.kv.check_valid()


def test_max_seq_len_ends_a_row_inside_a_window(model_dir):
    params = SamplingParams(max_tokens=40, ignore_eos=True)
    kw = {"max_seq_len": 80, "max_input_len": 70}
    want = _tokens(_llm(model_dir, **kw), params)
    llm = _windowed(model_dir, 8, **kw)
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == want
    assert len(outs[2].token_ids) == 80 - len(PROMPTS[2])  # stopped by max_seq_len
    llm.runtime.kv.check_valid()


def test_prefix_caching_hashes_only_computed_blocks(model_dir, expected):
    """With block reuse, a window's blocks are hashed only as their tokens are computed:
    a second run over the same prompts hits the cache and gives the same tokens."""
    kv = {**KV, "enable_block_reuse": True}
    llm = _windowed(model_dir, 8, kv)
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    assert _tokens(llm, params) == expected
    hits = llm.runtime.kv.counters.cached_hit_tokens
    assert _tokens(llm, params) == expected
    assert llm.runtime.kv.counters.cached_hit_tokens > hits
    llm.runtime.kv.check_valid()


def test_a_small_pool_shortens_the_window(model_dir, expected):
    """Too few free blocks for every row's window: rows get the slots there are (at
    least their scheduled one) and the tokens are still those of single steps."""
    kv = {"tokens_per_block": 16, "max_tokens": 16 * 9}  # 9 blocks: prompts take 7
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    llm = _windowed(model_dir, 16, kv)
    assert _tokens(llm, params) == expected
    assert llm.runtime.windows > 0
    llm.runtime.kv.check_valid()


def test_no_window_while_a_request_waits(model_dir, expected):
    """Batch of 2 for 3 requests: until the third is admitted, steps are single."""
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    single = _llm(model_dir, max_batch_size=2)
    want = _tokens(single, params)
    assert want == expected
    llm = _windowed(model_dir, 4, max_batch_size=2)
    rt = llm.runtime
    waited = []
    run_window, chain = rt._run_window, rt._chain

    def spy(out, steps, timer):
        waited.append(len(rt.scheduler.waiting))
        return run_window(out, steps, timer)

    def chain_spy(current, timer):
        queued = len(rt.scheduler.waiting)
        nxt = chain(current, timer)
        if nxt is not None:
            waited.append(queued)
        return nxt

    rt._run_window, rt._chain = spy, chain_spy
    assert _tokens(llm, params) == want
    assert waited and set(waited) == {0}
    assert rt.windows == len(waited)
    rt.kv.check_valid()


def test_sampled_and_beam_requests_take_single_steps(model_dir):
    llm = _windowed(model_dir, 4)
    seeded = SamplingParams(max_tokens=8, temperature=0.8, seed=3, ignore_eos=True)
    want = _tokens(_llm(model_dir), seeded)
    assert _tokens(llm, seeded) == want
    beams = SamplingParams(max_tokens=6, beam_width=2, ignore_eos=True)
    want = _tokens(_llm(model_dir, max_beam_width=2), beams)
    llm = _windowed(model_dir, 4, max_beam_width=2)
    assert _tokens(llm, beams) == want
    assert llm.runtime.windows == 0


def test_streaming_gets_a_window_of_tokens_at_a_time(model_dir, expected):
    llm = _windowed(model_dir, 4)
    got: dict[int, list[int]] = {0: [], 1: [], 2: []}
    sizes = []
    for delta in llm.generate_stream(PROMPTS, SamplingParams(max_tokens=20, ignore_eos=True)):
        got[delta.index].extend(delta.token_ids)
        sizes.append(len(delta.token_ids))
    assert [got[i] for i in range(3)] == expected
    assert max(sizes) == 4  # a window's tokens arrive together
    llm.runtime.kv.check_valid()


def test_closing_a_stream_between_windows_frees_everything(model_dir):
    llm = _windowed(model_dir, 4)
    stream = llm.generate_stream(PROMPTS, SamplingParams(max_tokens=20, ignore_eos=True))
    for _ in range(4):
        next(stream)
    stream.close()
    rt = llm.runtime
    assert not rt.has_unfinished
    rt.kv.check_valid()
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks


def test_windows_off_says_why(model_dir):
    assert _llm(model_dir).runtime.windows_off == "num_scheduler_steps is 1"
    on_cpu = _llm(model_dir, num_scheduler_steps=4).runtime
    assert on_cpu.windows_off == "no CUDA graphs (not a CUDA device)"
    assert _windowed(model_dir, 4).runtime.windows_off is None


@pytest.mark.parametrize("value", [0, -1, 2.0, True, "4", 1000])
def test_num_scheduler_steps_is_checked(model_dir, value):
    with pytest.raises(InvalidLlmArg) as info:
        _llm(model_dir, num_scheduler_steps=value)
    assert info.value.argument == "num_scheduler_steps"
    assert f"num_scheduler_steps={value!r}" in str(info.value)
    assert "1 to 256" in str(info.value)


def test_run_window_refuses_bad_steps(model_dir):
    llm = _windowed(model_dir, 4)
    graphs = llm.runtime.graphs
    seqs = [Sequence(seq_id=i, token_ids=[1, 2, 3]) for i in range(2)]
    for steps in ([1], [0, 1], [5, 1]):
        with pytest.raises(ValueError, match="window steps"):
            graphs.run_window(seqs, steps)
    with pytest.raises(ValueError, match="window_steps must be >= 1"):
        DecodeGraphs(
            llm.model,
            llm.runtime.kv.storage.kv,
            max_batch_size=2,
            max_seq_len=64,
            tokens_per_block=16,
            capture=False,
            window_steps=0,
        )


def _manager(blocks: int, **kw) -> KvCacheManager:
    return KvCacheManager(KvCacheSpec(1, 1, 4, tokens_per_block=4, num_blocks=blocks, **kw))


def _decoding(kv: KvCacheManager, seq_id: int, tokens: int) -> Sequence:
    seq = Sequence(seq_id=seq_id, token_ids=list(range(tokens)))
    kv.allocate(seq, tokens)
    kv.mark_computed(seq, tokens - 1)  # the last token is the decode's
    return seq


def test_reserve_decode_window_takes_fresh_blocks_while_there_are_some():
    kv = _manager(4)
    seq = _decoding(kv, 0, 6)  # positions 0..5 in blocks 0-1; position 5 is the decode
    assert len(seq.block_table) == 2
    assert kv.reserve_decode_window(seq, 3) == 3  # positions 5, 6, 7: block 1 still
    assert len(seq.block_table) == 2
    assert kv.reserve_decode_window(seq, 7) == 7  # positions up to 11: one more block
    assert len(seq.block_table) == 3 and kv.num_free_blocks == 1
    assert kv.reserve_decode_window(seq, 12) == 11  # 12..15 take the last; 16 finds none
    assert len(seq.block_table) == 4 and kv.num_free_blocks == 0
    assert kv.reserve_decode_window(seq, 0) == 1
    kv.check_valid()


def test_reserve_decode_window_stops_at_a_shared_block_and_a_sink_bubble():
    kv = _manager(8)
    parent = _decoding(kv, 0, 6)
    kv.reserve_decode_window(parent, 6)  # blocks for positions up to 10
    child = Sequence(seq_id=1, token_ids=list(parent.token_ids))
    kv.fork(parent, child)  # now every block is shared
    assert kv.reserve_decode_window(parent, 6) == 1
    bubble = _manager(8, max_attention_window=8, sink_token_length=2)
    seq = _decoding(bubble, 0, 6)
    assert bubble.layout.bubble and bubble.reserve_decode_window(seq, 4) == 1
    windowed = _manager(8, max_attention_window=8)  # a window alone: reserved, not trimmed
    seq = _decoding(windowed, 0, 6)
    assert windowed.reserve_decode_window(seq, 4) == 4
    windowed.check_valid()


@pytest.mark.parametrize("steps", [4, 16])
def test_windows_over_a_sliding_window(tmp_path, steps):
    """Mistral's sliding window (16 keys here): blocks leave the window as a window's
    tokens are marked computed, and the tokens are those of single steps."""
    from engine.model.testing import make_tiny_model_dir

    path = make_tiny_model_dir(tmp_path / "mistral", "mistral", seed=2)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 9, 20)]
    want = [o.token_ids for o in _llm(path).generate(PROMPTS, params)]
    llm = _windowed(path, steps)
    rt = llm.runtime
    assert rt.kv.layout.window == 16 and rt.windows_off is None
    assert [o.token_ids for o in llm.generate(PROMPTS, params)] == want
    assert rt.windows > 0 and rt.kv.counters.window_releases > 0
    rt.kv.check_valid()
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks


def _running(eos: int | None = None, max_seq_len: int | None = None):
    from engine.scheduler import Scheduler, SchedulerConfig

    kv = _manager(16)
    config = SchedulerConfig(max_batch_size=4, eos_token_id=eos, max_seq_len=max_seq_len)
    sched = Scheduler(config, kv)
    seq = Sequence(seq_id=0, token_ids=[1, 2, 3], max_new_tokens=6)
    sched.add(seq)
    out = sched.schedule()  # the prompt
    sched.on_step_done(out, {0: 7})
    out = sched.schedule()  # the first decode
    assert [e.num_new_tokens for e in out.scheduled] == [1]
    assert kv.reserve_decode_window(seq, 8) == 8
    return sched, seq


@pytest.mark.parametrize(
    ("tokens", "eos", "max_seq_len", "stops", "taken", "reason"),
    [
        ([8, 9, 10], None, None, frozenset(), 3, None),  # all taken, still running
        ([8, 9, 10, 11, 12, 13], None, None, frozenset(), 5, "length"),  # 1 + 5 = 6 new
        ([8, 2, 10], 2, None, frozenset(), 2, "eos"),  # the scheduler's end of sequence
        ([8, 9, 10, 11], None, 6, frozenset(), 2, "max_seq_len"),  # 4 tokens + 2 = 6
        ([8, 9, 10], None, None, frozenset({9}), 2, None),  # the caller's stop: not retired
    ],
)
def test_take_window_stops_where_single_steps_would(tokens, eos, max_seq_len, stops, taken, reason):
    sched, seq = _running(eos, max_seq_len)
    got, finished = sched.take_window(seq, tokens, stops)
    assert (got, finished) == (taken, reason is not None)
    assert seq.token_ids == [1, 2, 3, 7, *tokens[:taken]]
    assert seq.finish_reason == reason
    if reason is None:
        assert seq.num_computed_tokens == len(seq) - 1  # the newest token awaits its step
        sched.kv.check_valid()
    assert sched.take_window(seq, [], stops) == (0, False)


def test_windows_under_max_utilization_with_preemption(model_dir, expected):
    """MAX_UTILIZATION over a pool that cannot hold every request to its end: windows take
    the free blocks ahead, later steps preempt and recompute, and the tokens stay those of
    single steps."""
    kv = {"tokens_per_block": 16, "max_tokens": 16 * 9}
    policy = {"capacity_scheduler_policy": "MAX_UTILIZATION"}
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    want = _tokens(_llm(model_dir, kv, scheduler_config=policy), params)
    assert want == expected
    llm = _windowed(model_dir, 8, kv, scheduler_config=policy)
    assert _tokens(llm, params) == want
    rt = llm.runtime
    assert rt.windows > 0 and rt.scheduler.num_preemptions >= 1
    rt.kv.check_valid()
    assert rt.kv.num_free_blocks == rt.kv.spec.num_blocks
