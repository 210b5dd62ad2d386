"""Fixes as values, found and verified by re-solving: "max-num-seqs: at most 204".

A correction that drops one claim setting a number (`max_num_seqs = 256`) is more useful
as the range of values that would work. `ValueSearch` compiles the hard part once (every
claim, every hard rule, the setup facts), leaves the claim's literal out of the
assumptions, and asks CP-SAT for the option's extremes (one optimisation each), then,
where the range is small, which values in it are feasible. Every value it returns was
confirmed by a feasibility check with the option held to it, so a value fix is never a
guess; a bound is tight (the value one past it was checked infeasible).

A memory fraction is searched only up to the engine's safe bound (`SAFE_FRACTION`): a fix
never advises giving the engine more of the GPU than that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.cpsat import cp_model  # CP-SAT without loading pandas
from constraints.domains import FractionDomain, IntDomain
from constraints.expr import Eq
from constraints.paths import DEVICE, PARALLEL_CONFIG

from ..claims import AnyClaim, FuncClaim, SetupClaim
from . import DIALECTS

FRACTION = "kv_cache_config.free_gpu_memory_fraction"
# The most of the GPU's memory a fix may give an engine (its memory fraction). No engine
# documents a hard ceiling below 1.0, and each documents a default that leaves headroom
# for activations, CUDA graphs and the allocator's fragmentation:
# - TensorRT-LLM: KvCacheConfig.free_gpu_memory_fraction defaults to 0.9 and the C++ KV
#   manager refuses 1.0 (tensorrt_llm/llmapi/llm_args.py, cpp/.../kvCacheManager.cpp
#   calculateFreeMemBytes, 1.2); its own utilisation ceiling for resuming requests,
#   KvCacheConfig.max_util_for_resume, is 0.95 (llm_args.py, 1.2).
# - vLLM: --gpu-memory-utilization defaults to 0.9 (vllm/config/cache.py, v0.33.0); the
#   optimisation guide raises it to 0.95 to trade headroom for KV space
#   (docs/configuration/optimization.md, "Preemption").
# - SGLang: --mem-fraction-static is derived to leave the activations' and graphs'
#   reserve (python/sglang/srt/arg_groups/memory_hook.py handle_gpu_memory_settings,
#   0.5.23); a VLM's is scaled by 0.95 again (adjust_mem_fraction_for_vlm).
# - MLC LLM: gpu_memory_utilization defaults to 0.85 (python/mlc_llm/serve/config.py).
# arbiter caps every fix at 0.95, the highest of those documented values, for every
# registered engine (a table, so that one engine's bound could differ).
SAFE_FRACTION = dict.fromkeys(DIALECTS, 0.95)
SMALL_RANGE = 16  # a range this small is listed value by value ("one of 1, 2, 4, 8")
TIME_LIMIT_S = 2.0


@dataclass(frozen=True)
class Found:
    """The values an option may take with the rest of the claims held: `relation` is
    "at most", "at least", "one of" or "between"; `values` the bound(s) or the list."""

    path: str
    relation: str
    values: tuple[Any, ...]


def numeric_claim(claim: AnyClaim) -> tuple[str, Any] | None:
    """(path, value) of a functional claim that sets one number, or None."""
    if not isinstance(claim, FuncClaim) or not isinstance(claim.expr, Eq):
        return None
    from constraints.schema import lookup  # the schema is loaded by the check already

    path, value = claim.expr.path, claim.expr.value
    domain = lookup(path).domain
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(domain, (IntDomain, FractionDomain)):
        return path, value
    return None


class ValueSearch:
    """The hard part of one check, compiled once, for the value searches of its fixes;
    `strict`: the defaults the engine keeps (`kept`: performance claims it refuses to see
    dropped, vLLM's derived budget) held as well."""

    def __init__(
        self,
        claims: Sequence[AnyClaim],
        *,
        profile: Any,
        mode: Any,
        dialect: str,
        strict: bool = False,
        kept: Sequence[str] = (),
    ):
        from ..claims import PerfClaim  # the claims load with the check already
        from ..problem import ArbitrationProblem  # the solver loads with the check already

        self.dialect = dialect
        problem = ArbitrationProblem.prepare(list(claims), profile=profile, mode=mode)
        self.cm = problem.bare().compile(soft=False, objective=False)
        by_name = {c.name: c for c in problem.claims}
        self.hard = {
            n: lit
            for n, lit in self.cm.claim_lit.items()
            if isinstance(by_name[n], (FuncClaim, SetupClaim))
        }
        if strict:  # a kept default's first option (the engine's own value) held too
            for name in kept:
                sels = self.cm.perf_sel.get(name)
                if sels and isinstance(by_name.get(name), PerfClaim):
                    self.hard[name] = sels[0]
        self.rules = list(self.cm.rule_lit.values())
        self.solver = cp_model.CpSolver()
        params = self.solver.parameters
        params.num_workers = 1
        params.random_seed = 0
        # the memory products CP-SAT's presolve mis-solves (see arbiter.solve)
        params.cp_model_presolve = False
        params.max_time_in_seconds = TIME_LIMIT_S

    def _assume(self, without: str, extra: Sequence[Any] = ()) -> list[Any]:
        return [*(lit for n, lit in self.hard.items() if n != without), *self.rules, *extra]

    def _solve(self, without: str, extra: Sequence[Any] = (), objective: Any = None) -> Any:
        model = self.cm.model
        model.clear_assumptions()
        model.add_assumptions(self._assume(without, extra))
        if objective is not None:
            sense, var = objective
            (model.maximize if sense == "max" else model.minimize)(var)
        try:
            status = self.solver.solve(model)
        finally:
            model.clear_objective()
            model.clear_assumptions()
        if status == cp_model.OPTIMAL:
            return True
        if status == cp_model.FEASIBLE and objective is None:
            return True
        return False if status == cp_model.INFEASIBLE else None

    def _held(self, var: Any, number: int, op: str = "==") -> Any:
        lit = self.cm.model.new_bool_var(f"fix:{op}{number}")
        rel = {"==": var == number, "<=": var <= number, ">=": var >= number}[op]
        self.cm.model.add(rel).only_enforce_if(lit)
        return lit

    def feasible_at(self, claim: str, path: str, value: Any) -> bool:
        """Whether the rest of the claims hold with `path` at `value` (a re-solve)."""
        ov = self.cm.var(path)
        number = ov.spec.domain.encode(value)
        return self._solve(claim, [self._held(ov.var, number), *self._present(ov)]) is True

    def _present(self, ov: Any) -> list[Any]:
        return [ov.present] if ov.present is not None else []

    def search(self, claim: str, path: str, given: Any) -> Found | None:
        """The values `path` may take with claim `claim` dropped and every other hard
        claim held (None: none, or the solver could not say within its time limit)."""
        ov = self.cm.var(path)
        domain = ov.spec.domain
        present = self._present(ov)
        cap: list[Any] = []
        if path == FRACTION:
            cap = [self._held(ov.var, domain.encode(SAFE_FRACTION[self.dialect]), "<=")]
        bounds = []
        for sense in ("min", "max"):
            if self._solve(claim, [*present, *cap], (sense, ov.var)) is not True:
                return None
            bounds.append(int(self.solver.value(ov.var)))
        lo, hi = bounds
        old = domain.encode(given)
        if hi - lo <= SMALL_RANGE:
            ok = [n for n in range(lo, hi + 1) if self._at(claim, ov, n, present)]
            if not ok:
                return None
            values = tuple(domain.decode(n) for n in ok)
            if len(ok) == hi - lo + 1 and len(ok) > 1:
                return self._range(path, domain, lo, hi, old, values)
            if len(ok) == 1:
                return Found(path, "=", values)
            return Found(path, "one of", values)
        if not (self._at(claim, ov, lo, present) and self._at(claim, ov, hi, present)):
            return None
        if lo <= old <= hi:  # the given value is inside the range, yet infeasible: holes
            return self.nearest(claim, path, given)
        return self._range(path, domain, lo, hi, old, ())

    def _at(self, claim: str, ov: Any, number: int, present: list[Any]) -> bool:
        return self._solve(claim, [self._held(ov.var, number), *present]) is True

    def _range(
        self, path: str, domain: Any, lo: int, hi: int, old: int, values: tuple[Any, ...]
    ) -> Found:
        """A contiguous range of feasible values (checked at both ends, or value by
        value when `values` lists them): open towards the domain's end when it reaches it."""
        if old > hi:  # the least change: down to the bound
            return Found(path, "at most", (domain.decode(hi),))
        if old < lo:
            return Found(path, "at least", (domain.decode(lo),))
        return Found(path, "between", (domain.decode(lo), domain.decode(hi)))

    def nearest(self, claim: str, path: str, given: Any) -> Found | None:
        """The feasible value nearest to `given` (one optimisation), for a given value
        inside a range with holes."""
        ov = self.cm.var(path)
        old = ov.spec.domain.encode(given)
        lo, hi = ov.spec.domain.bounds()
        dist = self.cm.model.new_int_var(0, hi - lo, f"fix:dist:{path}")
        self.cm.model.add_abs_equality(dist, ov.var - old)
        if self._solve(claim, self._present(ov), ("min", dist)) is not True:
            return None
        return Found(path, "=", (ov.spec.domain.decode(int(self.solver.value(ov.var))),))


COUNT = DEVICE.count
TP = PARALLEL_CONFIG.tensor_parallel_size
GPU_COUNTS = (2, 4, 8)  # the GPU counts a fix may propose (one node of the usual sizes)


@dataclass(frozen=True)
class GpuFix:
    """More GPUs that make the claims hold: `gpus`, and `tensor_parallel` the tensor
    parallel size to use them with where no claim of the user's sets it (None: kept)."""

    gpus: int
    tensor_parallel: int | None


def gpu_fix(accepts: Callable[[int, bool], bool], now: int, *, spread: bool) -> GpuFix | None:
    """The fewest GPUs (of `GPU_COUNTS`, above `now`) with which the engine accepts the
    config: `accepts(gpus, spread)` re-checks it end to end on that many GPUs (`spread`:
    with the tensor-parallel size the user left to the engine set to the GPU count)."""
    for gpus in (n for n in GPU_COUNTS if n > now):
        if accepts(gpus, False):
            return GpuFix(gpus, None)
        if spread and accepts(gpus, True):
            return GpuFix(gpus, gpus)
    return None


__all__ = [
    "FRACTION",
    "SAFE_FRACTION",
    "Found",
    "GpuFix",
    "ValueSearch",
    "gpu_fix",
    "numeric_claim",
]
