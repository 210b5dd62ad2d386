"""One engine step priced by the oracle, and the step-loop TTFT of an aggregated point.

A step with context tokens is the oracle's mixed forward pass (`run_mixed` with
`MixedStepInput(context_tokens, num_decode_requests)`, `aiconfigurator_core/sdk/backends/
base_backend.py`, 0.12.0); a step of decodes alone is its generation-only pass
(`_get_genonly_step_latency`, the same file: what `run_agg` prices its decode steps with).
Both are the per-op prices `run_agg` itself sums; the step loop (`steploop.py`) decides which
steps happen. Prices are cached per (context tokens, decode requests): a layout's step does
not depend on the point's batch or budget, only on what the step carries.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import replace
from typing import Any

from .errors import PlanExtraMissing
from .oracle import Priced
from .steploop import ENGINE_POLICY, LoopResult, simulate

# The simulated benchmark is AIConfigurator's own (`generator/config/backend_templates/
# benchmark/bench_run.sh.j2`, ai-dynamo/aiconfigurator): aiperf at a fixed concurrency,
# `--num-requests concurrency x 50` after `--warmup-request-count concurrency x 2`, outputs of
# fixed length (`ignore_eos`). So each client sends 2 warm-up requests, then 50 measured.
ROUNDS = 50
WARMUP_ROUNDS = 2


class StepPricer:
    """`price(context_tokens, decode_requests) -> ms` for one oracle model and backend."""

    def __init__(self, model: Any, backend: Any, db: Any, isl: int, osl: int):
        try:
            # the optional extra `plan`: imported only when a step is priced
            from aiconfigurator_core.sdk.config import RuntimeConfig
            from aiconfigurator_core.sdk.step_estimate import MixedStepInput
        except ImportError as exc:
            raise PlanExtraMissing("aiconfigurator-core==0.12.0") from exc
        self._step = MixedStepInput
        self.model, self.backend, self.db = model, backend, db
        self.isl, self.osl = isl, osl
        self.runtime = RuntimeConfig(isl=isl, osl=osl, batch_size=1)
        self.cache: dict[tuple[int, int], float] = {}

    def __call__(self, context_tokens: int, decode_requests: int) -> float:
        key = (context_tokens, decode_requests)
        if key not in self.cache:
            if context_tokens > 0:
                step = self._step(
                    context_tokens=context_tokens, num_decode_requests=decode_requests
                )
                value = self.backend.run_mixed(self.model, self.db, self.runtime, step).latency_ms
            else:
                value = self.backend._get_genonly_step_latency(
                    self.model, self.db, self.runtime, decode_requests, self.isl, self.osl
                )[0]
            self.cache[key] = float(value)
        return self.cache[key]


def steploop_point(
    pricer: StepPricer,
    engine: str,
    batch: int,
    budget: int,
    *,
    clients: int | None = None,
    rounds: int = ROUNDS,
    warmup_rounds: int = WARMUP_ROUNDS,
    chunked: bool | None = None,
    start: str = "burst",
    osl: int | None = None,
) -> LoopResult:
    """The step loop of one aggregated point: `clients` users (the batch by default) in a
    closed loop, `warmup_rounds` requests each left out and then `rounds` measured, the engine's policy (`ENGINE_POLICY`); `chunked`
    overrides the engine's default (a budget below the prompt always chunks). `start`:
    ``burst``, every client at time 0 and every request counted; ``steady``, the clients
    spread over one request's service time at the full batch (its prefill step and OSL - 1
    decode steps of the batch) and one more round left out. `osl` overrides the tokens a
    request runs for (one per step; the pricer's OSL by default)."""
    policy, engine_chunks = ENGINE_POLICY[engine]
    chunks = engine_chunks if chunked is None else chunked
    users = batch if clients is None else clients
    steps_osl = pricer.osl if osl is None else osl
    spread = 0.0
    if start == "steady":
        spread = pricer(min(pricer.isl, budget), 0) + (steps_osl - 1) * pricer(0, batch)
    return simulate(
        pricer,
        isl=pricer.isl,
        osl=steps_osl,
        max_batch=batch,
        budget=budget,
        policy=policy,
        chunked=chunks or budget < pricer.isl,
        clients=users,
        requests=users * (warmup_rounds + rounds),
        spread_ms=spread,
        warmup=users * (warmup_rounds + (start == "steady")),
    )


# per oracle (dropped with it), one pricer per (layout, KV dtype, draft depth, ISL, OSL)
_PRICERS: weakref.WeakKeyDictionary[Any, dict[tuple, StepPricer]] = weakref.WeakKeyDictionary()


def with_steploop_ttft(
    oracle: Any,
    engine: str,
    layout: Any,
    batch: int,
    budget: int,
    isl: int,
    osl: int,
    priced: Priced,
    *,
    kv_dtype: str = "auto",
    nextn: int = 0,
    accepted: float | None = None,
) -> Priced:
    """`priced` with its TTFT from the step loop (`arbiter plan --ttft-model steploop`): the
    batch's clients in a closed loop, each step priced by the same oracle model. With a
    speculative draft a decode step carries 1 + `accepted` tokens, so a request needs
    ceil((OSL - 1) / (1 + accepted)) decode steps."""
    model, backend = oracle.session(layout, kv_dtype, nextn)
    pricers = _PRICERS.setdefault(oracle, {})
    key = (layout, kv_dtype, nextn, isl, osl)
    if key not in pricers:
        pricers[key] = StepPricer(model, backend, oracle.db, isl, osl)
    pricer = pricers[key]
    steps_osl = osl
    if nextn and accepted:
        steps_osl = 1 + math.ceil((osl - 1) / (1.0 + accepted))
    loop = steploop_point(pricer, engine, batch, budget, osl=steps_osl)
    return replace(priced, ttft_ms=loop.ttft_ms)
