"""A Hypothesis state machine drives the block manager; every step ends with check_valid().

Rules admit prompts (often sharing prefixes with earlier ones, so reuse, partial reuse,
eviction, offload and onboard all happen under a small pool), advance sequences by prompt
chunks or decodes, fork beams and free sequences. Beyond the manager's own invariants, the
fake model's values must be found in every computed slot of every live sequence, which
catches a wrong hit, a missed copy-on-write or a bad onboard.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from engine.kv import KvCacheManager, OutOfBlocks
from engine.sequence import Sequence
from tests.engine.test_kv_support import assert_cache_content, make_spec, write_kv

TOKENS = st.integers(0, 2)  # a tiny vocabulary makes shared prefixes common
WINDOWS = st.sampled_from([None, (5, 0), (6, 2), (7, 1), (9, 4)])


class KvCacheMachine(RuleBasedStateMachine):
    @initialize(
        tokens_per_block=st.sampled_from([1, 2, 4]),
        num_blocks=st.integers(3, 12),
        reuse=st.booleans(),
        partial=st.booleans(),
        copy=st.booleans(),
        window=WINDOWS,
        host_blocks=st.integers(0, 3),
        onboard=st.booleans(),
    )
    def setup(
        self,
        tokens_per_block: int,
        num_blocks: int,
        reuse: bool,
        partial: bool,
        copy: bool,
        window: tuple[int, int] | None,
        host_blocks: int,
        onboard: bool,
    ) -> None:
        self.kv = KvCacheManager(
            make_spec(
                tokens_per_block=tokens_per_block,
                num_blocks=num_blocks,
                enable_block_reuse=reuse,
                enable_partial_reuse=partial,
                copy_on_partial_reuse=copy,
                max_attention_window=window[0] if window else None,
                sink_token_length=window[1] if window else 0,
                host_cache_blocks=host_blocks,
                onboard_blocks=onboard,
            )
        )
        self.live: dict[int, Sequence] = {}
        self.prompts: list[list[int]] = []
        self.next_id = 0

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _finish_step(self, seq: Sequence, token: int) -> None:
        if seq.num_computed_tokens == len(seq):
            seq.append_token(token)  # the step reached the end: the model sampled a token

    @rule(data=st.data())
    def admit(self, data: st.DataObject) -> None:
        tokens: list[int] = []
        if self.prompts and data.draw(st.booleans(), label="share a prefix"):
            base = data.draw(st.sampled_from(self.prompts), label="base")
            tokens = base[: data.draw(st.integers(0, len(base)), label="cut")]
        tokens += data.draw(st.lists(TOKENS, min_size=0 if tokens else 1, max_size=8))
        seq = Sequence(self._new_id(), tokens)
        cached = self.kv.match_prefix(seq).num_cached_tokens
        num_new = data.draw(st.integers(1, len(seq) - cached), label="first chunk")
        if not self.kv.can_allocate(seq, num_new):
            with pytest.raises(OutOfBlocks):
                self.kv.allocate(seq, num_new)
            return
        self.kv.allocate(seq, num_new)
        assert seq.num_cached_tokens == seq.num_computed_tokens == cached
        assert cached < len(seq)  # the last prompt token is always recomputed
        write_kv(self.kv, seq, num_new)
        self._finish_step(seq, data.draw(TOKENS))
        self.live[seq.seq_id] = seq
        self.prompts.append(tokens)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        seq = self.live[data.draw(st.sampled_from(sorted(self.live)), label="seq")]
        num_new = data.draw(st.integers(1, seq.num_uncomputed_tokens), label="tokens")
        if not self.kv.can_append(seq, num_new):
            with pytest.raises(OutOfBlocks):
                self.kv.append_slot(seq, num_new)
            return
        self.kv.append_slot(seq, num_new)
        write_kv(self.kv, seq, num_new)
        self._finish_step(seq, data.draw(TOKENS))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        parent = self.live[data.draw(st.sampled_from(sorted(self.live)), label="parent")]
        child = parent.fork(self._new_id())
        if child.num_uncomputed_tokens == 1:
            child.token_ids[-1] = data.draw(TOKENS, label="beam token")  # beams diverge
        self.kv.fork(parent, child)
        self.live[child.seq_id] = child

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        seq = self.live.pop(data.draw(st.sampled_from(sorted(self.live)), label="seq"))
        self.kv.free(seq)
        assert seq.block_table == []

    @invariant()
    def cache_is_valid(self) -> None:
        if not hasattr(self, "kv"):
            return
        self.kv.check_valid()
        stats = self.kv.stats()
        assert (
            stats.blocks_in_use + stats.free_blocks + stats.cached_free_blocks == stats.num_blocks
        )
        assert stats.used_slots <= stats.allocated_slots
        for seq in self.live.values():
            assert_cache_content(self.kv, seq)


KvCacheMachine.TestCase.settings = settings(
    KvCacheMachine.TestCase.settings, max_examples=50, stateful_step_count=30, deadline=None
)
TestKvCacheMachine = KvCacheMachine.TestCase
