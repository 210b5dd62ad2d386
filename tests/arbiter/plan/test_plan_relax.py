"""Why not, and what would: an SLA the lattice cannot meet names the binding target with
its numbers, and the least relaxation is confirmed by the oracle and minimal on the lattice
(re-solved: the next step down is infeasible, checked here by brute force too); a model that
does not fit names the weights against the budget and the least GPU count."""

from __future__ import annotations

import math
import re

import pytest

from tests.arbiter.plan.conftest import TPOT, TTFT, needs_oracle, planned

pytestmark = needs_oracle


def _brute_feasible(rows, ttft, tpot):
    return any(r.fits and r.priced.ttft_ms <= ttft and r.priced.tpot_ms <= tpot for r in rows)


@pytest.mark.parametrize(("kind", "targets"), [("ttft", {"ttft": 100.0}), ("tpot", {"tpot": 5.0})])
def test_a_tight_target_binds_and_its_least_relaxation_is_minimal(kind, targets):
    ep = planned(**targets).engines[0]
    assert ep.pick is None and ep.proven_optimal
    why = ep.why_not
    assert kind in why.binding
    assert any("fastest prefill found" in line for line in why.lines)
    assert any("fastest decode found" in line for line in why.lines)
    relaxation = next(r for r in why.relaxations if r.kind == kind)
    bound = float(relaxation.value)
    ttft, tpot = targets.get("ttft", TTFT), targets.get("tpot", TPOT)
    step = 1.0 if kind == "ttft" else 0.1
    rows = ep.table.rows
    relaxed = (bound, tpot) if kind == "ttft" else (ttft, bound)
    lower = (bound - step, tpot) if kind == "ttft" else (ttft, bound - step)
    assert _brute_feasible(rows, *relaxed)
    assert not _brute_feasible(rows, *lower)  # the next step down is infeasible
    assert "infeasible" in relaxation.next_step
    confirmed = relaxation.confirmed  # re-priced by the oracle, within the relaxed target
    assert confirmed is not None and confirmed.accepted
    assert getattr(confirmed.priced, f"{kind}_ms") <= bound
    assert relaxation.text == (
        f"TTFT >= {bound:.0f} ms" if kind == "ttft" else f"TPOT >= {bound:.1f} ms"
    )
    assert math.isclose(
        bound, math.ceil(getattr(confirmed.priced, f"{kind}_ms") / step - 1e-9) * step
    )


def test_a_model_that_does_not_fit_names_the_weights_and_the_least_gpu_count():
    report = planned(model="meta-llama/Meta-Llama-3.1-70B", device="1xH100")
    ep = report.engines[0]
    assert ep.pick is None
    assert ep.why_not.binding == ["memory"]
    line = ep.why_not.lines[0]
    # TensorRT-LLM's fraction applies to what the weights leave (docs/memory.md): the line
    # reads "79.6 GiB - weights 131.4 GiB - workspace ... = -53.4 GiB free after loading"
    assert "weights 131.4 GiB" in line and "79.6 GiB" in line
    assert re.search(r"= -[\d.]+ GiB free after loading", line)
    gpus = next(r for r in ep.why_not.relaxations if r.kind == "gpus")
    assert gpus.value == 2 and gpus.text == "2 GPUs (1 node)"
    assert gpus.next_step == "1 GPUs: infeasible"
    assert gpus.confirmed is not None and gpus.confirmed.accepted
    assert gpus.confirmed.priced.ttft_ms <= TTFT and gpus.confirmed.priced.tpot_ms <= TPOT
    data = report.to_json()["engines"][0]
    assert data["feasible"] is False and data["lattice"]["refused_points"] > 0
