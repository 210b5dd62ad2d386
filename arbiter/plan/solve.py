"""The joint CP-SAT model over one engine's priced lattice.

Each lattice point is a row of a table (less the rows another row of the same layout
dominates, `undominated`); one integer variable `point` selects a row and
element constraints (`AddElement`) read its columns: TTFT and TPOT in microseconds,
tokens/s/GPU and tokens/s/user in thousandths, the layout's index, and arbiter's memory
verdict for the configuration the row stands for (1: its batch of ISL + OSL sequences fits
the KV blocks arbiter's memory model gives a rank at that batch and budget). The targets bound
the TTFT and TPOT variables, the verdict must be 1, and the objective maximises tokens/s/GPU
then (a second solve with the figure fixed) the lowest row index, so the optimum is
unique and the answer deterministic. Rows outside the bounds are left out of the element
tables before the model is built (`point` could take none of them). The engine's rules come in through `arbiter check`: a
layout they refuse has no rows, and a chosen row whose emitted config they refuse is cut (`point != row`) and the
model solved again, so the pick is the best row the rules accept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .table import Row

US = 1000  # microseconds per millisecond
MILLI = 1000  # thousandths of a token per second


@dataclass(frozen=True)
class Targets:
    """Upper bounds on TTFT and TPOT (ms), an optional floor on tokens/s/user."""

    ttft_ms: float
    tpot_ms: float
    min_tokens_per_user: float | None = None


@dataclass(frozen=True)
class Solved:
    """A solve's outcome: the chosen row (None: no row meets the targets), whether CP-SAT
    proved it (OPTIMAL, or INFEASIBLE for None), and the rows cut because `arbiter check`
    refused their emitted config."""

    index: int | None
    proven: bool
    status: str
    cuts: tuple[int, ...] = ()
    branches: int = 0


_COLUMNS: list[tuple[Sequence[Row], int, dict[str, list[int]]]] = []  # the last table's


def scaled(rows: Sequence[Row]) -> dict[str, list[int]]:
    """The integer columns of the table (see the module doc), kept for the table last asked
    about (a plan solves the same table for its pick, runners-up and relaxations)."""
    if _COLUMNS and _COLUMNS[0][0] is rows and _COLUMNS[0][1] == len(rows):
        return _COLUMNS[0][2]
    cols = _scaled(rows)
    _COLUMNS[:] = [(rows, len(rows), cols)]
    return cols


_UNDOMINATED: list[tuple[Sequence[Row], int, list[int]]] = []  # the last table's


def undominated(rows: Sequence[Row]) -> list[int]:
    """`_undominated`, kept for the table last asked about."""
    if _UNDOMINATED and _UNDOMINATED[0][0] is rows and _UNDOMINATED[0][1] == len(rows):
        return _UNDOMINATED[0][2]
    keep = _undominated(rows)
    _UNDOMINATED[:] = [(rows, len(rows), keep)]
    return keep


def _undominated(rows: Sequence[Row], block: int = 256) -> list[int]:
    """Rows no other row of the same layout dominates: strictly more tokens/s/GPU, strictly
    less TTFT and TPOT, no fewer tokens/s/user, a memory verdict no worse. A dominated row is
    the optimum under no targets and no objective of this module, whatever the tie-break
    (its dominator is feasible wherever it is and strictly better on each objective), so the
    joint model is built over these rows only: CP-SAT's element tables hold hundreds of rows,
    not thousands.

    Dominance is transitive and irreflexive, so a dominated row has an undominated
    dominator: each `block` of rows (by falling tokens/s/GPU) is compared, as arrays, with
    the rows kept before it and with itself."""
    import numpy as np  # a dependency of OR-Tools, loaded with it

    cols = scaled(rows)
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.worker.layout, []).append(i)
    names = ("thr", "ttft", "tpot", "user", "fits")
    table = np.array([cols[k] for k in names], dtype=np.int64)  # 5 x rows
    keep: list[int] = []
    for members in groups.values():
        members.sort(key=lambda i: -cols["thr"][i])
        sub = table[:, members]
        kept = np.zeros((5, 0), dtype=np.int64)
        for lo in range(0, len(members), block):
            part = sub[:, lo : lo + block]
            against = np.concatenate([kept, part], axis=1)
            g, t, p, u, f = (part[k][:, None] for k in range(5))
            fg, ft, fp, fu, ff = (against[k][None, :] for k in range(5))
            hit = ((fg > g) & (ft < t) & (fp < p) & (fu >= u) & (ff >= f)).any(axis=1)
            alive = np.flatnonzero(~hit)
            keep.extend(members[lo + int(j)] for j in alive)
            kept = np.concatenate([kept, part[:, alive]], axis=1)
    return sorted(keep)


def _scaled(rows: Sequence[Row]) -> dict[str, list[int]]:
    return {
        "ttft": [math.ceil(r.priced.ttft_ms * US) for r in rows],
        "tpot": [math.ceil(r.priced.tpot_ms * US) for r in rows],
        "thr": [math.floor(r.priced.tokens_per_second_per_gpu * MILLI) for r in rows],
        "user": [math.floor(r.priced.tokens_per_second_per_user * MILLI) for r in rows],
        "fits": [1 if r.fits else 0 for r in rows],
    }


def best(
    rows: Sequence[Row],
    targets: Targets,
    *,
    layout_ids: Sequence[int],
    forbid_layouts: Iterable[int] = (),
    accept: Callable[[int], bool] | None = None,
    objective: str = "thr",
    max_cuts: int = 50,
) -> Solved:
    """The best admissible row under the targets (`objective`: "thr" maximises tokens/s/GPU,
    "ttft"/"tpot" minimise that figure, for relaxations). `accept` is the lazy rule check of
    a chosen row; a refused row is cut and the model solved again."""
    cuts: list[int] = []
    forbid = tuple(forbid_layouts)
    branches = 0
    reduced = undominated(rows)
    while True:
        # after a cut, a row dominated only by the cut one may be the optimum: all rows then
        among = reduced if not cuts else list(range(len(rows)))
        index, status, proven, b = _solve(rows, among, targets, layout_ids, forbid, cuts, objective)
        branches += b
        if index is None or accept is None or accept(index):
            return Solved(index, proven, status, tuple(cuts), branches)
        cuts.append(index)
        if len(cuts) > max_cuts:
            return Solved(None, False, "CUT_LIMIT", tuple(cuts), branches)


def _within(
    full: dict[str, list[int]],
    among: Sequence[int],
    targets: Targets,
    layout_ids: Sequence[int],
    forbid: tuple[int, ...],
) -> list[int]:
    """The rows of `among` inside the model's bounds (memory verdict 1, the targets, the
    allowed layouts): the rows outside can take no value of `point`, so the element
    tables are built without them (the bounds stay in the model)."""
    ttft = math.floor(targets.ttft_ms * US) if math.isfinite(targets.ttft_ms) else None
    tpot = math.floor(targets.tpot_ms * US) if math.isfinite(targets.tpot_ms) else None
    user = (
        math.ceil(targets.min_tokens_per_user * MILLI)
        if targets.min_tokens_per_user is not None
        else None
    )
    banned = set(forbid)
    return [
        i
        for i in among
        if full["fits"][i] == 1
        and (ttft is None or full["ttft"][i] <= ttft)
        and (tpot is None or full["tpot"][i] <= tpot)
        and (user is None or full["user"][i] >= user)
        and layout_ids[i] not in banned
    ]


def _solve(
    rows: Sequence[Row],
    among: Sequence[int],
    targets: Targets,
    layout_ids: Sequence[int],
    forbid: tuple[int, ...],
    cuts: Sequence[int],
    objective: str,
) -> tuple[int | None, str, bool, int]:
    # OR-Tools loads only when a plan solves (the CLI's fast paths never import it)
    from ..cpsat import cp_model

    full = scaled(rows)
    among = _within(full, among, targets, layout_ids, forbid)
    if not among:
        return None, "INFEASIBLE", True, 0
    n = len(among)
    m = cp_model.CpModel()
    point = m.new_int_var(0, n - 1, "point")  # a position in `among`
    var = {}
    for name, whole in (*full.items(), ("layout", list(layout_ids))):
        col = [whole[i] for i in among]
        var[name] = m.new_int_var(min(col), max(col), name)
        m.add_element(point, col, var[name])
    m.add(var["fits"] == 1)  # arbiter's memory model accepts the batch at this budget
    if math.isfinite(targets.ttft_ms):  # an infinite bound: the figure is free (relaxations)
        m.add(var["ttft"] <= math.floor(targets.ttft_ms * US))
    if math.isfinite(targets.tpot_ms):
        m.add(var["tpot"] <= math.floor(targets.tpot_ms * US))
    if targets.min_tokens_per_user is not None:
        m.add(var["user"] >= math.ceil(targets.min_tokens_per_user * MILLI))
    for layout in forbid:
        m.add(var["layout"] != layout)
    position = {row: k for k, row in enumerate(among)}
    for cut in cuts:
        if cut in position:
            m.add(point != position[cut])
    # unique optimum, lexicographically: the figure first, then the lowest row index
    key = var[objective]
    if objective == "thr":
        m.maximize(key)
    else:
        m.minimize(key)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = 120.0
    status = solver.solve(m)
    branches = int(solver.num_branches)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, solver.status_name(status), status == cp_model.INFEASIBLE, branches
    proven = status == cp_model.OPTIMAL
    m.clear_objective()
    m.add(key == int(solver.value(key)))
    m.minimize(point)
    status = solver.solve(m)
    branches += int(solver.num_branches)
    proven = proven and status == cp_model.OPTIMAL
    return among[int(solver.value(point))], solver.status_name(status), proven, branches
