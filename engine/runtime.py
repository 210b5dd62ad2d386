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
from engine.front_door import UnknownRequest, check_prompt
from engine.kernels import AttentionMetadata
from engine.kv import KvCacheManager, block_table_tensor, slots_for
from engine.model import LlamaForCausalLM
from engine.pool import (
    kv_spec,
    scheduler_config,
    size_pool,
)
from engine.sampling import InvalidSamplingParams, SamplingParams, beam_step, sample_token
from engine.scheduler import Scheduler, SchedulerOutput
from engine.sequence import Sequence


class RequestRejected(ValueError):
    """A request the solved configuration cannot serve; ``limit`` names the option."""

    def __init__(self, limit: str, value: int, needed: int) -> None:
        super().__init__(limit, value, needed)
        self.limit, self.value, self.needed = limit, value, needed

    def __str__(self) -> str:
        return f"the request needs {self.limit} >= {self.needed}, but it is {self.value}"


class RuntimeStalled(RuntimeError):
    """Requests wait but the scheduler admitted nothing and nothing runs: no later step
    could change that, so the runtime stops instead of spinning."""

    def __init__(self, num_waiting: int, free_blocks: int) -> None:
        super().__init__(num_waiting, free_blocks)
        self.num_waiting, self.free_blocks = num_waiting, free_blocks

    def __str__(self) -> str:
        return (
            f"{self.num_waiting} requests wait but none can be admitted with"
            f" {self.free_blocks} free blocks and nothing running"
        )


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


class Runtime:
    """Drives one model over a paged KV pool, as the solved ``config`` says."""

    def __init__(
        self,
        config: EngineConfig,
        model: LlamaForCausalLM,
        device: torch.device | str,
        *,
        free_memory: int | None = None,
        eos_token_ids: tuple[int, ...] = (),
    ) -> None:
        self.config, self.model, self.device = config, model, torch.device(device)
        self.pool = size_pool(config, model.args, self.device, free_memory)
        self.kv = KvCacheManager(kv_spec(config, model.args, self.device, self.pool))
        self.scheduler = Scheduler(scheduler_config(config), self.kv)
        self.eos_token_ids = tuple(eos_token_ids)
        self.requests: dict[int, Request] = {}
        self._by_seq: dict[int, Request] = {}
        self._ids = itertools.count()
        self.num_prefill_tokens = 0  # tokens computed in context steps (reuse saves these)
        self.num_decode_tokens = 0
        self._plans: dict[int, list[tuple[Sequence, int, float]]] = {}

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

    def release(self, request_id: int) -> None:
        """Forget a request (aborting it first if it still runs)."""
        req = self.requests.pop(request_id, None)
        if req is None:
            return
        if not req.finished:
            self._close(req, "aborted")
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
        out = self.scheduler.schedule()
        if not out.scheduled:
            sched = self.scheduler
            if sched.waiting and not sched.running:
                raise RuntimeStalled(len(sched.waiting), self.kv.num_free_blocks)
            return []
        logits = self._forward(out)
        rows = {e.seq.seq_id: i for i, e in enumerate(out.scheduled)}
        touched: dict[int, Request] = {}
        sampled: dict[int, int] = {}
        groups = {
            self._by_seq[s.seq_id].request_id: self._by_seq[s.seq_id] for s in out.needs_token
        }
        for req in groups.values():
            live = [s for s in req.seqs if s.seq_id in rows]
            if req.params.beam_width > 1:
                self._beam_step(req, live, logits[[rows[s.seq_id] for s in live]], sampled)
            else:
                seq = live[0]
                sampled[seq.seq_id] = sample_token(
                    logits[rows[seq.seq_id]], req.params, req.generator
                )
            touched[req.request_id] = req
        finished = {s.seq_id for s in self.scheduler.on_step_done(out, sampled)}
        for req in touched.values():
            self._after_tokens(req, sampled, finished)
        return list(touched.values())

    def _forward(self, out: SchedulerOutput) -> torch.Tensor:
        layout = self.kv.layout
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        for seq, n, is_prefill in out.scheduled:
            start = seq.num_computed_tokens
            ids.extend(seq.token_ids[start : start + n])
            positions.extend(range(start, start + n))
            slots.extend(slots_for(layout, seq.block_table, start, n))
            if is_prefill:
                self.num_prefill_tokens += n
            else:
                self.num_decode_tokens += n
        qlens = [n for _, n, _ in out.scheduled]
        starts = list(itertools.accumulate(qlens, initial=0))
        dev = self.device
        meta = AttentionMetadata(
            slot_mapping=torch.tensor(slots, dtype=torch.int64, device=dev),
            block_tables=block_table_tensor([e.seq.block_table for e in out.scheduled], dev),
            context_lens=torch.tensor(
                [e.seq.num_computed_tokens + e.num_new_tokens for e in out.scheduled],
                dtype=torch.int64,
                device=dev,
            ),
            query_start_loc=torch.tensor(starts, dtype=torch.int64, device=dev),
            is_prefill=any(q != 1 for q in qlens),
            max_query_len=max(qlens),
            sliding_window=self.kv.spec.max_attention_window,
            sink_tokens=self.kv.spec.sink_token_length,
            sink_bubble=layout.bubble,
        )
        return self.model(
            torch.tensor(ids, dtype=torch.int64, device=dev),
            torch.tensor(positions, dtype=torch.int64, device=dev),
            self.kv.storage.kv,
            meta,
        ).float()

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
        token = sampled[seq.seq_id]
        req.token_ids.append(token)
        if token in req.stop_ids:
            self._close(req, "stop")
        elif seq.seq_id in finished:
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
