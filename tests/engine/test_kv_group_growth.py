"""What a beam group needs to grow: `KvCacheManager.group_blocks_needed` against the blocks
the appends really take, and the scheduler case that the per-beam sum got wrong."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kv import KvCacheManager
from engine.scheduler import Scheduler, SchedulerConfig
from engine.sequence import Sequence
from tests.engine.test_kv_support import decode, make_spec, prefill


def beams_of(kv: KvCacheManager, prompt: list[int], forks: list[int]) -> list[Sequence]:
    """A request and its forks: beam `i + 1` forks from beam `forks[i]` after the decodes
    so far; every beam then samples its own token, so they diverge."""
    root = Sequence(0, prompt)
    prefill(kv, root)
    beams = [root]
    for step, parent in enumerate(forks):
        child = beams[parent % len(beams)].fork(len(beams))
        kv.fork(beams[parent % len(beams)], child)
        child.token_ids[-1] = (child.token_ids[-1] + 1 + step) % 5
        beams.append(child)
        if step % 2:
            for seq in beams:
                decode(kv, seq, (seq.seq_id + step) % 5)
    return beams


def measured_peak(kv: KvCacheManager, beams: list[Sequence], num_new: int) -> int:
    """Append `num_new` slots to each beam in turn; the most blocks taken at once."""
    start = kv.num_free_blocks
    peak = 0
    for seq in beams:
        kv.append_slot(seq, num_new)
        peak = max(peak, start - kv.num_free_blocks)
    return peak


@settings(max_examples=60, deadline=None)
@given(
    prompt=st.lists(st.integers(0, 4), min_size=1, max_size=11),
    forks=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    tokens_per_block=st.sampled_from([1, 2, 4]),
    window=st.sampled_from([None, (5, 1), (6, 2), (4, 0)]),
    subset=st.integers(1, 63),
)
def test_group_need_is_what_the_appends_take(
    prompt: list[int],
    forks: list[int],
    tokens_per_block: int,
    window: tuple[int, int] | None,
    subset: int,
) -> None:
    kv = KvCacheManager(
        make_spec(
            tokens_per_block=tokens_per_block,
            num_blocks=64,
            max_attention_window=window[0] if window else None,
            sink_token_length=window[1] if window else 0,
        )
    )
    beams = beams_of(kv, prompt, forks)
    # Any subset of the beams (a group grows one beam when it is a prompt chunk); a beam
    # left out keeps holding its blocks, so the ones that grow must copy them.
    growing = [seq for i, seq in enumerate(beams) if subset >> (i % 6) & 1] or beams[:1]
    predicted = kv.group_blocks_needed(growing, 1)
    assert predicted == measured_peak(kv, growing, 1)
    for seq in growing:
        kv.mark_computed(seq, 1)
    kv.check_valid()
    assert all(seq.block_table for seq in beams)


def test_two_beams_on_one_partial_block_need_one_copy() -> None:
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=4))
    beams = beams_of(kv, [0], [0])
    assert [seq.block_table for seq in beams] == [[0], [0]]
    assert sum(kv.blocks_needed(seq) for seq in beams) == 2  # each beam alone would copy
    assert kv.group_blocks_needed(beams) == 1  # but the second keeps the original
    assert measured_peak(kv, beams, 1) == 1


def test_no_evict_keeps_a_forked_group_running_in_its_reservation() -> None:
    """Found by the scheduler's property test: two single requests and one of two beams,
    one token prompts, in a pool of exactly the blocks they reserve. The forked group
    asked for two copies of its shared block, got none, and was paused for the step."""
    kv = KvCacheManager(make_spec(tokens_per_block=4, num_blocks=4))
    config = SchedulerConfig(max_batch_size=3, max_num_tokens=12)
    sched = Scheduler(config, kv)
    seqs = [Sequence(i, [0], max_new_tokens=2, beam_width=w) for i, w in enumerate((1, 1, 2))]
    for seq in seqs:
        sched.add(seq)
    out = sched.schedule()
    assert [e.seq.seq_id for e in out.scheduled] == [0, 1, 2]
    sched.on_step_done(out, {s.seq_id: 1 for s in out.needs_token})
    child = seqs[2].fork(1002)
    child.token_ids[-1] = 2
    sched.fork(seqs[2], child)
    assert kv.num_free_blocks == 1
    out = sched.schedule()
    assert sorted(e.seq.seq_id for e in out.scheduled) == [0, 1, 2, 1002]
    assert not out.preempted
    kv.check_valid()
    tables = [seq.block_table for seq in [*seqs, child]]
    assert all(len(table) == 1 for table in tables)
    assert len({table[0] for table in tables}) == 4  # the copy took the last free block
    assert kv.num_free_blocks == 0
