"""CUDA graphs for pure-decode steps: the whole forward, replayed from static buffers.

A decode step of a small model on a GPU is launch-bound: every layer issues a dozen small
kernels, and the host spends longer issuing them than the GPU running them. ``DecodeGraphs``
captures the forward of a decode step (embedding, every layer with its K/V store and paged
attention over the block table, the final norm and the LM head) once per padded batch size
of a ladder (1, 2, 4, 8, ... up to ``max_batch_size``, which is always a rung) and replays it.

Static inputs. One int64 device buffer holds, for a captured size ``b``, the token ids,
positions, slots and context lengths (``b`` each) and the block tables (``b`` rows of
``max_blocks`` entries, ``max_blocks`` enough for ``max_seq_len``). Each step fills the
same layout in a pinned host buffer and copies it with ONE non-blocking copy; the graph
then replays. Rows past the real sequences are padding: token 0, position 0, slot -1 (the
store kernel skips it), context length 0 (the decode kernel reads no key and writes zeros)
and a table of ``-1``; each row of every op depends only on its own row, so padding never
reaches a real row, and the caller reads only the real rows' logits.

Inside the captured region nothing reads a device value on the host: the store is the
Triton kernel that skips slot -1 on the device, the decode kernel's grid is ``(b, heads)``
and its loop bounds come from the context lengths it loads, RoPE reads the positions
buffer, and ``stores_every_token`` is set on the host. Sampling stays outside: it reads
the logits of the real rows after the replay.

What is captured (graphs "apply") and what falls back to the eager forward:

- graphs apply on CUDA with the Triton decode kernel, one process (no tensor parallelism),
  no sink bubble, a RoPE that does not depend on the longest position (not ``dynamic``);
  ``graphs_off_reason`` says why not otherwise;
- a step is replayed when every scheduled sequence decodes one token, the batch fits the
  largest rung and every block table fits ``max_blocks``; other steps run eagerly.

Each size is captured the first time a step needs it, or all at once by ``capture_all``
(a warm-up forward on a side stream, then the capture, all on padding rows, which store
nothing), sharing one memory pool. ``replayed`` counts the replayed steps per rung.
With ``capture=False`` the same static-buffer forward runs without a graph: that is how
the CPU tests check that the capture-ready step gives the normal path's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceOf
from dataclasses import dataclass

import numpy as np
import torch

from engine.kernels import AttentionMetadata, triton_paged
from engine.kernels.select import TRITON
from engine.kv.layout import NULL_BLOCK, ceil_div
from engine.model import LlamaForCausalLM
from engine.sequence import Sequence

__all__ = ["DecodeGraphs", "LaunchedWindow", "batch_ladder", "graphs_off_reason"]

# The fields of one step, in the order of the static buffer (block tables after them).
_FIELDS = 4  # ids, positions, slots, context lengths


def batch_ladder(max_batch_size: int) -> tuple[int, ...]:
    """Captured batch sizes: powers of two below ``max_batch_size``, then itself."""
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    sizes = []
    size = 1
    while size < max_batch_size:
        sizes.append(size)
        size *= 2
    sizes.append(max_batch_size)
    return tuple(sizes)


def graphs_off_reason(
    model: object, kv_caches: SequenceOf[torch.Tensor], sink_bubble: int
) -> str | None:
    """Why decode steps cannot be captured for this model and pool, or None if they can."""
    if not kv_caches or kv_caches[0].device.type != "cuda":
        return "not a CUDA device"
    if not isinstance(model, LlamaForCausalLM):
        return "tensor-parallel ranks run their own forwards"
    if model.backend.decode != TRITON:
        return "the decode backend is not the Triton kernel"
    pool = kv_caches[0]
    dtype = model.lm_head.weight.dtype  # the queries' dtype
    probe = torch.empty((1, 1, model.args.head_dim), dtype=dtype, device=pool.device)
    if not triton_paged.supports(pool, probe, prefill=False):
        return "the Triton decode kernel does not cover this pool (block size, dtype, an fp8 pool below sm_89)"
    if not triton_paged.supports_store(pool, probe):
        return "the Triton KV store does not cover this pool"
    if sink_bubble:
        return "a sink bubble (the Triton kernels do not mask it)"
    scaling = model.args.rope_scaling
    if scaling is not None and scaling.get("rope_type") == "dynamic":
        return "dynamic RoPE reads the longest position on the host"
    return None


@dataclass
class _Graph:
    """One captured size: its static views, its graph (None: run without capture), output."""

    size: int
    ids: torch.Tensor
    positions: torch.Tensor
    meta: AttentionMetadata
    graph: torch.cuda.CUDAGraph | None = None
    logits: torch.Tensor | None = None


@dataclass
class LaunchedWindow:
    """A decode window queued on the device: its rung, rows and substeps, the host buffer
    its picks are copied into, and the event after that copy (None off CUDA)."""

    size: int
    num_seqs: int
    steps: int
    host: torch.Tensor
    done: torch.cuda.Event | None


class DecodeGraphs:
    """Captured decode forwards of ``model`` over the pool ``kv_caches``, one per rung."""

    def __init__(
        self,
        model: LlamaForCausalLM,
        kv_caches: SequenceOf[torch.Tensor],
        *,
        max_batch_size: int,
        max_seq_len: int,
        tokens_per_block: int,
        sliding_window: int | None = None,
        sink_tokens: int = 0,
        capture: bool = True,
        window_steps: int = 1,
    ) -> None:
        self.model, self.kv_caches = model, list(kv_caches)
        self.device = self.kv_caches[0].device
        self.capture = capture and self.device.type == "cuda"
        self.sizes = batch_ladder(max_batch_size)
        self.tokens_per_block = tokens_per_block
        self.max_blocks = max(1, ceil_div(max_seq_len, tokens_per_block))
        self.sliding_window, self.sink_tokens = sliding_window, sink_tokens
        if window_steps < 1:
            raise ValueError(f"window_steps must be >= 1, got {window_steps}")
        self.window_steps = window_steps
        # After the step fields: the positions, slots and context lengths of a decode
        # window's later substeps (see run_window), 3 rows per substep.
        self._window_at = self.sizes[-1] * (_FIELDS + self.max_blocks)
        largest = self._window_at + 3 * self.sizes[-1] * (window_steps - 1)
        self._device_buf = torch.zeros(largest, dtype=torch.int64, device=self.device)
        self._picks_dev = torch.zeros(
            window_steps * self.sizes[-1], dtype=torch.int64, device=self.device
        )
        pin = self.device.type == "cuda"
        # Two host buffers of picks: a chained window copies its picks back while the host
        # still reads the previous window's (``launch_window`` alternates them).
        self._picks_host = [
            torch.zeros(window_steps * self.sizes[-1], dtype=torch.int64, pin_memory=pin)
            for _ in range(2)
        ]
        self._launches = 0
        self._host_buf = torch.zeros(largest, dtype=torch.int64, pin_memory=pin)
        self._host = self._host_buf.numpy()
        self._copied: torch.cuda.Event | None = None
        self._graphs: dict[int, _Graph] = {}
        self._pool = torch.cuda.graph_pool_handle() if self.capture else None
        self.replays = 0  # steps served by a static forward (captured or not)
        self.replayed: dict[int, int] = {}  # those steps per rung

    # -- which steps fit ------------------------------------------------------------------

    def size_for(self, num_seqs: int) -> int | None:
        """The smallest rung holding ``num_seqs`` sequences, or None (run eagerly)."""
        for size in self.sizes:
            if size >= num_seqs:
                return size
        return None

    def fits(self, seqs: SequenceOf[Sequence], query_lens: SequenceOf[int]) -> bool:
        """Whether a step of these sequences (their new-token counts) can be replayed."""
        if not seqs or self.size_for(len(seqs)) is None:
            return False
        if any(n != 1 for n in query_lens):
            return False
        return all(len(seq.block_table) <= self.max_blocks for seq in seqs)

    def capture_all(self) -> tuple[int, ...]:
        """Build (capture, on CUDA) every rung not built yet, so that no later step pays
        for it; returns the rungs it built. Call it between steps, not inside one."""
        new = tuple(size for size in self.sizes if size not in self._graphs)
        for size in new:
            self._build(size)
        return new

    @property
    def built(self) -> tuple[int, ...]:
        """The rungs built so far, smallest first."""
        return tuple(sorted(self._graphs))

    # -- one step -------------------------------------------------------------------------

    def run(self, seqs: SequenceOf[Sequence]) -> torch.Tensor:
        """Logits ``[len(seqs), vocab]`` of one decode token per sequence (their next
        uncomputed token), through the static forward of the smallest rung that fits.
        The returned tensor is the graph's output: read it before the next ``run``."""
        return self.replay(self.prepare(seqs), len(seqs))

    def prepare(self, seqs: SequenceOf[Sequence]) -> _Graph:
        """Capture the rung if it is new, and copy the step into its static buffer."""
        n = len(seqs)
        size = self.size_for(n)
        if size is None:
            raise ValueError(f"{n} sequences exceed the largest captured batch {self.sizes[-1]}")
        entry = self._graphs.get(size) or self._build(size)
        self._fill(seqs, size)
        return entry

    def replay(self, entry: _Graph, num_seqs: int) -> torch.Tensor:
        """Run the prepared step; the logits of its first ``num_seqs`` (real) rows."""
        if entry.graph is not None:
            entry.graph.replay()
        else:
            entry.logits = self._forward(entry)
        self.replays += 1
        self.replayed[entry.size] = self.replayed.get(entry.size, 0) + 1
        assert entry.logits is not None
        return entry.logits[:num_seqs]

    def run_window(self, seqs: SequenceOf[Sequence], steps: SequenceOf[int]) -> list[list[int]]:
        """Greedy decode of up to ``max(steps)`` tokens per sequence with one host round
        trip: row ``i`` runs substeps ``j < steps[i]`` (later ones are padding rows: slot
        -1, context 0). Substep 0 reads each sequence's next uncomputed token; substep
        ``j`` reads the argmax of substep ``j - 1``, copied on the device. Every slot the
        window writes must already be in the block tables. Returns the picks, ``[j][i]``:
        substep ``j``'s token of row ``i`` (meaningful for ``j < steps[i]``)."""
        return self.replay_window(self.prepare_window(seqs, steps), len(seqs), max(steps))

    def prepare_window(
        self, seqs: SequenceOf[Sequence], steps: SequenceOf[int], ahead: int = 0
    ) -> _Graph:
        """Capture the rung if it is new, and copy the window's substeps to the device.

        ``ahead`` > 0: the window of a chain (``launch_window(..., after=)``), which starts
        ``ahead`` positions past each sequence's computed tokens, the previous window's
        tokens not yet on the host; a row of 0 steps is a padding row throughout."""
        n, k = len(seqs), max(steps, default=0)
        least = 0 if ahead else 1
        if len(steps) != n or min(steps, default=0) < least or not 1 <= k <= self.window_steps:
            raise ValueError(
                f"window steps {list(steps)} for {n} sequences ({least} to"
                f" {self.window_steps} each)"
            )
        size = self.size_for(n)
        if size is None:
            raise ValueError(f"{n} sequences exceed the largest captured batch {self.sizes[-1]}")
        entry = self._graphs.get(size) or self._build(size)
        self._fill(seqs, size, steps, ahead)
        return entry

    def replay_window(self, entry: _Graph, num_seqs: int, num_steps: int) -> list[list[int]]:
        """Replay the prepared window's ``num_steps`` substeps; the picks, ``[j][i]``."""
        return self.read_window(self.launch_window(entry, num_seqs, num_steps))

    def launch_window(
        self,
        entry: _Graph,
        num_seqs: int,
        num_steps: int,
        after: LaunchedWindow | None = None,
    ) -> LaunchedWindow:
        """Queue the prepared window's ``num_steps`` substeps and the copy of their picks
        to the host, without waiting for them (``read_window`` waits). ``after``: the
        window this one continues, launched before it on the same rung; substep 0 then
        reads its last substep's picks on the device."""
        size = entry.size
        picks = self._picks_dev[: num_steps * size].view(num_steps, size)
        fields = self._device_buf[size : _FIELDS * size]  # positions | slots | lengths
        at = self._window_at
        if after is not None:
            if after.size != size:
                raise ValueError(f"a chained window of rung {size} after one of {after.size}")
            entry.ids.copy_(self._picks_dev[(after.steps - 1) * size : after.steps * size])
        for j in range(num_steps):
            if j:
                entry.ids.copy_(picks[j - 1])
                fields.copy_(self._device_buf[at + 3 * size * (j - 1) : at + 3 * size * j])
            logits = self.replay(entry, size)
            torch.argmax(logits, dim=-1, out=picks[j])
        host = self._picks_host[self._launches % 2][: num_steps * size]
        self._launches += 1
        host.copy_(picks.reshape(-1), non_blocking=host.is_pinned())
        done = None
        if self.device.type == "cuda":
            done = torch.cuda.Event()
            done.record()
        return LaunchedWindow(size, num_seqs, num_steps, host, done)

    def read_window(self, launched: LaunchedWindow) -> list[list[int]]:
        """Wait for a launched window's picks (not for anything queued after it); its
        picks, ``[j][i]``: substep ``j``'s token of row ``i``."""
        if launched.done is not None:
            launched.done.synchronize()
        size, steps = launched.size, launched.steps
        return launched.host.view(steps, size)[:, : launched.num_seqs].tolist()

    def _fill(
        self,
        seqs: SequenceOf[Sequence],
        size: int,
        steps: SequenceOf[int] | None = None,
        ahead: int = 0,
    ) -> None:
        """Write the step into the pinned host buffer, then one copy to the device (rows
        ``ahead`` positions on, their ids left to the device; a row of 0 steps: padding)."""
        if self._copied is not None:
            self._copied.synchronize()  # the previous step's copy has read the buffer
        tpb, width, n = self.tokens_per_block, self.max_blocks, len(seqs)
        host = self._host
        ids, pos = host[0:size], host[size : 2 * size]
        slots, ctx = host[2 * size : 3 * size], host[3 * size : 4 * size]
        tables = host[4 * size : (4 + width) * size].reshape(size, width)
        for i, seq in enumerate(seqs):
            table = seq.block_table
            tables[i, : len(table)] = table
            tables[i, len(table) :] = NULL_BLOCK
            if steps is not None and steps[i] == 0:
                ids[i], pos[i], slots[i], ctx[i] = 0, 0, -1, 0
                continue
            start = seq.num_computed_tokens + ahead
            block = table[start // tpb]
            if block < 0:
                raise IndexError(f"position {start} maps to a released block")
            ids[i] = 0 if ahead else seq.token_ids[start]
            pos[i] = start
            slots[i] = block * tpb + start % tpb
            ctx[i] = start + 1
        ids[n:] = 0
        pos[n:] = 0
        slots[n:] = -1
        ctx[n:] = 0
        tables[n:] = NULL_BLOCK
        count = (_FIELDS + width) * size
        src = self._host_buf[:count]
        self._device_buf[:count].copy_(src, non_blocking=src.is_pinned())
        if steps is not None and max(steps, default=1) > 1:
            self._fill_window(seqs, size, steps, ahead)
        if self.device.type == "cuda":
            self._copied = torch.cuda.Event()
            self._copied.record()

    def _fill_window(
        self, seqs: SequenceOf[Sequence], size: int, steps: SequenceOf[int], ahead: int = 0
    ) -> None:
        """The later substeps' positions, slots and context lengths (one copy): row ``i``
        at substep ``j`` sits at position ``start + j`` while ``j < steps[i]``, and is a
        padding row after."""
        n, k, tpb = len(seqs), max(steps), self.tokens_per_block
        starts = np.zeros(size, dtype=np.int64)
        starts[:n] = [seq.num_computed_tokens + ahead for seq in seqs]
        limit = np.zeros(size, dtype=np.int64)
        limit[:n] = steps
        width = self.max_blocks
        tables = self._host[_FIELDS * size : (_FIELDS + width) * size].reshape(size, width)
        sub = np.arange(1, k, dtype=np.int64)[:, None]  # substeps 1 .. k-1
        pos = starts[None, :] + sub
        live = sub < limit[None, :]
        index = np.where(live, pos // tpb, 0)
        blocks = np.take_along_axis(tables, index.T, axis=1).T
        if (blocks[live] < 0).any():
            raise IndexError("a decode window position maps to a block the table lacks")
        at, count = self._window_at, 3 * size * (k - 1)
        out = self._host[at : at + count].reshape(k - 1, 3, size)
        out[:, 0] = np.where(live, pos, 0)
        out[:, 1] = np.where(live, blocks * tpb + pos % tpb, -1)
        out[:, 2] = np.where(live, pos + 1, 0)
        src = self._host_buf[at : at + count]
        self._device_buf[at : at + count].copy_(src, non_blocking=src.is_pinned())

    # -- building a rung ------------------------------------------------------------------

    def _views(self, size: int) -> _Graph:
        buf, width = self._device_buf, self.max_blocks
        meta = AttentionMetadata(
            slot_mapping=buf[2 * size : 3 * size],
            block_tables=buf[4 * size : (4 + width) * size].view(size, width),
            context_lens=buf[3 * size : 4 * size],
            query_start_loc=torch.arange(size + 1, dtype=torch.int64, device=self.device),
            is_prefill=False,
            max_query_len=1,
            sliding_window=self.sliding_window,
            sink_tokens=self.sink_tokens,
            sink_bubble=0,
        )
        return _Graph(size, buf[0:size], buf[size : 2 * size], meta)

    def _forward(self, entry: _Graph) -> torch.Tensor:
        meta = entry.meta
        # Padding rows hold slot -1: never let a backend look at the slots on the host.
        meta.plan_cache.clear()
        meta.plan_cache["stores_every_token"] = False
        return self.model(entry.ids, entry.positions, self.kv_caches, meta, all_logits=True)

    @torch.inference_mode()
    def _build(self, size: int) -> _Graph:
        entry = self._views(size)
        self._graphs[size] = entry
        if not self.capture:
            return entry
        # Capture on padding rows only: no row stores K/V or reads the pool.
        self._fill([], size)
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            for _ in range(2):  # compile the kernels and set up cuBLAS outside the capture
                self._forward(entry)
        torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            entry.logits = self._forward(entry)
        entry.graph = graph
        return entry
