"""The runtime a solved EngineConfig drives: KV pool sizing, the step loop, sampling.

``Runtime(config, model, device)`` reads ``config`` (a solved ``EngineConfig``) and nothing
else: it sizes the pool, builds the ``KvCacheManager`` and the ``Scheduler``, and on each
``step()`` packs the scheduled work (prompt chunks continuing a cached prefix, decodes)
into ``input_ids``, ``positions`` and ``AttentionMetadata``, runs the model, samples and
feeds the tokens back. Preempted requests are recomputed from their tokens; beam search
forks sequences in the KV cache; ``abort()`` cancels a request.

Pool sizing and the translation of the solved config into the KV and scheduler specs
live in ``engine.pool``.

Beam search under MAX_UTILIZATION: a preempted beam group keeps all its beams and their
scores; the scheduler recomputes their KV and resumes the group at a decode step, so the
beams are the ones an uninterrupted run gives.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch

from constraints.schema import EngineConfig
from engine.cuda_graphs import DecodeGraphs, graphs_off_reason
from engine.decode_windows import DecodeWindows
from engine.front_door import UnknownRequest, check_prompt
from engine.kernels import AttentionMetadata
from engine.kv import KvCacheManager, slots_for
from engine.kv.layout import NULL_BLOCK
from engine.model import LlamaForCausalLM
from engine.parallel.group import TensorParallelModel
from engine.pool import (
    kv_spec,
    scheduler_config,
    size_pool,
)
from engine.sampling import InvalidSamplingParams, SamplingParams, beam_step, sample_token
from engine.scheduler import Scheduler, SchedulerOutput
from engine.sequence import Sequence
from engine.step_timing import StepTimes, timed

# the errors live in engine.errors; importable from here as before
from .errors import RequestRejected as RequestRejected
from .errors import RuntimeStalled as RuntimeStalled


@dataclass
class Beam:
    """A finished or live beam-search hypothesis: generated tokens and their log-prob."""

    token_ids: list[int]
    cumulative_logprob: float


@dataclass
class Request:
    """One request's state. ``seqs`` are its live sequences (one, or one per beam)."""

    request_id: int
    prompt: list[int]
    params: SamplingParams
    stop_ids: frozenset[int]
    generator: torch.Generator | None
    seqs: list[Sequence]
    scores: list[float] = field(default_factory=lambda: [0.0])
    hypotheses: list[Beam] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)  # generated (best beam when done)
    finish_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def beams(self) -> list[Beam]:
        ranked = sorted(self.hypotheses, key=lambda b: -b.cumulative_logprob)
        return ranked[: self.params.beam_width]


class Runtime(DecodeWindows):
    """Drives one model over a paged KV pool, as the solved ``config`` says."""

    def __init__(
        self,
        config: EngineConfig,
        model: LlamaForCausalLM | TensorParallelModel,
        device: torch.device | str,
        *,
        free_memory: int | None = None,
        eos_token_ids: tuple[int, ...] = (),
        time_steps: bool = False,
        enforce_eager: bool = False,
        num_scheduler_steps: int = 1,
    ) -> None:
        self.config, self.model, self.device = config, model, torch.device(device)
        remote = getattr(model, "kv_pool", None)  # a tensor-parallel group sizes its own
        if remote is None:
            self.pool = size_pool(config, model.args, self.device, free_memory)
            self.kv = KvCacheManager(kv_spec(config, model.args, self.device, self.pool))
        else:
            self.pool, spec, storage = remote(config, self.device, free_memory)
            self.kv = KvCacheManager(spec, storage)
        self.scheduler = Scheduler(scheduler_config(config), self.kv)
        self.eos_token_ids = tuple(eos_token_ids)
        self.requests: dict[int, Request] = {}
        self._by_seq: dict[int, Request] = {}
        self._ids = itertools.count()
        self.num_prefill_tokens = 0  # tokens computed in context steps (reuse saves these)
        self.num_decode_tokens = 0
        self._plans: dict[int, list[tuple[Sequence, int, float]]] = {}
        # The last step's schedule (what ran: prompt chunks, decodes), for step profiles.
        self.last_output: SchedulerOutput | None = None
        self.timer: StepTimes | None = StepTimes(device=self.device) if time_steps else None
        # CUDA graphs for pure-decode steps (engine.cuda_graphs); None: every step is eager,
        # and ``graphs_off`` says why.
        self.graphs: DecodeGraphs | None = None
        self._picks: torch.Tensor | None = None  # pinned host buffer of greedy picks (CUDA)
        self.graphs_off = "enforce_eager" if enforce_eager else None
        if self.graphs_off is None:
            self.graphs_off = graphs_off_reason(model, self.kv.storage.kv, self.kv.layout.bubble)
        if self.graphs_off is None:
            self.graphs = self.new_graphs(window_steps=num_scheduler_steps)
        # Decode steps per scheduler call (vLLM's ``num_scheduler_steps``): a batch of
        # greedy decodes replays its graph this many times with one host round trip.
        self.num_scheduler_steps = num_scheduler_steps
        self.windows = 0  # multi-step decode windows run
        # Chained windows: the next window is planned and queued on the device before the
        # host reads the current one's tokens (see ``_chain``); False: one at a time.
        self.chain_windows = True
        self.chained = 0  # windows queued behind another
        self._inflight = None  # a chained window queued, not read yet

    def new_graphs(
        self,
        *,
        capture: bool = True,
        window_steps: int = 1,
        max_batch_size: int | None = None,
        max_seq_len: int | None = None,
    ) -> DecodeGraphs:
        """A static decode step (``engine.cuda_graphs``) over this runtime's model and
        pool, with its build limits (or the ones given), its attention window and sinks;
        captured on CUDA unless ``capture`` is False (on a CPU it always runs uncaptured)."""
        model = self.model
        assert isinstance(model, LlamaForCausalLM)
        build = self.config.build_config
        spec = self.kv.spec
        return DecodeGraphs(
            model,
            self.kv.storage.kv,
            max_batch_size=max_batch_size or build.max_batch_size,
            max_seq_len=max_seq_len or build.max_seq_len or model.args.max_position_embeddings,
            tokens_per_block=self.kv.layout.tokens_per_block,
            sliding_window=spec.max_attention_window,
            sink_tokens=spec.sink_token_length,
            capture=capture,
            window_steps=window_steps,
        )

    @property
    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished

    def add_request(self, prompt: list[int], params: SamplingParams) -> Request:
        """Queue a prompt of token ids; raises ``RequestRejected`` if it can never run and
        ``InvalidPrompt`` / ``InvalidSamplingParams`` for bad input, before queuing it."""
        if not isinstance(params, SamplingParams):
            raise InvalidSamplingParams("params", params, "expected SamplingParams")
        prompt = check_prompt(prompt, self.model.args.vocab_size)
        build = self.config.build_config
        if params.beam_width > build.max_beam_width:
            raise RequestRejected(
                "build_config.max_beam_width", build.max_beam_width, params.beam_width
            )
        if len(prompt) > build.max_input_len:
            raise RequestRejected("build_config.max_input_len", build.max_input_len, len(prompt))
        stops = set(params.stop_token_ids)
        if not params.ignore_eos:
            stops.update(self.eos_token_ids)
        rid = next(self._ids)
        seq = Sequence(
            seq_id=next(self._ids),
            token_ids=list(prompt),
            max_new_tokens=params.max_tokens,
            beam_width=params.beam_width,
        )
        req = Request(
            rid, list(prompt), params, frozenset(stops), params.make_generator(self.device), [seq]
        )
        self.scheduler.add(seq)
        self.requests[rid] = req
        self._by_seq[seq.seq_id] = req
        return req

    def abort(self, request_id: int) -> None:
        """Cancel a request now and free its blocks (a no-op if it already finished)."""
        req = self.requests.get(request_id) if isinstance(request_id, int) else None
        if req is None:
            raise UnknownRequest(request_id)
        if not req.finished:
            self._close(req, "aborted")
            self._settle_inflight()

    def release(self, request_id: int) -> None:
        """Forget a request (aborting it first if it still runs)."""
        req = self.requests.pop(request_id, None)
        if req is None:
            return
        if not req.finished:
            self._close(req, "aborted")
            self._settle_inflight()
        self._by_seq = {k: v for k, v in self._by_seq.items() if v is not req}

    def _close(self, req: Request, reason: str) -> None:
        """Finish a request; for beam search ``reason`` "done" becomes the best beam's."""
        for seq in req.seqs:
            if not seq.is_finished:
                self.scheduler.abort(seq.seq_id)
        if req.params.beam_width > 1:
            for seq, score in zip(req.seqs, req.scores, strict=True):
                req.hypotheses.append(Beam(seq.generated_token_ids, score))
            best = req.beams
            req.token_ids = list(best[0].token_ids) if best else []
            if reason == "done":
                ends_in_stop = bool(req.token_ids) and req.token_ids[-1] in req.stop_ids
                reason = "stop" if ends_in_stop else "length"
        req.seqs = []
        req.finish_reason = reason

    # -- one step --------------------------------------------------------------------

    def step(self) -> list[Request]:
        """Run one scheduler step; returns the requests that got tokens or finished."""
        timer = self.timer
        if timer is None:
            return self._step(None)
        timer.steps += 1
        return self._step(timer)

    def _step(self, timer: StepTimes | None) -> list[Request]:
        if self._inflight is not None:  # a chained window: this step reads it
            current, self._inflight = self._inflight, None
            return self._advance(current, timer)
        with timed(timer, "schedule"):
            out = self.scheduler.schedule()
        self.last_output = out
        if not out.scheduled:
            sched = self.scheduler
            if sched.waiting and not sched.running:
                raise RuntimeStalled(len(sched.waiting), self.kv.num_free_blocks)
            return []
        graphs = self.graphs
        steps = self._window(out) if self.num_scheduler_steps > 1 else None
        if steps is not None:
            return self._run_window(out, steps, timer)
        if graphs is not None and graphs.fits(
            [e.seq for e in out.scheduled], [e.num_new_tokens for e in out.scheduled]
        ):
            with timed(timer, "inputs"):
                for e in out.scheduled:
                    if e.is_prefill:
                        self.num_prefill_tokens += 1
                    else:
                        self.num_decode_tokens += 1
                entry = graphs.prepare([e.seq for e in out.scheduled])
            with timed(timer, "model"):
                logits = graphs.replay(entry, len(out.scheduled))
        else:
            with timed(timer, "inputs"):
                ids, positions, meta = self._inputs(out)
                meta.timer = timer
            with timed(timer, "model"):
                logits = self.model(ids, positions, self.kv.storage.kv, meta)
        with timed(timer, "sampling"):
            touched, sampled = self._sample(out, logits)
        with timed(timer, "bookkeeping"):
            finished = {s.seq_id for s in self.scheduler.on_step_done(out, sampled)}
            for req in touched.values():
                self._after_tokens(req, sampled, finished)
        return list(touched.values())

    def _sample(
        self, out: SchedulerOutput, logits: torch.Tensor
    ) -> tuple[dict[int, Request], dict[int, int]]:
        """One token per sequence that needs one: every greedy row in one ``argmax``,
        seeded sampling and beam search per request."""
        rows = {e.seq.seq_id: i for i, e in enumerate(out.scheduled)}
        touched: dict[int, Request] = {}
        sampled: dict[int, int] = {}
        greedy: list[tuple[int, int]] = []  # (seq_id, row)
        for seq in out.needs_token:
            req = self._by_seq[seq.seq_id]
            if req.request_id in touched:
                continue  # a beam group is handled once, for all its beams
            touched[req.request_id] = req
            if req.params.beam_width > 1:
                live = [s for s in req.seqs if s.seq_id in rows]
                index = torch.tensor([rows[s.seq_id] for s in live], device=logits.device)
                self._beam_step(req, live, logits.index_select(0, index).float(), sampled)
            elif req.params.greedy:
                greedy.append((seq.seq_id, rows[seq.seq_id]))
            else:
                row = logits[rows[seq.seq_id]].float()
                sampled[seq.seq_id] = sample_token(row, req.params, req.generator)
        if greedy:
            if len(greedy) == logits.shape[0]:
                picked = logits.argmax(dim=-1)
            else:
                index = torch.tensor([r for _, r in greedy], device=logits.device)
                picked = logits.index_select(0, index).argmax(dim=-1)
            for (seq_id, _), token in zip(greedy, self._to_host(picked), strict=True):
                sampled[seq_id] = token
        return touched, sampled

    def _to_host(self, picked: torch.Tensor) -> list[int]:
        """The greedy picks as host ints. On CUDA: one non-blocking copy into a pinned
        buffer, then a wait on the stream (the step's one necessary sync); ``tolist`` on a
        device tensor would stage through pageable memory instead."""
        if picked.device.type != "cuda":
            return picked.tolist()
        n = picked.numel()
        if self._picks is None or self._picks.numel() < n:
            size = max(n, self.config.build_config.max_batch_size)
            self._picks = torch.empty(size, dtype=torch.int64, pin_memory=True)
        host = self._picks[:n]
        host.copy_(picked, non_blocking=True)
        torch.cuda.current_stream(picked.device).synchronize()
        return host.tolist()

    def _inputs(self, out: SchedulerOutput) -> tuple[torch.Tensor, torch.Tensor, AttentionMetadata]:
        """Pack the step: token ids, positions and the attention metadata, built from host
        lists in one tensor each."""
        layout = self.kv.layout
        tpb = layout.tokens_per_block
        plain = layout.bubble == 0
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        tables: list[list[int]] = []
        context_lens: list[int] = []
        starts = [0]
        for seq, n, is_prefill in out.scheduled:
            start = seq.num_computed_tokens
            table = seq.block_table
            if n == 1 and plain:
                ids.append(seq.token_ids[start])
                positions.append(start)
                block = table[start // tpb]
                if block < 0:
                    raise IndexError(f"position {start} maps to a released block")
                slots.append(block * tpb + start % tpb)
            else:
                ids.extend(seq.token_ids[start : start + n])
                positions.extend(range(start, start + n))
                slots.extend(slots_for(layout, table, start, n))
            if is_prefill:
                self.num_prefill_tokens += n
            else:
                self.num_decode_tokens += n
            tables.append(table)
            context_lens.append(start + n)
            starts.append(starts[-1] + n)
        width = max(1, max(len(t) for t in tables))
        n, m = len(ids), len(tables)
        # Every index tensor of the step from one host buffer in one copy (pinned, not
        # blocking the host, on CUDA): ids, positions, slots | lengths, starts | tables.
        flat = ids + positions + slots + context_lens + starts
        for t in tables:
            flat.extend(t)
            flat.extend([NULL_BLOCK] * (width - len(t)))
        host = torch.tensor(flat, dtype=torch.int64)
        buf = host
        if self.device.type == "cuda":
            buf = host.pin_memory().to(self.device, non_blocking=True)
        elif host.device != self.device:
            buf = host.to(self.device)
        ctx_at = 3 * n
        max_q = max(b - a for a, b in itertools.pairwise(starts))
        meta = AttentionMetadata(
            slot_mapping=buf[2 * n : 3 * n],
            block_tables=buf[ctx_at + 2 * m + 1 :].view(m, width),
            context_lens=buf[ctx_at : ctx_at + m],
            query_start_loc=buf[ctx_at + m : ctx_at + 2 * m + 1],
            is_prefill=max_q != 1,
            max_query_len=max_q,
            sliding_window=self.kv.spec.max_attention_window,
            sink_tokens=self.kv.spec.sink_token_length,
            sink_bubble=layout.bubble,
        )
        # What the backends would otherwise read back from the device, known here.
        meta.plan_cache["stores_every_token"] = min(slots) >= 0
        meta.plan_cache["host_lens"] = (context_lens, starts)
        meta.plan_cache["seq_ids"] = [entry[0].seq_id for entry in out.scheduled]
        meta.plan_cache["host_tables"] = tables  # each row its sequence's live table
        return buf[0:n], buf[n : 2 * n], meta

    def _beam_step(
        self, req: Request, live: list[Sequence], logits: torch.Tensor, sampled: dict[int, int]
    ) -> None:
        """Choose the next beams; keep parents that continue, abort the rest, and remember
        which extra children to fork once the parents hold their new token."""
        scores = [req.scores[req.seqs.index(s)] for s in live]
        step = beam_step(logits, scores, req.params.beam_width, req.stop_ids)
        for cand in step.finished:
            parent = live[cand.parent]
            req.hypotheses.append(Beam(parent.generated_token_ids + [cand.token], cand.score))
        plan: list[tuple[Sequence, int, float]] = []
        used: set[int] = set()
        for cand in step.next_beams:
            parent = live[cand.parent]
            if parent.seq_id not in used:
                used.add(parent.seq_id)
                sampled[parent.seq_id] = cand.token
            plan.append((parent, cand.token, cand.score))
        for seq in live:
            if seq.seq_id not in used:
                self.scheduler.abort(seq.seq_id)
        req.seqs, req.scores = [], []
        self._plans[req.request_id] = plan

    def _after_tokens(self, req: Request, sampled: dict[int, int], finished: set[int]) -> None:
        if req.params.beam_width > 1:
            self._fork_beams(req, finished)
            return
        seq = req.seqs[0]
        self._take_tokens(req, [sampled[seq.seq_id]], seq.seq_id in finished)

    def _take_tokens(self, req: Request, tokens: list[int], finished: bool) -> None:
        """A single-beam request's new tokens (one step's, or a window's up to where it
        stops): it ends with "stop" on a stop token, with "length" when the scheduler
        finished its sequence."""
        req.token_ids.extend(tokens)
        if tokens[-1] in req.stop_ids:
            self._close(req, "stop")
        elif finished:
            req.seqs = []
            req.finish_reason = "length"

    def _fork_beams(self, req: Request, finished: set[int]) -> None:
        """Parents now hold their first new token: extra continuations become forks, and
        continuations of parents that hit a length limit become hypotheses."""
        seen: set[int] = set()
        for parent, token, score in self._plans.pop(req.request_id):
            first = parent.seq_id not in seen
            seen.add(parent.seq_id)
            if parent.seq_id in finished:
                req.hypotheses.append(Beam(parent.generated_token_ids[:-1] + [token], score))
                continue
            beam = parent
            if not first:
                beam = parent.fork(next(self._ids))
                beam.token_ids[-1] = token
                self.scheduler.fork(parent, beam)
                self._by_seq[beam.seq_id] = req
            req.seqs.append(beam)
            req.scores.append(score)
        done = sorted((b.cumulative_logprob for b in req.hypotheses), reverse=True)
        width = req.params.beam_width
        # Log-probs only fall: once `width` hypotheses beat every live beam, none can win.
        if not req.seqs or (len(done) >= width and done[width - 1] >= max(req.scores)):
            self._close(req, "done")
