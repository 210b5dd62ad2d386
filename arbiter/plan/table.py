"""The priced lattice: every candidate point of one engine (layout, KV dtype, speculative
draft depth, batch, token budget), with the oracle's figures and arbiter's verdict on the configuration it stands for.

Per layout, KV dtype and draft depth the emitted worker config is checked once with `arbiter check` (the
engine's rules and arbiter's memory model; a refused layout is kept with the refusal). Per
point, arbiter's memory model (`constraints.shared.rules.memory.capacity` on the checked values with
the point's batch and budget) gives the KV blocks of a rank, which must hold `batch` whole
sequences of ISL + OSL tokens (found per budget by a binary search over the batches: a larger
batch needs more and gets less); the oracle's `check_oom` / `check_kv_cache_oom` are kept beside
it so disagreements can be reported with both numbers. Past arbiter's limit the batch keeps
growing while the oracle still says it fits (those rows are priced, marked as not fitting
and barred by the joint model); where both say no, the larger batches are not priced.

Per layout a second, denser lattice follows around the first's best rows under the targets
(`refinement`: finer token budgets and every batch near the best); its rows join the same
table after the first's, so the joint model's optimum is over both and its tie-break
(the lowest row) prefers the first lattice's points.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from constraints.paths import BUILD_CONFIG, KV_CACHE_CONFIG
from constraints.shared.rules.memory import capacity

from .emit import Checked, Worker, check_worker, worker_config
from .layout import Layout, layouts
from .oracle import Oracle, Priced
from .request import PlanRequest

BATCH = BUILD_CONFIG.max_batch_size
NUM_TOKENS = BUILD_CONFIG.max_num_tokens
TPB = KV_CACHE_CONFIG.tokens_per_block


class Memory:
    """Arbiter's memory model for one checked layout: the KV blocks a rank gets at a batch
    and token budget (`constraints.shared.rules.memory.capacity` on the checked values with those
    two replaced, as the dialect maps them), and the largest batch whose sequences fit."""

    def __init__(self, checked: Checked, ref: Worker):
        self.values = dict(checked.values)
        self.terms, self.held = checked.terms, checked.held
        self.per_seq = -(-ref.max_len // int(self.values.get(TPB) or 1))
        self.scale_b = self.values[BATCH] / ref.batch
        self.scale_c = self.values[NUM_TOKENS] / ref.budget
        cap = checked.capacity
        self.weights_gib = cap.weights / 2**30
        self.budget_gib = cap.memory * cap.fraction / 2**30
        self._blocks: dict[tuple[int, int], int] = {}

    def need(self, batch: int) -> int:
        return batch * self.per_seq

    def blocks(self, batch: int, budget: int) -> int:
        key = (batch, budget)
        if key not in self._blocks:
            values = dict(self.values)
            values[BATCH] = max(1, round(batch * self.scale_b))
            values[NUM_TOKENS] = max(1, round(budget * self.scale_c))
            self._blocks[key] = capacity(values, self.terms, self.held).kv_blocks
        return self._blocks[key]

    def fits(self, batch: int, budget: int) -> bool:
        return self.need(batch) <= self.blocks(batch, budget)

    def limit(self, batches: tuple[int, ...], budget: int) -> int:
        """Index of the first batch that does not fit (len(batches): all fit). A larger
        batch needs more KV and leaves less memory, so a binary search finds it."""
        lo, hi = 0, len(batches)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.fits(batches[mid], budget):
                lo = mid + 1
            else:
                hi = mid
        return lo


@dataclass(frozen=True)
class Row:
    """One priced lattice point with arbiter's memory verdict on it."""

    worker: Worker
    priced: Priced
    fits: bool  # its batch of ISL + OSL sequences fits the KV blocks of a rank
    memory: Memory

    @property
    def kv_need_blocks(self) -> int:
        return self.memory.need(self.worker.batch)

    @property
    def kv_blocks(self) -> int:
        return self.memory.blocks(self.worker.batch, self.worker.budget)

    @property
    def weights_gib(self) -> float:
        return self.memory.weights_gib

    @property
    def memory_budget_gib(self) -> float:
        return self.memory.budget_gib


@dataclass
class Refusal:
    """A layout whose emitted config `arbiter check` refuses (with the engine's reason)."""

    layout: Layout
    kv_dtype: str
    reason: str
    memory: str = ""
    nextn: int = 0  # the draft depth of the refused config

    def to_json(self) -> dict[str, Any]:
        return {
            "layout": str(self.layout),
            "parallel": self.layout.to_json(),
            "kv_dtype": self.kv_dtype,
            "draft_tokens": self.nextn,
            "reason": self.reason,
            "memory": self.memory,
        }


@dataclass
class Table:
    """The priced lattice of one engine."""

    engine: str
    rows: list[Row] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    unpriced: int = 0  # points the oracle has no data for
    pruned: int = 0  # points beyond arbiter's KV capacity, not priced
    cut: int = 0  # points past the latency cutoff (`Lattice.latency_cutoff`), not priced
    refused_points: int = 0  # points of the layouts arbiter check refuses
    fine_points: int = 0  # of `size`, the points of the second, denser lattice (`refinement`)
    layouts: list[Layout] = field(default_factory=list)
    price_s: float = 0.0
    check_s: float = 0.0
    setup_s: float = 0.0

    @property
    def size(self) -> int:
        """Points of the lattice: priced, unpriced and pruned, plus the refused layouts'."""
        return len(self.rows) + self.unpriced + self.pruned + self.cut + self.refused_points


def build(request: PlanRequest, engine: str, oracle: Oracle, model_file: Path) -> Table:
    """Price the lattice of one engine for the request (see the module doc)."""
    table = Table(engine)
    moe = _is_moe(model_file)
    lat = request.lattice
    max_len = request.isl + request.osl
    batches = lat.batch_values()
    budgets = lat.budget_values(request.isl)
    for layout in layouts(
        engine, request.gpus, moe, max_pp=lat.max_pp, gpus_per_node=request.gpus_per_node
    ):
        for kv in lat.kv_dtypes:
            for nextn, accept in request.drafts():
                ref = Worker(layout, max(batches), max(budgets), kv, max_len, nextn, accept)
                _layout_table(table, request, oracle, model_file, ref, batches, budgets)
    return table


def _layout_table(
    table: Table,
    request: PlanRequest,
    oracle: Oracle,
    model_file: Path,
    ref: Worker,
    batches: tuple[int, ...],
    budgets: tuple[int, ...],
) -> None:
    """Check the emitted config of one layout, KV dtype and draft depth once, then price
    its batches and budgets (or record why it is not priced)."""
    layout, kv, engine = ref.layout, ref.kv_dtype, table.engine
    started = time.perf_counter()
    checked = check_worker(
        engine, worker_config(engine, ref), model_file, request.device.name, layout.gpus
    )
    checked = _consistent(checked, layout)
    table.check_s += time.perf_counter() - started
    if not checked.accepted:
        table.refused.append(Refusal(layout, kv, checked.reason, checked.memory, ref.nextn))
        table.refused_points += len(batches) * len(budgets)
        return
    if layout not in table.layouts:
        table.layouts.append(layout)
    started = time.perf_counter()
    try:
        oracle.session(layout, kv, ref.nextn)
    except Exception as exc:  # OracleUnavailable: the layout is not priced
        reason = f"not priced by the oracle: {exc}"
        table.refused.append(Refusal(layout, kv, reason, nextn=ref.nextn))
        table.refused_points += len(batches) * len(budgets)
        return
    table.setup_s += time.perf_counter() - started
    started = time.perf_counter()
    _price_layout(table, request, oracle, checked, ref, batches, budgets)
    table.price_s += time.perf_counter() - started


def _price_layout(
    table: Table,
    request: PlanRequest,
    oracle: Oracle,
    checked: Checked,
    ref: Worker,
    batches: tuple[int, ...],
    budgets: tuple[int, ...],
) -> None:
    memory = Memory(checked, ref)
    start = len(table.rows)
    for budget in budgets:
        _price_budget(table, request, oracle, memory, ref, batches, budget)
    fine = refinement(request, table.rows[start:], batches, budgets)
    if not fine:
        return
    before = table.size
    for budget, near in fine.items():
        _price_budget(table, request, oracle, memory, ref, near, budget)
    table.fine_points += table.size - before


def refinement(
    request: PlanRequest, rows: list[Row], batches: tuple[int, ...], budgets: tuple[int, ...]
) -> dict[int, tuple[int, ...]]:
    """The second, denser lattice of one layout (token budget -> batches to price), around
    its best rows on the first: for each of the `refine_centres` best budgets (the fastest
    row meeting the targets and arbiter's memory verdict at each budget, ranked by
    tokens/s/GPU), every multiple of `refine_step` less than `refine_span` (at most one
    `budget_step`) from it (from `min_budget`, less the first lattice's budgets) at the
    first lattice's batches from half to twice the centre's batch, and every batch within
    `refine_batches` of the centre's batch (up to the first lattice's largest) at its own
    budget and the new ones. Empty when no row meets the targets (an infeasible plan's
    relaxations stay on the first lattice), or `refine_step` is None or not finer than
    `budget_step`."""
    lat = request.lattice
    if lat.refine_step is None or lat.refine_step >= lat.budget_step or not rows:
        return {}
    floor = request.min_tokens_per_user
    best: dict[int, Row] = {}
    for r in rows:
        p = r.priced
        if not (r.fits and p.ttft_ms <= request.ttft_ms and p.tpot_ms <= request.tpot_ms):
            continue
        if floor is not None and p.tokens_per_second_per_user < floor:
            continue
        top = best.get(r.worker.budget)
        if top is None or p.tokens_per_second_per_gpu > top.priced.tokens_per_second_per_gpu:
            best[r.worker.budget] = r
    ranked = sorted(best.values(), key=lambda r: -r.priced.tokens_per_second_per_gpu)
    span, fine = min(lat.budget_step, lat.refine_span), lat.refine_step
    largest = max(batches)
    coarse = set(budgets)
    found: dict[int, set[int]] = {}
    for centre in ranked[: lat.refine_centres]:
        budget, batch = centre.worker.budget, centre.worker.batch
        near = set(range(max(1, batch - lat.refine_batches), batch + lat.refine_batches + 1))
        near = {b for b in near if b <= largest}
        window = {b for b in batches if batch / 2 <= b <= 2 * batch} | near
        lo = max(lat.min_budget, fine * (-(-(budget - span + 1) // fine)))
        for b in range(lo, budget + span, fine):
            if b not in coarse:
                found.setdefault(b, set()).update(window)
        found.setdefault(budget, set()).update(near - set(batches))
    return {b: tuple(sorted(v)) for b, v in sorted(found.items()) if v}


def _price_budget(
    table: Table,
    request: PlanRequest,
    oracle: Oracle,
    memory: Memory,
    ref: Worker,
    batches: tuple[int, ...],
    budget: int,
) -> None:
    """Price one layout's batches at one token budget, upward, until arbiter's memory model
    and the oracle both refuse the batch or a figure passes the latency cutoff."""
    cutoff = request.lattice.latency_cutoff
    limit = memory.limit(batches, budget)
    for i, batch in enumerate(batches):
        worker = Worker(
            ref.layout, batch, budget, ref.kv_dtype, ref.max_len, ref.nextn, ref.draft_accept
        )
        priced = oracle.price(
            ref.layout,
            batch,
            budget,
            request.isl,
            request.osl,
            kv_dtype=ref.kv_dtype,
            nextn=ref.nextn,
            nextn_accept=ref.draft_accept,
        )
        fits = i < limit
        if not fits and (priced is None or priced.oracle_kv_oom or priced.oracle_oom):
            # both models say a larger batch does not fit: it needs more and gets less
            table.pruned += len(batches) - i
            break
        if priced is None:
            table.unpriced += 1
            continue
        table.rows.append(Row(worker, priced, fits, memory))
        if cutoff is not None and (
            priced.ttft_ms > cutoff * request.ttft_ms or priced.tpot_ms > cutoff * request.tpot_ms
        ):
            table.cut += len(batches) - i - 1  # both grow with the batch
            break


def _consistent(checked: Checked, layout: Layout) -> Checked:
    """Refuse a check whose solved layout is not the priced one (e.g. expert parallelism
    the engine would not turn on for the given options)."""
    if not checked.accepted or not layout.moe:
        return checked
    used = checked.values.get("parallel_config.moe_expert_parallel_used")
    if used is not None and layout.moe_ep is not None and int(used) != layout.moe_ep:
        reason = (
            f"the engine would run the experts {int(used)}-way expert parallel, not"
            f" {layout.moe_ep}-way as priced"
        )
        return Checked(False, {}, None, None, "", reason)
    return checked


def _is_moe(model_file: Path) -> bool:
    import json  # the model's config.json, read once per table

    raw = json.loads(model_file.read_text())
    text = raw.get("text_config", raw)
    keys = ("num_experts", "num_local_experts", "n_routed_experts")
    return any(int(text.get(k) or 0) > 1 for k in keys)
