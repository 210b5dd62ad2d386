"""Multi-step decode windows (``num_scheduler_steps``) and their chaining, for ``Runtime``.

A window replays the captured decode graph of a batch of greedy rows k times with one
host round trip (``DecodeGraphs.prepare_window`` / ``launch_window``); a chained window is
planned and queued on the device before the host reads the tokens of the one in front of
it (``_chain``). ``DecodeWindows`` holds that logic for ``engine.runtime.Runtime``, which
inherits it and owns the state it reads (the scheduler, the KV manager, the graphs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.cuda_graphs import DecodeGraphs, LaunchedWindow
from engine.scheduler import Scheduler, SchedulerOutput
from engine.sequence import Sequence, SequenceStatus
from engine.step_timing import StepTimes, timed

if TYPE_CHECKING:  # types only: the runtime imports this module
    from engine.kv import KvCacheManager
    from engine.runtime import Request


@dataclass
class _Window:
    """A decode window on the device: its graphs, rows, steps per row (0: a padding
    row) and its launch, whose picks the host has not read yet."""

    graphs: DecodeGraphs
    seqs: list[Sequence]
    steps: list[int]
    launched: LaunchedWindow


class DecodeWindows:
    """The decode-window part of ``Runtime`` (a mixin: ``Runtime`` sets the attributes
    annotated here)."""

    graphs: DecodeGraphs | None
    graphs_off: str | None
    scheduler: Scheduler
    kv: KvCacheManager
    num_scheduler_steps: int
    num_decode_tokens: int
    windows: int  # multi-step decode windows run
    chain_windows: bool  # chain windows (see ``_chain``); False: one at a time
    chained: int  # windows queued behind another
    _inflight: _Window | None  # a chained window queued, not read yet
    _by_seq: dict[int, Request]

    def _take_tokens(self, req: Request, tokens: list[int], finished: bool) -> None:
        raise NotImplementedError  # the runtime's

    @property
    def windows_off(self) -> str | None:
        """Why decode steps never run in multi-step windows here, or None when they can
        (where a step is pure greedy decode and no request waits)."""
        if self.num_scheduler_steps < 2:
            return "num_scheduler_steps is 1"
        if self.graphs is None:
            return f"no CUDA graphs ({self.graphs_off})"
        return None

    def _window(self, out: SchedulerOutput) -> list[int] | None:
        """The decode steps of each scheduled row for a multi-step window, or None for one
        step. A window runs when the step is pure greedy decode through the graphs and no
        request waits (none is delayed by it); each row
        gets at most ``num_scheduler_steps`` tokens, never past its own limits, and slots
        for all of them (fresh blocks while the pool has them)."""
        graphs = self.graphs
        if graphs is None or self.scheduler.waiting:
            return None
        seqs = [e.seq for e in out.scheduled]
        if not graphs.fits(seqs, [e.num_new_tokens for e in out.scheduled]):
            return None
        for entry in out.scheduled:
            params = self._by_seq[entry.seq.seq_id].params
            if entry.is_prefill or params.beam_width > 1 or not params.greedy:
                return None
        most = self.num_scheduler_steps
        max_len = self.scheduler.config.max_seq_len
        room = graphs.max_blocks * self.kv.layout.tokens_per_block
        steps = []
        for seq in seqs:
            k = min(most, seq.max_new_tokens - seq.num_generated_tokens)
            if max_len is not None:
                k = min(k, max_len - len(seq))
            k = min(k, room - seq.num_computed_tokens)
            steps.append(self.kv.reserve_decode_window(seq, k) if k > 1 else 1)
        return steps if max(steps) > 1 else None

    def _run_window(
        self, out: SchedulerOutput, steps: list[int], timer: StepTimes | None
    ) -> list[Request]:
        """Launch a decode window of the scheduled rows, then go on as ``_advance``."""
        graphs = self.graphs
        assert graphs is not None
        seqs = [e.seq for e in out.scheduled]
        with timed(timer, "inputs"):
            entry = graphs.prepare_window(seqs, steps)
        with timed(timer, "model"):
            launched = graphs.launch_window(entry, len(seqs), max(steps))
        self.windows += 1
        return self._advance(_Window(graphs, seqs, steps, launched), timer)

    def _advance(self, current: _Window, timer: StepTimes | None) -> list[Request]:
        """Queue the window after ``current`` where one may run (``_chain``), then read
        ``current``'s tokens and feed them to its rows."""
        nxt = self._chain(current, timer) if self.chain_windows else None
        with timed(timer, "model"):
            picks = current.graphs.read_window(current.launched)
        touched = self._take_window(current, picks, timer)
        self._inflight = nxt
        self._settle_inflight()
        return touched

    def _settle_inflight(self) -> None:
        """Wait for and drop the chained window once none of its rows runs any more: they
        all stopped in the window before it, or were cancelled or released since. Nothing
        of it is needed then, and no later step would read it (the requests may all be
        done), so it must not outlive them."""
        window = self._inflight
        if window is not None and not any(
            k and seq.status is SequenceStatus.RUNNING
            for seq, k in zip(window.seqs, window.steps, strict=True)
        ):
            window.graphs.read_window(window.launched)
            self._inflight = None

    def _take_window(
        self, window: _Window, picks: list[list[int]], timer: StepTimes | None
    ) -> list[Request]:
        """Feed each row its tokens of a window as that many single steps would: a row
        that stops inside it (a stop token, its length) takes no later token, and the
        slots it wrote past its end are freed with its blocks."""
        touched: dict[int, Request] = {}
        with timed(timer, "bookkeeping"):
            rows = list(zip(*picks, strict=True))  # per sequence: its substeps' tokens
            for seq, row, k in zip(window.seqs, rows, window.steps, strict=True):
                req = self._by_seq.get(seq.seq_id)
                if not k or req is None:
                    continue  # a padding row, or a request released since
                taken, finished = self.scheduler.take_window(seq, list(row[:k]), req.stop_ids)
                if not taken:
                    continue  # cancelled since the window was planned
                touched[req.request_id] = req
                self.num_decode_tokens += taken
                self._take_tokens(req, list(row[:taken]), finished)
        return list(touched.values())

    def _chain(self, current: _Window, timer: StepTimes | None) -> _Window | None:
        """The next window of ``current``'s rows, planned and queued on the device before
        the host reads ``current``'s tokens, so that the device does not wait for the
        host's bookkeeping and scheduling between the two; or None (the next step is
        scheduled as usual).

        A chained window starts where ``current`` ends for each row: its first input is
        the row's last pick of ``current``, copied on the device. It runs only where the
        schedule after ``current`` would be a window of the same rows: no request waits,
        every running sequence is a row of ``current`` and got all its steps there (none
        is left behind), no sink bubble. Under an attention window, the blocks that leave
        it as ``current``'s tokens are marked computed are ones no later query reads (the
        chained window's queries come after them), and work that reuses them is queued
        behind the chained window on the device. A row whose length ends it
        inside ``current`` is a padding row; one that samples a stop token there is known
        only later, so its chained tokens are computed and dropped (and its slots freed
        with its blocks). A request that arrives meanwhile waits for the chained window to
        end (at most ``num_scheduler_steps`` decode steps)."""
        graphs = current.graphs
        layout = self.kv.layout
        if graphs is not self.graphs or self.scheduler.waiting or layout.bubble:
            return None
        most = self.num_scheduler_steps
        full = current.launched.steps
        live = [s for s in current.seqs if s.status is SequenceStatus.RUNNING]
        if sum(len(group) for group in self.scheduler.running.values()) != len(live):
            return None  # a running sequence outside this window would wait behind it
        max_len = self.scheduler.config.max_seq_len
        room = graphs.max_blocks * layout.tokens_per_block
        steps: list[int] = []
        with timed(timer, "schedule"):
            for seq, k in zip(current.seqs, current.steps, strict=True):
                if seq.status is not SequenceStatus.RUNNING:
                    steps.append(0)
                    continue
                n = min(most, seq.max_new_tokens - seq.num_generated_tokens - k)
                if max_len is not None:
                    n = min(n, max_len - len(seq) - k)
                n = min(n, room - seq.num_computed_tokens - k)
                if n <= 0:
                    steps.append(0)  # its length ends it inside ``current``
                    continue
                if k != full:
                    return None  # a row cut short (the pool): single steps resume
                steps.append(self.kv.reserve_decode_window(seq, n, ahead=k))
        if max(steps) < 2:
            return None
        with timed(timer, "inputs"):
            entry = graphs.prepare_window(current.seqs, steps, ahead=full)
        with timed(timer, "model"):
            launched = graphs.launch_window(
                entry, len(current.seqs), max(steps), after=current.launched
            )
        self.windows += 1
        self.chained += 1
        return _Window(graphs, current.seqs, steps, launched)
