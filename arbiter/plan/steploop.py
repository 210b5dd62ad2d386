"""A step-loop model of TTFT: the engine's scheduler simulated over a request stream, each
step priced by the oracle.

AIConfigurator prices TTFT as one request's prefill time times a fixed queueing factor
(`aiconfigurator_core/sdk/backends/base_backend.py`, `_ttft_queuing_factor`, 0.12.0:
`min(2 + (steps - 3) / 20, 4)`; vLLM `1 + log2(b) / 8`, capped at 2). This module runs the
engine's admission policy step by step instead: who is prefilled in which step, with how many
decodes beside it, and how long each step takes (`price(context_tokens, decode_requests)` in
ms, from the oracle's per-op prices). A request's TTFT is the time from its arrival to the end
of the step that computes the last token of its prompt (that step samples its first token);
the model reports the mean over all requests, as AIConfigurator and the benchmark clients do.

The runtime's own scheduler (`engine/scheduler.py`) is not reused: `arbiter` may not import
`engine` (the layers point `engine -> arbiter -> constraints`), and it drives real KV blocks and
token ids, which a price model does not need. Memory is not simulated: a point's batch is one
that fits (arbiter's memory model, or the oracle's), so no request is preempted.

Policies (one per engine: `STEP_POLICY` in the engine's `arbiter/engines/<e>/plan.py`):

- ``mixed``: every step carries all running decodes (one token each) first, then context work
  in arrival order (the running prompt that is mid-chunk, then waiting requests while fewer
  than `max_batch` requests run) within the token budget. With `chunked` a prompt is cut to the
  budget left; without, a prompt runs whole or waits. vLLM v1 (`vllm/v1/core/sched/scheduler.py`,
  `Scheduler.schedule`: running requests first, then the waiting queue, within
  `max_num_batched_tokens`; chunked prefill on by default in v1) and TensorRT-LLM's in-flight
  batching (`tensorrt_llm/_torch/pyexecutor/scheduler.py`: context and generation requests in
  one step within `max_num_tokens`; `enable_chunked_prefill` off by default in `llm_args.py`).
- ``prefill-first``: a step is either a prefill batch (waiting requests while fewer than
  `max_batch` run, the chunked prompt first, within the budget) or, when no prompt can be
  admitted, one decode step of every running request. SGLang
  (`python/sglang/srt/managers/scheduler.py`, `get_next_batch_to_run`: "Run prefill first if
  possible"; decodes join a prefill only with `--enable-mixed-chunk`, off by default).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .errors import PlanInputError

POLICIES = ("mixed", "prefill-first")

StepPrice = Callable[[int, int], float]  # (context tokens, decode requests) -> ms


@dataclass(frozen=True)
class LoopResult:
    """What one simulated stream gives: mean TTFT and TPOT (ms) and the loop's size."""

    ttft_ms: float
    tpot_ms: float
    ttfts_ms: tuple[float, ...]  # each counted request's, in arrival order
    steps: int
    makespan_ms: float


@dataclass
class _Request:
    order: int
    arrival: float
    left: int  # prompt tokens still to compute
    first_token: float = math.nan
    finish: float = math.nan


def _check(name: str, value: int, low: int) -> None:
    if not isinstance(value, int) or value < low:
        raise PlanInputError(f"steploop.{name}", value, f"an integer >= {low}")


def simulate(
    price: StepPrice,
    *,
    isl: int,
    osl: int,
    max_batch: int,
    budget: int,
    policy: str = "mixed",
    chunked: bool = True,
    clients: int | None = None,
    requests: int | None = None,
    arrivals: Sequence[float] | None = None,
    spread_ms: float = 0.0,
    warmup: int = 0,
    jump: bool = True,
) -> LoopResult:
    """Run the step loop over a stream and return the mean TTFT (see the module doc).

    The stream is either closed (`clients` users, each sending its next request when its last
    one finishes, `requests` in all: a fixed-concurrency benchmark) or open (`arrivals`: each
    request's arrival time in ms). A closed stream's clients start together at time 0, or
    evenly over `spread_ms` (client i at i x spread / clients). The means leave out the
    first `warmup` requests.
    `jump` skips runs of identical decode steps in one go (same result, fewer iterations)."""
    if policy not in POLICIES:
        raise PlanInputError("steploop.policy", policy, f"one of {POLICIES}")
    for name, value, low in (("isl", isl, 1), ("osl", osl, 1), ("max_batch", max_batch, 1)):
        _check(name, value, low)
    _check("budget", budget, 1)
    if not chunked and isl > budget:
        raise PlanInputError("steploop.budget", budget, f">= isl ({isl}) without chunking")
    if (clients is None) == (arrivals is None):
        raise PlanInputError("steploop.stream", (clients, arrivals), "clients or arrivals")
    if clients is not None:
        _check("clients", clients, 1)
        total = clients if requests is None else requests
        _check("requests", total, clients)
        pending = [i * spread_ms / clients for i in range(clients)]
    else:
        pending = sorted(float(a) for a in arrivals or ())
        total = len(pending)
        if total == 0:
            raise PlanInputError("steploop.arrivals", arrivals, "at least one arrival")
    if not 0 <= warmup < total:
        raise PlanInputError("steploop.warmup", warmup, f"0 <= warmup < {total} requests")
    future = deque(pending)  # arrivals not yet queued, in time order
    issued = len(pending)
    waiting: deque[_Request] = deque()
    prefilling: deque[_Request] = deque()  # admitted, prompt not yet computed (chunked)
    finishing: list[tuple[int, int]] = []  # heap of (decode step it ends at, order)
    by_order: list[_Request] = []
    decoding = finished = steps = 0
    decode_steps = 0  # steps that advanced the decodes
    now = 0.0

    while finished < total:
        while future and future[0] <= now:
            req = _Request(len(by_order), future.popleft(), isl)
            by_order.append(req)
            waiting.append(req)
        if not waiting and not prefilling and decoding == 0:
            now = future[0]  # idle until the next arrival
            continue
        running = decoding + len(prefilling)
        if jump and decoding and not prefilling and (not waiting or running >= max_batch):
            # decodes alone until the next finish (or the next arrival that could be
            # admitted): the same step each time, so the loop jumps over all but the last
            skip = finishing[0][0] - decode_steps - 1
            each = float(price(0, decoding))
            if future and running < max_batch and each > 0:
                skip = min(skip, math.ceil((future[0] - now) / each))
            if skip > 0 and each > 0:
                now += skip * each
                steps += skip
                decode_steps += skip
                continue
        if policy == "mixed":
            n_decode = decoding
            context = _admit(waiting, prefilling, running, max_batch, budget - decoding, chunked)
        elif _prefill_possible(waiting, prefilling, running, max_batch):
            n_decode = 0
            context = _admit(waiting, prefilling, running, max_batch, budget, chunked)
        else:
            n_decode, context = decoding, []
        now += float(price(sum(n for _, n in context), n_decode))
        steps += 1
        ended: list[_Request] = []
        if n_decode:
            decode_steps += 1
            while finishing and finishing[0][0] <= decode_steps:
                ended.append(by_order[heapq.heappop(finishing)[1]])
                decoding -= 1
        for req, n in context:
            req.left -= n
            if req.left == 0:
                prefilling.remove(req)
                req.first_token = now
                if osl == 1:
                    ended.append(req)
                else:
                    decoding += 1
                    heapq.heappush(finishing, (decode_steps + osl - 1, req.order))
        for req in ended:
            req.finish = now
            finished += 1
            if clients is not None and issued < total:
                future.append(now)  # the client sends its next request
                issued += 1
    counted = by_order[warmup:]
    ttfts = tuple(r.first_token - r.arrival for r in counted)
    tpots = [(r.finish - r.first_token) / (osl - 1) for r in counted if osl > 1]
    return LoopResult(
        ttft_ms=sum(ttfts) / len(ttfts),
        tpot_ms=sum(tpots) / len(tpots) if tpots else 0.0,
        ttfts_ms=ttfts,
        steps=steps,
        makespan_ms=now,
    )


def _prefill_possible(
    waiting: deque[_Request], prefilling: deque[_Request], running: int, max_batch: int
) -> bool:
    return bool(prefilling) or (bool(waiting) and running < max_batch)


def _admit(
    waiting: deque[_Request],
    prefilling: deque[_Request],
    running: int,
    max_batch: int,
    tokens: int,
    chunked: bool,
) -> list[tuple[_Request, int]]:
    """Context work of one step: mid-chunk prompts first, then waiting requests in arrival
    order while fewer than `max_batch` run, within `tokens`. Admitted requests move from
    `waiting` to `prefilling`."""
    out: list[tuple[_Request, int]] = []
    for req in prefilling:
        if tokens <= 0:
            return out
        n = min(req.left, tokens) if chunked else (req.left if req.left <= tokens else 0)
        if n == 0:
            return out
        out.append((req, n))
        tokens -= n
    while waiting and running < max_batch and tokens > 0:
        req = waiting[0]
        n = min(req.left, tokens) if chunked else (req.left if req.left <= tokens else 0)
        if n == 0:
            break
        waiting.popleft()
        prefilling.append(req)
        running += 1
        out.append((req, n))
        tokens -= n
    return out
