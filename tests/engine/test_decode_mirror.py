"""The kept head-major K/V copies of the CPU decode batch (``engine.kernels.decode_mirror``):
the output equals the pool's gather path and the dense oracle step after step, the copies
are extended while the batch keeps its sequences, keep the rows that carry over when the
batch changes (admission, finish, preemption, a forked beam, a replaced block), and are
rebuilt when nothing carries over.

Every test runs twice: in float64 with head size 8 (torch's attention over head-major
copies, held to 1e-12) and in float32 with head size 16 (the CPU kernel of
``engine.kernels.cpu_decode`` over copies with K transposed, held to float32 rounding)."""

from __future__ import annotations

import math

import pytest
import torch

from engine.kernels import AttentionBackend, AttentionMetadata, cpu_decode, paged_attention
from engine.kernels.decode_mirror import DecodeMirror
from tests.engine.test_kernels_oracle import dense_attention

BS, HKV, GROUP = 4, 2, 3
# Set per test by ``_layout``: head size, dtype, tolerance, and whether the kernel runs.
D, DTYPE, TOL, KERNEL = 8, torch.float64, 1e-12, False


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: these calls are tiny, and on a shared machine a parallel region
    waits for a descheduled second thread far longer than the work takes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, params=["float64-torch", "float32-kernel"])
def _layout(request, monkeypatch):
    kernel = request.param.endswith("kernel")
    if kernel and cpu_decode.kernel() is None:
        pytest.skip(f"no CPU decode kernel here: {cpu_decode.unavailable_reason()}")
    values = (16, torch.float32, 2e-5, True) if kernel else (8, torch.float64, 1e-12, False)
    for name, value in zip(("D", "DTYPE", "TOL", "KERNEL"), values, strict=True):
        monkeypatch.setitem(globals(), name, value)


def _assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    # (not torch.testing.assert_close: its first call imports torch.distributed.tensor)
    assert got.shape == want.shape
    assert not bool(got.isnan().any())
    assert float((got - want).abs().max()) <= TOL


class _Batch:
    """Sequences decoding one token a step into a NaN-filled pool (two layers), with
    their whole K/V kept for the dense oracle."""

    def __init__(
        self,
        gen: torch.Generator,
        lens: list[int],
        num_blocks: int = 64,
        with_ids: bool = True,
        host_tables: bool = True,
    ) -> None:
        self.gen = gen
        self.with_ids = with_ids
        # The runtime leaves its live block-table lists in the plan cache; without them the
        # plan reads the tables tensor.
        self.host_tables = host_tables
        shape = (2, num_blocks, BS, HKV, D)
        self.pools = [torch.full(shape, float("nan"), dtype=DTYPE) for _ in range(2)]
        self.free = torch.randperm(num_blocks, generator=gen).tolist()
        self.tables: list[list[int]] = []
        self.keys: list[list[torch.Tensor]] = []  # per row, per layer: [n, Hkv, D]
        self.values: list[list[torch.Tensor]] = []
        self.lens: list[int] = []
        self.ids: list[int] = []  # sequence ids, as the runtime gives them
        self.next_id = 0
        for n in lens:
            self.add(n)

    def add(self, n: int) -> None:
        """A sequence whose first ``n - 1`` tokens are already in the pool."""
        self.tables.append([])
        self.lens.append(0)
        self.ids.append(self.next_id)
        self.next_id += 1
        self.keys.append([torch.empty(0, HKV, D, dtype=DTYPE) for _ in self.pools])
        self.values.append([torch.empty(0, HKV, D, dtype=DTYPE) for _ in self.pools])
        row = len(self.lens) - 1
        for _ in range(n - 1):
            slot = self._grow(row)
            for layer, pool in enumerate(self.pools):
                k, v = self._rand(1), self._rand(1)
                pool[0].view(-1, HKV, D)[slot] = k[0]
                pool[1].view(-1, HKV, D)[slot] = v[0]
                self._keep(row, layer, k, v)

    def _rand(self, n: int) -> torch.Tensor:
        return torch.randn(n, HKV, D, generator=self.gen, dtype=DTYPE)

    def _grow(self, row: int) -> int:
        pos = self.lens[row]
        if pos % BS == 0:
            self.tables[row].append(self.free.pop())
        self.lens[row] += 1
        return self.tables[row][pos // BS] * BS + pos % BS

    def _keep(self, row: int, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        self.keys[row][layer] = torch.cat([self.keys[row][layer], k])
        self.values[row][layer] = torch.cat([self.values[row][layer], v])

    def step(self, backend: AttentionBackend) -> None:
        """One decode step of every row through ``backend``, checked layer by layer
        against the pool's gather path and the dense oracle."""
        slots = [self._grow(row) for row in range(len(self.lens))]
        meta = AttentionMetadata.from_lists(
            block_tables=self.tables,
            context_lens=self.lens,
            query_lens=[1] * len(self.lens),
            tokens_per_block=BS,
        )
        assert meta.slot_mapping.tolist() == slots
        if self.with_ids:
            meta.plan_cache["seq_ids"] = list(self.ids)
        if self.host_tables:
            meta.plan_cache["host_tables"] = self.tables
        b = len(self.lens)
        for layer, pool in enumerate(self.pools):
            k, v = self._rand(b), self._rand(b)
            q = torch.randn(b, HKV * GROUP, D, generator=self.gen, dtype=DTYPE)
            backend.store_kv(k, v, pool, meta.slot_mapping)
            out = backend.attention(q, pool, meta, key=k, value=v)
            gathered = paged_attention(
                q, pool, meta.block_tables, meta.context_lens, meta.query_start_loc
            )
            _assert_close(out, gathered)
            for row in range(b):
                self._keep(row, layer, k[row : row + 1], v[row : row + 1])
                pos = torch.tensor([self.lens[row] - 1])
                dense = dense_attention(
                    q[row : row + 1],
                    self.keys[row][layer],
                    self.values[row][layer],
                    pos,
                    scale=1 / math.sqrt(D),
                )
                _assert_close(out[row : row + 1], dense)

    def remove(self, row: int) -> None:
        self.free.extend(self.tables.pop(row))
        for items in (self.keys, self.values, self.lens, self.ids):
            items.pop(row)

    def fork(self, row: int) -> None:
        """A new sequence (a beam) sharing ``row``'s full blocks; its last, partial block
        copied into a new one (copy-on-write) when there is one."""
        table = list(self.tables[row])
        if self.lens[row] % BS:
            new = self.free.pop()
            for pool in self.pools:
                pool[:, new] = pool[:, table[-1]]
            table[-1] = new
        self.tables.append(table)
        self.lens.append(self.lens[row])
        self.keys.append(list(self.keys[row]))
        self.values.append(list(self.values[row]))
        self.ids.append(self.next_id)
        self.next_id += 1

    def counts(self, mirror: DecodeMirror) -> tuple[int, int, int]:
        # every mirrored call went through the kernel exactly when it is this run's layout
        calls = mirror.rebuilds + mirror.extends + mirror.remaps
        assert mirror.kernel_calls == (calls if KERNEL else 0)
        return mirror.rebuilds, mirror.extends, mirror.remaps


def test_copies_are_extended_while_the_batch_keeps_its_sequences():
    backend = AttentionBackend()
    batch = _Batch(torch.Generator().manual_seed(0), [3, 9, 1])
    for _ in range(6):  # crosses block boundaries of every row
        batch.step(backend)
    mirror = backend.mirror
    assert batch.counts(mirror) == (2, 10, 0)  # two layers: one rebuild each


@pytest.mark.parametrize("host_tables", [True, False])
def test_admission_and_finish_keep_the_rows_that_carry_over(host_tables):
    backend = AttentionBackend()
    mirror = backend.mirror
    batch = _Batch(torch.Generator().manual_seed(1), [5, 2, 9], host_tables=host_tables)
    batch.step(backend)
    batch.step(backend)
    assert batch.counts(mirror) == (2, 2, 0)
    batch.add(7)  # admission: a fourth row, read from the pool; the others carry over
    batch.step(backend)
    assert batch.counts(mirror) == (2, 2, 2) and mirror.rows_read == 2 * 3 + 2 * 1
    batch.remove(0)  # a finished sequence frees its blocks: the last slot moves into its
    batch.step(backend)
    assert batch.counts(mirror) == (2, 2, 4) and mirror.rows_read == 8
    last = mirror._last
    assert last is not None and last.slot_rows == [2, 0, 1] and last.order is not None
    batch.add(3)  # admitted into the freed place while another finishes
    batch.remove(1)
    batch.step(backend)
    batch.step(backend)  # the same batch again: extended in place, in slot order
    assert batch.counts(mirror) == (2, 4, 6) and mirror.rows_read == 10
    # A call that does not take the mirror (here a prefill-shaped one) drops that layer's
    # copy: the next step rebuilds it and extends the other.
    pool = batch.pools[0]
    meta = AttentionMetadata.from_lists(
        block_tables=batch.tables,
        context_lens=batch.lens,
        query_lens=[2] * len(batch.lens),
        tokens_per_block=BS,
    )
    q = torch.randn(meta.slot_mapping.shape[0], HKV * GROUP, D, dtype=DTYPE)
    backend.attention(q, pool, meta)
    batch.step(backend)
    assert batch.counts(mirror) == (3, 5, 6)


def test_without_sequence_ids_rows_carry_over_by_position():
    backend = AttentionBackend()
    mirror = backend.mirror
    batch = _Batch(torch.Generator().manual_seed(6), [5, 2, 6], with_ids=False)
    batch.step(backend)
    batch.remove(0)  # every row shifts: nothing carries over
    batch.step(backend)
    assert batch.counts(mirror) == (4, 0, 0)
    batch.add(4)  # the rows before it keep their places
    batch.step(backend)
    assert batch.counts(mirror) == (4, 0, 2)


def test_preemption_and_a_forked_beam_are_read_from_the_pool():
    """A preempted sequence that comes back (same id, its tokens computed again into new
    blocks) and a forked beam (new id, shared full blocks, a copied partial block) are not
    carried over; the outputs still equal the gather path and the oracle."""
    backend = AttentionBackend()
    mirror = backend.mirror
    gen = torch.Generator().manual_seed(7)
    batch = _Batch(gen, [6, 3, 8])
    batch.step(backend)
    batch.fork(0)
    batch.step(backend)
    assert batch.counts(mirror) == (2, 0, 2) and mirror.rows_read == 2 * 3 + 2 * 1
    # Preempt row 1: its blocks are freed and the others step on without it; it comes
    # back under its id, its tokens computed again (here written straight into the pool)
    # into the same block ids, which the free list hands out first.
    sid, n = batch.ids[1], batch.lens[1]
    batch.remove(1)
    batch.step(backend)
    assert batch.counts(mirror) == (2, 0, 4) and mirror.rows_read == 8
    batch.add(n + 2)
    batch.ids[-1] = sid
    batch.step(backend)
    assert batch.counts(mirror) == (2, 0, 6) and mirror.rows_read == 8 + 2


def test_growing_past_the_headroom_keeps_the_rows():
    """Rows that outgrow the copy's keys move into a larger copy instead of a rebuild."""
    backend = AttentionBackend()
    mirror = backend.mirror
    batch = _Batch(torch.Generator().manual_seed(8), [3, 2], num_blocks=128)
    for _ in range(40):  # past HEADROOM_KEYS
        batch.step(backend)
    assert mirror.rebuilds == 2 and mirror.rows_read == 4


@pytest.mark.parametrize("host_tables", [True, False])
def test_a_replaced_block_is_read_again_even_when_lengths_follow_on(host_tables):
    """Same rows, each one token longer, but one row's table changed (a block copied for
    copy-on-write, or brought back from the host; in place in the live list the runtime
    hands over): its keys are read again."""
    backend = AttentionBackend()
    batch = _Batch(torch.Generator().manual_seed(2), [6, 6], host_tables=host_tables)
    batch.step(backend)
    old = batch.tables[1][0]
    new = batch.free.pop()
    for pool in batch.pools:
        pool[:, new] = pool[:, old]
        pool[:, old] = float("nan")
    batch.tables[1][0] = new
    batch.step(backend)
    assert batch.counts(backend.mirror) == (2, 0, 2) and backend.mirror.rows_read == 2 * 2 + 2


def test_a_batch_over_the_memory_bound_takes_the_gather_path():
    backend = AttentionBackend(mirror=DecodeMirror(max_bytes=64))
    batch = _Batch(torch.Generator().manual_seed(3), [4, 8])
    for _ in range(3):
        batch.step(backend)
    assert (backend.mirror.rebuilds, backend.mirror.extends) == (0, 0)


def test_windows_sinks_and_unstored_tokens_do_not_take_the_mirror():
    backend = AttentionBackend()
    batch = _Batch(torch.Generator().manual_seed(4), [5, 3])
    pool = batch.pools[0]
    meta = AttentionMetadata.from_lists(
        block_tables=batch.tables,
        context_lens=batch.lens,
        query_lens=[1, 1],
        tokens_per_block=BS,
        sliding_window=4,
    )
    q = torch.randn(2, HKV * GROUP, D, dtype=DTYPE)
    kv = torch.randn(2, HKV, D, dtype=DTYPE)
    backend.attention(q, pool, meta, sliding_window=4, key=kv, value=kv)
    meta.slot_mapping[0] = -1
    meta.sliding_window = None
    backend.attention(q, pool, meta, key=kv, value=kv)
    assert (backend.mirror.rebuilds, backend.mirror.extends) == (0, 0)


def test_rows_of_one_length_attend_without_a_mask_and_give_the_same_output():
    """Every row as long as the longest: no key to hide, so the plan holds no mask; the
    output still equals the gather path and the dense oracle (checked in ``step``), and a
    batch of unequal rows gets its mask back."""
    backend = AttentionBackend()
    batch = _Batch(torch.Generator().manual_seed(5), [6, 6, 6])
    for _ in range(3):
        batch.step(backend)
        last = backend.mirror._last
        assert last is not None and last.bias is None
    # two layers, rebuilt at the first step, then extended in place at the same key
    assert (backend.mirror.rebuilds, backend.mirror.extends) == (2, 4)
    batch.add(2)
    batch.step(backend)
    last = backend.mirror._last
    assert last is not None and last.bias is not None
    assert last.bias.shape == (4, 1, 1, 9)
    assert bool(last.bias[3, 0, 0, :2].eq(0).all()) and bool(last.bias[3, 0, 0, 2:].isinf().all())
