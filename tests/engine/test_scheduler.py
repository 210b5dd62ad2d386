"""Exact scheduler tests: policies, chunking, limits, abort, beams, finishing."""

from __future__ import annotations

import pytest

from engine.kv import KvCacheManager
from engine.scheduler import (
    DuplicateSequence,
    InvalidSchedulerConfig,
    MissingSampledToken,
    PromptTooLong,
    Scheduler,
    SchedulerConfig,
    SchedulerOutput,
    UnknownSequence,
    assign_chunks,
)
from engine.sequence import Sequence, SequenceStatus
from tests.engine.test_kv_support import make_spec


def make(num_blocks: int = 16, tokens_per_block: int = 4, **config: object) -> Scheduler:
    kv = KvCacheManager(make_spec(num_blocks=num_blocks, tokens_per_block=tokens_per_block))
    return Scheduler(SchedulerConfig(**config), kv)  # type: ignore[arg-type]


def step(sched: Scheduler, token: int = 1) -> SchedulerOutput:
    out = sched.schedule()
    sched.on_step_done(out, {seq.seq_id: token for seq in out.needs_token})
    sched.kv.check_valid()
    return out


def test_assign_chunks_exact() -> None:
    fcfs, equal = "FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS"
    assert assign_chunks([10, 7], 12, 4, None) == [10, 0]
    assert assign_chunks([7, 10], 12, 4, None) == [7, 0]
    assert assign_chunks([10, 7], 12, 4, fcfs) == [10, 0]
    assert assign_chunks([14, 7], 12, 4, fcfs) == [12, 0]
    assert assign_chunks([13, 2], 11, 4, fcfs) == [8, 2]
    assert assign_chunks([10, 7], 12, 4, equal) == [8, 4]
    assert assign_chunks([3, 9, 9], 12, 4, equal) == [3, 4, 4]
    assert assign_chunks([10], 5, 4, None, [True]) == [4]


def test_decodes_first_and_contexts_first_in_output() -> None:
    sched = make(max_batch_size=4, max_num_tokens=64)
    sched.add(Sequence(1, [1, 2, 3], max_new_tokens=4))
    step(sched)
    sched.add(Sequence(2, [4, 5, 6, 7, 8], max_new_tokens=4))
    out = step(sched)
    assert [(e.seq.seq_id, e.num_new_tokens, e.is_prefill) for e in out.scheduled] == [
        (2, 5, True),
        (1, 1, False),
    ]


def test_no_evict_reserves_until_completion_and_never_preempts() -> None:
    # Each request may need ceil((4 + 8) / 4) = 3 blocks; a pool of 5 runs one at a time.
    sched = make(num_blocks=5, max_batch_size=4, max_num_tokens=64)
    for i in range(3):
        sched.add(Sequence(i, [i, i, i, i], max_new_tokens=8))
    out = step(sched)
    assert [e.seq.seq_id for e in out.scheduled] == [0]
    running_decodes = 0
    while sched.has_unfinished:
        before = [g for g, beams in sched.running.items() if beams[0].in_decode]
        out = step(sched)
        scheduled = {e.seq.group_id for e in out.scheduled}
        assert set(before) <= scheduled  # a started request is never paused
        assert not out.preempted
        running_decodes += len(before)
    assert sched.num_preemptions == 0 and running_decodes > 0
    assert sched.kv.num_free_blocks == 5


def test_max_utilization_preempts_the_newest() -> None:
    sched = make(num_blocks=6, tokens_per_block=2, capacity_policy="MAX_UTILIZATION")
    a, b = Sequence(1, [1, 2], max_new_tokens=8), Sequence(2, [3, 4], max_new_tokens=8)
    sched.add(a)
    sched.add(b)
    out = step(sched)
    assert {e.seq.seq_id for e in out.scheduled} == {1, 2}  # greedy: both admitted
    preempted: list[int] = []
    for _ in range(6):
        out = step(sched)
        preempted += [s.seq_id for s in out.preempted]
        if preempted:
            break
    assert preempted == [2]
    assert b.status is SequenceStatus.PREEMPTED and sched.waiting[0] is b
    assert b.block_table == [] and b.num_computed_tokens == 0
    assert a.status is SequenceStatus.RUNNING
    assert len(b) > 2  # its generated tokens are kept and will be recomputed
    while sched.has_unfinished:
        step(sched)
    assert a.num_generated_tokens == b.num_generated_tokens == 8


def test_static_batch_admits_only_when_idle() -> None:
    sched = make(num_blocks=32, max_batch_size=4, capacity_policy="STATIC_BATCH")
    sched.add(Sequence(1, [1, 2], max_new_tokens=3))
    step(sched)
    sched.add(Sequence(2, [3, 4], max_new_tokens=3))
    for _ in range(2):
        out = step(sched)
        assert [e.seq.seq_id for e in out.scheduled] == [1]
    out = step(sched)
    assert [e.seq.seq_id for e in out.scheduled] == [2]


@pytest.mark.parametrize("policy", ["FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS"])
def test_chunks_are_block_multiples_except_the_last(policy: str) -> None:
    sched = make(
        num_blocks=64,
        max_batch_size=3,
        max_num_tokens=11,
        enable_chunked_context=True,
        chunking_policy=policy,
    )
    lengths = {1: 23, 2: 9, 3: 17}
    for seq_id, n in lengths.items():
        sched.add(Sequence(seq_id, [seq_id] * n, max_new_tokens=2))
    chunks: dict[int, list[int]] = {i: [] for i in lengths}
    while sched.has_unfinished:
        out = sched.schedule()
        assert out.num_tokens <= 11 and out.num_requests <= 3
        for seq, n, is_prefill in out.scheduled:
            if is_prefill:
                chunks[seq.seq_id].append(n)
                if seq.num_computed_tokens + n < len(seq):
                    assert n % 4 == 0, (policy, seq.seq_id, n)
        sched.on_step_done(out, {s.seq_id: 1 for s in out.needs_token})
    for seq_id, n in lengths.items():
        assert sum(chunks[seq_id]) == n and len(chunks[seq_id]) > 1


def test_equal_progress_interleaves_prompts() -> None:
    sched = make(
        num_blocks=64,
        max_num_tokens=8,
        enable_chunked_context=True,
        chunking_policy="EQUAL_PROGRESS",
    )
    sched.add(Sequence(1, list(range(16))))
    sched.add(Sequence(2, list(range(16))))
    out = sched.schedule()
    assert [(e.seq.seq_id, e.num_new_tokens) for e in out.scheduled] == [(1, 4), (2, 4)]


def test_prompt_longer_than_token_budget_is_refused() -> None:
    sched = make(max_num_tokens=8)
    with pytest.raises(PromptTooLong) as err:
        sched.add(Sequence(7, list(range(9))))
    assert (err.value.seq_id, err.value.needed, err.value.limit) == (7, 9, 8)
    assert "request 7" in str(err.value) and "max_num_tokens" in str(err.value)
    chunked = make(max_num_tokens=8, enable_chunked_context=True)
    chunked.add(Sequence(7, list(range(9))))  # fine when it can be split
    with pytest.raises(PromptTooLong, match="num_blocks"):
        make(num_blocks=2).add(Sequence(8, list(range(8)), max_new_tokens=8))
    with pytest.raises(DuplicateSequence, match="sequence 7"):
        chunked.add(Sequence(7, [1]))


def test_abort_frees_blocks_at_once() -> None:
    sched = make(num_blocks=8)
    seqs = [Sequence(i, [i] * 6, max_new_tokens=4) for i in range(2)]
    for seq in seqs:
        sched.add(seq)
    step(sched)
    assert sched.kv.num_free_blocks < 8
    sched.abort(0)
    sched.abort(1)
    assert sched.kv.num_free_blocks == 8 and not sched.has_unfinished
    assert seqs[0].status is SequenceStatus.FINISHED and seqs[0].finish_reason == "aborted"
    with pytest.raises(UnknownSequence, match="sequence 5"):
        sched.abort(5)


def test_finishes_on_eos_and_length() -> None:
    sched = make(eos_token_id=0)
    a, b = Sequence(1, [5, 6], max_new_tokens=3), Sequence(2, [5, 7], max_new_tokens=3)
    sched.add(a)
    sched.add(b)
    out = sched.schedule()
    finished = sched.on_step_done(out, {1: 0, 2: 4})
    assert finished == [a] and a.finish_reason == "eos"
    for _ in range(2):
        out = sched.schedule()
        finished = sched.on_step_done(out, {2: 4})
    assert finished == [b] and b.finish_reason == "length" and b.generated_token_ids == [4, 4, 4]
    assert sched.kv.num_free_blocks == 16


def test_beam_group_is_one_request_costing_one_token_per_beam() -> None:
    sched = make(num_blocks=16, max_batch_size=1, max_num_tokens=3)
    root = Sequence(1, [1, 2, 3], max_new_tokens=4, beam_width=3)
    sched.add(root)
    step(sched)
    for child_id in (2, 3):
        sched.fork(root, root.fork(child_id))
    out = step(sched)
    assert sorted(e.seq.seq_id for e in out.scheduled) == [1, 2, 3]
    assert out.num_requests == 1 and out.num_tokens == 3
    sched.abort(3)
    out = step(sched)
    assert sorted(e.seq.seq_id for e in out.scheduled) == [1, 2]


def test_config_rejects_unknown_policy_names() -> None:
    with pytest.raises(InvalidSchedulerConfig, match="capacity_policy"):
        SchedulerConfig(capacity_policy="GREEDY")
    with pytest.raises(InvalidSchedulerConfig, match="chunking_policy"):
        SchedulerConfig(chunking_policy="fcfs")


def test_missing_sampled_token_is_named() -> None:
    sched = make()
    sched.add(Sequence(4, [1, 2, 3]))
    out = sched.schedule()
    assert out.needs_token == [out.scheduled[0].seq]
    with pytest.raises(MissingSampledToken, match="sequence 4"):
        sched.on_step_done(out, {})


def test_chunk_in_progress_samples_nothing() -> None:
    sched = make(max_num_tokens=4, enable_chunked_context=True)
    seq = Sequence(1, list(range(10)), max_new_tokens=2)
    sched.add(seq)
    out = sched.schedule()
    assert [(e.num_new_tokens, e.is_prefill) for e in out.scheduled] == [(4, True)]
    assert out.needs_token == []
    sched.on_step_done(out, {})
    assert seq.num_computed_tokens == 4 and len(seq) == 10


def _preempt_a_forked_group() -> tuple[Scheduler, Sequence, Sequence, Sequence]:
    """Request 2 forks beam 3 after its first token; the pool runs out five steps later
    and MAX_UTILIZATION preempts the newest request, the beam group."""
    sched = make(num_blocks=12, tokens_per_block=2, capacity_policy="MAX_UTILIZATION")
    a = Sequence(1, [1, 2], max_new_tokens=8)
    b = Sequence(2, [3, 4, 5], max_new_tokens=8, beam_width=2)
    sched.add(a)
    sched.add(b)
    step(sched)
    c = b.fork(3)
    c.token_ids[-1] = 9  # the beams differ from their first generated token on
    sched.fork(b, c)
    for _ in range(8):
        out = step(sched, token=7)
        if out.preempted:
            assert out.preempted == [b, c]
            return sched, a, b, c
    raise AssertionError("the group was never preempted")


def test_a_preempted_beam_group_recomputes_its_shared_prefix_then_forks() -> None:
    sched, a, b, c = _preempt_a_forked_group()
    assert list(sched.waiting) == [b] and b.pending_beams == [c]
    assert b.context_stop == 3  # the prompt [3, 4, 5] is all the beams share
    assert c.status is SequenceStatus.PREEMPTED and c.block_table == []
    length = len(b)
    assert len(c) == length and b.token_ids[4:] == c.token_ids[4:]
    # The carrier computes the shared prefix (its first block comes from the cache).
    out = step(sched, token=7)
    assert (b, 1, True) in [tuple(e) for e in out.scheduled] and b not in out.needs_token
    assert b.pending_beams == [] and sched.running[2] == [b, c]
    assert b.block_table[0] == c.block_table[0]  # the fork shares the prefix blocks
    # Each beam computes its own tail up to, not including, its last token ...
    out = step(sched, token=7)
    assert [(e.seq, e.num_new_tokens) for e in out.scheduled if e.is_prefill] == [
        (b, length - 1 - 3),
        (c, length - 1 - 3),
    ]
    assert b not in out.needs_token and c not in out.needs_token
    # ... and the group resumes with one decode step for both beams.
    out = step(sched, token=7)
    assert {e.seq for e in out.scheduled if not e.is_prefill} >= {b, c}
    assert len(b) == len(c) == length + 1
    while sched.has_unfinished:
        step(sched, token=7)
    assert b.num_generated_tokens == c.num_generated_tokens == 8
    assert b.token_ids[3] == 1 and c.token_ids[3] == 9  # each beam kept its own tokens
    assert sched.kv.num_free_blocks == 12


def test_aborting_beams_of_a_group_waiting_to_recompute() -> None:
    sched, _, b, c = _preempt_a_forked_group()
    assert sched.abort(2) is b  # the carrier: its pending beam takes over the recompute
    assert sched.waiting[0] is c and c.pending_beams == [] and c.context_stop is None
    assert b.finish_reason == "aborted"
    while sched.has_unfinished:
        step(sched, token=7)
    assert c.num_generated_tokens == 8 and c.token_ids[3] == 9

    sched, _, b, c = _preempt_a_forked_group()
    assert sched.abort(3) is c  # a pending beam: the carrier recomputes alone
    assert b.pending_beams == [] and b.context_stop == len(b) - 1
    while sched.has_unfinished:
        step(sched, token=7)
    assert b.num_generated_tokens == 8 and c.status is SequenceStatus.FINISHED
    assert sched.kv.num_free_blocks == 12


def test_a_request_cut_at_max_seq_len_reserves_only_up_to_it() -> None:
    # 16 slots: a 12-token prompt asking for 10 more would need 22, but max_seq_len cuts
    # it at 16, so it fits; without the cut it can never be scheduled.
    sched = make(num_blocks=4, tokens_per_block=4, max_seq_len=16)
    seq = Sequence(1, list(range(12)), max_new_tokens=10)
    sched.add(seq)
    while sched.has_unfinished:
        step(sched)
    assert len(seq) == 16 and seq.finish_reason == "max_seq_len"
    uncut = make(num_blocks=4, tokens_per_block=4)
    with pytest.raises(PromptTooLong) as err:
        uncut.add(Sequence(2, list(range(12)), max_new_tokens=10))
    assert str(err.value) == (
        "request 2 needs 6 blocks but num_blocks is 4, so it can never be scheduled"
    )
