"""`PlanRequest`: what a plan is asked for (model, GPUs, workload, targets, engines, the
lattice's extent), validated once at the front door so every later step trusts it.

Times are milliseconds, as AIConfigurator's `--ttft` / `--tpot`. `device` is a catalog name
with a count ("8xH200"); `gpus_per_node` splits the count into whole nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from constraints.facts.devices import DeviceSpec

from ..dialects import DIALECTS
from .errors import PlanInputError

# the engines a plan prices: those whose registry entry names a plan profile
ENGINES = tuple(name for name, e in DIALECTS.entries.items() if e.plan_profile)
UNPLANNED = tuple(DIALECTS.label(name) for name in DIALECTS if name not in ENGINES)
KV_DTYPES = ("auto", "fp8")
MAX_NEXTN = 8  # draft tokens per step searched at most
# arbiter's catalog name -> the oracle's system directory (aiconfigurator_core/systems)
SYSTEMS = {
    "A100-80GB": "a100_sxm",
    "H100-80GB": "h100_sxm",
    "H200": "h200_sxm",
    "B200": "b200_sxm",
    "B300": "b300_sxm",
    "GB200": "gb200",
    "L40S": "l40s",
}


@dataclass(frozen=True)
class Lattice:
    """How far the priced lattice reaches: every batch 1..`exact_batch` per worker (per
    attention-DP rank), then every 4th to 256 and every 8th to `max_batch` (108 values by
    default; AIConfigurator's own schedule has 47, 16..28 by 4, 64..240 by 16, 256..480 by
    32; the second lattice below adds every batch near each layout's best), token budgets
    every `budget_step` tokens from `budget_step` up to
    max(8192, 2 x ISL) plus the multiples of ISL there (chunked prefill when the budget is
    below ISL), pipeline parallelism up to `max_pp`, and the KV dtypes in `kv_dtypes`.

    Per layout and budget the batches are priced upward until TTFT or TPOT passes
    `latency_cutoff` x its target (both grow with the batch in the oracle's model; no larger
    batch can meet the target, and the relaxations' least values sit at small batches);
    `latency_cutoff=None` prices every batch.

    A second, denser lattice is then priced per layout around its best points on the first
    (`table.refinement`): token budgets every `refine_step` tokens (down to `min_budget`)
    less than `refine_span` (at most one `budget_step`) from the layout's `refine_centres`
    best budgets, and every batch within `refine_batches` of their batches. The answer is the optimum over both
    (`refine_step=None`: the first lattice alone). Budgets below `min_budget` sit on the
    oracle's low frontier, where its kernel tables extrapolate most (plan-anchors section
    8.5), so the second lattice stops there."""

    max_batch: int = 512
    exact_batch: int = 16
    budget_step: int = 512
    max_pp: int = 2
    kv_dtypes: tuple[str, ...] = ("auto",)
    latency_cutoff: float | None = 1.5
    disagg: bool = True
    refine_step: int | None = 128
    refine_centres: int = 2
    refine_batches: int = 8
    refine_span: int = 512
    min_budget: int = 256
    batches: tuple[int, ...] | None = None  # an explicit batch list (tests), else 1..max
    budgets: tuple[int, ...] | None = None  # an explicit budget list, else the grid

    def batch_values(self) -> tuple[int, ...]:
        if self.batches:
            return self.batches
        exact = min(self.exact_batch, self.max_batch)
        values = list(range(1, exact + 1))
        values += range(exact + 4 - exact % 4, min(256, self.max_batch) + 1, 4)
        values += range(max(values[-1], 256) + 8, self.max_batch + 1, 8)
        return tuple(sorted(set(values)))

    def budget_values(self, isl: int) -> tuple[int, ...]:
        if self.budgets:
            return self.budgets
        top = max(8192, 2 * isl)
        grid = set(range(self.budget_step, top + 1, self.budget_step))
        grid |= {isl * k for k in range(1, top // isl + 1)}
        return tuple(sorted(grid))


@dataclass(frozen=True)
class PlanRequest:
    """A validated plan request (see `PlanRequest.make`)."""

    model: str
    device: DeviceSpec
    isl: int
    osl: int
    ttft_ms: float
    tpot_ms: float
    engines: tuple[str, ...]
    gpus_per_node: int = 8
    min_tokens_per_user: float | None = None
    nextn: int = 0  # the deepest speculative draft searched (MTP draft tokens per step)
    nextn_accept: float | None = None  # accepted draft tokens per step at depth `nextn`
    accept_rate: float | None = None  # acceptance of each successive draft token
    database_mode: str = "SILICON"
    lattice: Lattice = field(default_factory=Lattice)

    @property
    def gpus(self) -> int:
        return self.device.count * self.device.nodes

    @property
    def system(self) -> str:
        return SYSTEMS[self.device.name]

    @property
    def nodes(self) -> int:
        return -(-self.gpus // self.gpus_per_node)

    def drafts(self) -> tuple[tuple[int, float | None], ...]:
        """The speculative draft depths the lattice searches, each with the accepted draft
        tokens per step it is priced with: none without `nextn`; with `accept_rate` (the
        chance that each successive draft token is accepted, given the ones before it were)
        every depth 0..nextn, depth k accepting rate + rate^2 + ... + rate^k tokens a step;
        with `nextn_accept` (measured at depth `nextn`) the depths 0 and `nextn`."""
        if not self.nextn:
            return ((0, None),)
        if self.accept_rate is not None:
            rate = self.accept_rate
            return ((0, None),) + tuple(
                (k, sum(rate**i for i in range(1, k + 1))) for k in range(1, self.nextn + 1)
            )
        return ((0, None), (self.nextn, self.nextn_accept))

    def with_targets(self, ttft_ms: float, tpot_ms: float) -> PlanRequest:
        return replace(self, ttft_ms=ttft_ms, tpot_ms=tpot_ms)

    def with_gpus(self, gpus: int) -> PlanRequest:
        return replace(self, device=replace(self.device, count=gpus, nodes=1))

    def with_model(self, model: str) -> PlanRequest:
        return replace(self, model=model)

    @classmethod
    def make(
        cls,
        *,
        model: str | Path,
        device: str,
        isl: int,
        osl: int,
        ttft: float,
        tpot: float,
        engine: str | tuple[str, ...] = "trtllm",
        gpus_per_node: int = 8,
        min_tokens_per_user: float | None = None,
        nextn: int = 0,
        nextn_accept: float | None = None,
        accept_rate: float | None = None,
        lattice: Lattice | None = None,
    ) -> PlanRequest:
        """Validate every field; raises `PlanInputError` naming the first bad one."""
        engines = _engines(engine)
        spec = _device(device)
        for name, value, lo in (
            ("isl", isl, 1),
            ("osl", osl, 2),
            ("gpus_per_node", gpus_per_node, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < lo:
                raise PlanInputError(name, value, f"an integer >= {lo}")
        for name, target in (("ttft", ttft), ("tpot", tpot)):
            if not isinstance(target, (int, float)) or isinstance(target, bool) or not target > 0:
                raise PlanInputError(name, target, "a positive number of milliseconds")
        if not isinstance(nextn, int) or isinstance(nextn, bool) or not 0 <= nextn <= MAX_NEXTN:
            raise PlanInputError(
                "nextn", nextn, f"draft tokens per step, an integer 0..{MAX_NEXTN}"
            )
        if nextn and accept_rate is None and nextn_accept is None:
            raise PlanInputError(
                "nextn",
                nextn,
                "speculative drafts priced with an acceptance: give accept_rate (each draft"
                " token's, 0..1) or nextn_accept (accepted tokens per step at this depth)",
            )
        if nextn and accept_rate is not None and nextn_accept is not None:
            raise PlanInputError(
                "nextn_accept", nextn_accept, "one of accept_rate and nextn_accept, not both"
            )
        if accept_rate is not None and not (
            isinstance(accept_rate, (int, float)) and 0.0 <= accept_rate <= 1.0
        ):
            raise PlanInputError("accept_rate", accept_rate, "a probability, 0..1")
        if nextn and nextn_accept is not None and not 0.0 <= nextn_accept <= nextn:
            raise PlanInputError(
                "nextn_accept", nextn_accept, f"the accepted draft tokens per step, 0..{nextn}"
            )
        lat = lattice or Lattice()
        bad = [k for k in lat.kv_dtypes if k not in KV_DTYPES]
        if bad:
            raise PlanInputError("kv_dtypes", bad[0], ", ".join(KV_DTYPES))
        if lat.max_batch < 1 or lat.exact_batch < 1 or lat.budget_step < 64 or lat.max_pp < 1:
            raise PlanInputError(
                "lattice", lat, "max_batch >= 1, exact_batch >= 1, budget_step >= 64, max_pp >= 1"
            )
        if lat.refine_step is not None and not lat.refine_step >= 64:
            raise PlanInputError("refine_step", lat.refine_step, "None or tokens >= 64")
        if (
            lat.refine_centres < 1
            or lat.refine_batches < 0
            or lat.min_budget < 1
            or lat.refine_span < 1
        ):
            raise PlanInputError(
                "lattice",
                lat,
                "refine_centres >= 1, refine_batches >= 0, refine_span >= 1, min_budget >= 1",
            )
        if lat.latency_cutoff is not None and not lat.latency_cutoff >= 1.0:
            raise PlanInputError("latency_cutoff", lat.latency_cutoff, "None or a factor >= 1")
        return cls(
            model=str(model),
            device=spec,
            isl=isl,
            osl=osl,
            ttft_ms=float(ttft),
            tpot_ms=float(tpot),
            engines=engines,
            gpus_per_node=gpus_per_node,
            min_tokens_per_user=min_tokens_per_user,
            nextn=nextn,
            nextn_accept=nextn_accept if nextn else None,
            accept_rate=accept_rate if nextn else None,
            lattice=lat,
        )


def _engines(engine: str | tuple[str, ...]) -> tuple[str, ...]:
    names = (engine,) if isinstance(engine, str) else tuple(engine)
    if names == ("all",):
        return ENGINES
    bad = [n for n in names if n not in ENGINES]
    if bad or not names:
        allowed = ", ".join(ENGINES) + " or all"
        if UNPLANNED:
            verb = "has" if len(UNPLANNED) == 1 else "have"
            allowed += f" ({' and '.join(UNPLANNED)} {verb} no performance tables in the oracle)"
        raise PlanInputError("engine", bad[0] if bad else engine, allowed)
    return names


def _device(device: str) -> DeviceSpec:
    try:
        spec = DeviceSpec.named(device)
    except Exception as exc:  # UnknownDevice: re-raised with the planner's domain
        raise PlanInputError(
            "device", device, "COUNTxGPU, GPU one of " + ", ".join(SYSTEMS)
        ) from exc
    if spec.name not in SYSTEMS:
        raise PlanInputError(
            "device", device, "a GPU the oracle has tables for: " + ", ".join(SYSTEMS)
        )
    return spec
