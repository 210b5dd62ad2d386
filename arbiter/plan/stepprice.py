"""One engine step priced by the oracle, and the step-loop TTFT of an aggregated point
(measured against the silicon sample in `benchmarks/bench_ttft.py`; docs/plan.md has the
figures: it did not beat the oracle's own factor, so `arbiter plan` keeps the factor).

A step with context tokens is the oracle's mixed forward pass (`run_mixed` with
`MixedStepInput(context_tokens, num_decode_requests)`, `aiconfigurator_core/sdk/backends/
base_backend.py`, 0.12.0); a step of decodes alone is its generation-only pass
(`_get_genonly_step_latency`, the same file: what `run_agg` prices its decode steps with).
Both are the per-op prices `run_agg` itself sums; the step loop (`steploop.py`) decides which
steps happen. Prices are cached per (context tokens, decode requests): a layout's step does
not depend on the point's batch or budget, only on what the step carries.
"""

from __future__ import annotations

from typing import Any

from ..dialects import DIALECTS
from .errors import PlanExtraMissing
from .steploop import LoopResult, simulate

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
) -> LoopResult:
    """The step loop of one aggregated point: `clients` users (the batch by default) in a
    closed loop, each sending `warmup_rounds` requests left out of the means and then
    `rounds` measured ones, under the engine's policy (its plan pack's `STEP_POLICY`); `chunked` overrides
    the engine's default (a budget below the prompt always chunks). `start`: ``burst``, every
    client's first request at time 0 (a benchmark's start); ``steady``, the first requests
    spread over one request's service time at the full batch (its prefill step and OSL - 1
    decode steps of the batch), and one more round left out."""
    policy, engine_chunks = DIALECTS.part(engine, "plan").STEP_POLICY
    chunks = engine_chunks if chunked is None else chunked
    users = batch if clients is None else clients
    spread = 0.0
    if start == "steady":
        spread = pricer(min(pricer.isl, budget), 0) + (pricer.osl - 1) * pricer(0, batch)
    return simulate(
        pricer,
        isl=pricer.isl,
        osl=pricer.osl,
        max_batch=batch,
        budget=budget,
        policy=policy,
        chunked=chunks or budget < pricer.isl,
        clients=users,
        requests=users * (warmup_rounds + rounds),
        spread_ms=spread,
        warmup=users * (warmup_rounds + (start == "steady")),
    )
