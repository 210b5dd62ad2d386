"""The planner's parts that need no oracle: request validation, layouts, GPU steps, the
joint CP-SAT model against brute force on generated tables, the missing-extra answer."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.plan import Lattice, PlanExtraMissing, PlanInputError, PlanRequest
from arbiter.plan.emit import Worker
from arbiter.plan.layout import Layout, layouts
from arbiter.plan.oracle import Priced
from arbiter.plan.relax import gpu_steps
from arbiter.plan.solve import MILLI, US, Targets, _undominated, best
from arbiter.plan.table import Row, refinement

ARGS = dict(model="Qwen/Qwen3-32B", device="8xH200", isl=4000, osl=1000, ttft=2000, tpot=40)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"device": "8xTPU"}, "device"),
        ({"device": "8xV100-16GB"}, "device"),  # in arbiter's catalog, not in the oracle's
        ({"engine": "mlc"}, "engine"),
        ({"isl": 0}, "isl"),
        ({"osl": 1}, "osl"),
        ({"ttft": -5}, "ttft"),
        ({"tpot": 0}, "tpot"),
        ({"nextn": 2, "nextn_accept": None}, "nextn"),  # a draft depth needs an acceptance
        ({"nextn": 9, "accept_rate": 0.5}, "nextn"),
        ({"nextn": 2, "accept_rate": 1.5}, "accept_rate"),
        ({"nextn": 2, "nextn_accept": 2.5}, "nextn_accept"),
        ({"nextn": 2, "accept_rate": 0.5, "nextn_accept": 1.0}, "nextn_accept"),
    ],
)
def test_bad_plan_input_names_the_field_and_the_allowed_values(change, field):
    with pytest.raises(PlanInputError) as info:
        PlanRequest.make(**{**ARGS, **change})
    assert info.value.field == field
    assert info.value.exit_code == 2
    assert "allowed:" in str(info.value) and field in str(info.value)


def test_the_draft_depths_searched_and_their_acceptance():
    assert PlanRequest.make(**ARGS).drafts() == ((0, None),)
    fixed = PlanRequest.make(**ARGS, nextn=3, nextn_accept=1.8)
    assert fixed.drafts() == ((0, None), (3, 1.8))
    chain = PlanRequest.make(**ARGS, nextn=3, accept_rate=0.5).drafts()
    assert [k for k, _ in chain] == [0, 1, 2, 3]
    # depth k accepts rate + rate^2 + ... + rate^k tokens a step
    assert [a for _, a in chain[1:]] == pytest.approx([0.5, 0.75, 0.875])


@pytest.mark.parametrize(
    "lattice",
    [
        {"max_batch": 0},
        {"budget_step": 8},
        {"max_pp": 0},
        {"latency_cutoff": 0.5},
        {"kv_dtypes": ("int4",)},
        {"refine_step": 32},
        {"refine_centres": 0},
    ],
)
def test_a_bad_lattice_is_refused_with_its_domain(lattice):
    from arbiter.plan import Lattice

    with pytest.raises(PlanInputError) as info:
        PlanRequest.make(**ARGS, lattice=Lattice(**lattice))
    assert "allowed:" in str(info.value)


def test_a_request_reads_the_gpu_count_and_all_engines():
    req = PlanRequest.make(**{**ARGS, "device": "16xH100", "engine": "all"})
    assert (req.gpus, req.nodes, req.system) == (16, 2, "h100_sxm")
    assert req.engines == ("trtllm", "vllm", "sglang")


def test_the_budget_grid_holds_the_isl_multiples_and_the_chunked_steps():
    req = PlanRequest.make(**ARGS)
    grid = req.lattice.budget_values(4000)
    assert grid[0] == 512 and max(grid) == 8192
    assert {4000, 8000, 512, 1024} <= set(grid)


def test_dense_layouts_search_pipeline_parallelism_within_the_gpu_budget():
    found = layouts("vllm", 8, False, max_pp=8)
    assert Layout(2, 4) in found and Layout(8, 1) in found
    assert all(x.gpus <= 8 for x in found)
    assert Layout(16, 1) not in layouts("vllm", 16, False)  # tensor parallel within a node


def test_moe_layouts_follow_each_engines_shapes():
    trt = layouts("trtllm", 8, True)
    assert all(not (x.dp > 1 and x.tp > 1) for x in trt)  # no attention TP with attention DP
    vllm = layouts("vllm", 8, True)
    assert all(not ((x.moe_tp or 1) > 1 and (x.moe_ep or 1) > 1) for x in vllm)
    assert all(x.tp * x.dp == (x.moe_tp or 1) * (x.moe_ep or 1) for x in trt + vllm)
    assert Layout(1, 1, 8, 1, 8) in trt


def test_gpu_steps_double_within_a_node_then_add_whole_nodes():
    assert gpu_steps(1, 8)[:4] == [2, 4, 8, 16]
    assert gpu_steps(8, 8)[:2] == [16, 24]
    assert max(gpu_steps(8, 8)) == 64


def _row(i, ttft, tpot, thr, fits, tp):
    priced = Priced(ttft, tpot, thr, 1000.0 / tpot, 10.0, False, False)
    return Row(Worker(Layout(tp), i + 1, 512, "auto", 5000), priced, fits, None)


rows_strategy = st.lists(
    st.tuples(
        st.integers(1, 400),  # TTFT, ms
        st.integers(5, 60),  # TPOT, ms
        st.integers(1, 50),  # tokens/s/GPU (coarse: ties happen)
        st.booleans(),  # arbiter's memory verdict
        st.sampled_from([1, 2, 4]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40)
@given(rows_strategy, st.integers(1, 400), st.integers(5, 60), st.sets(st.integers(0, 24)))
def test_the_joint_model_finds_the_brute_force_optimum(spec, ttft, tpot, refused):
    rows = [_row(i, *s) for i, s in enumerate(spec)]
    ids = [r.worker.layout.tp for r in rows]
    solved = best(rows, Targets(ttft, tpot), layout_ids=ids, accept=lambda i: i not in refused)
    ok = [
        i
        for i, r in enumerate(rows)
        if r.fits
        and r.priced.ttft_ms * US <= ttft * US
        and r.priced.tpot_ms <= tpot
        and i not in refused
    ]
    if not ok:
        assert solved.index is None and solved.proven
        return
    top = max(math.floor(rows[i].priced.tokens_per_second_per_gpu * MILLI) for i in ok)
    expect = min(
        i for i in ok if math.floor(rows[i].priced.tokens_per_second_per_gpu * MILLI) == top
    )
    assert solved.index == expect and solved.proven
    assert set(solved.cuts) <= refused
    # a forbidden layout is never chosen
    other = best(rows, Targets(ttft, tpot), layout_ids=ids, forbid_layouts=[ids[expect]])
    assert other.index is None or ids[other.index] != ids[expect]


@settings(max_examples=40)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 9),
            st.integers(1, 9),
            st.integers(1, 9),
            st.booleans(),
            st.sampled_from([1, 2]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 7),
)
def test_the_undominated_rows_are_those_no_row_of_their_layout_dominates(spec, block):
    rows = [_row(i, *s) for i, s in enumerate(spec)]

    def dominates(a, b):
        pa, pb = a.priced, b.priced
        return (
            a.worker.layout == b.worker.layout
            and pa.tokens_per_second_per_gpu > pb.tokens_per_second_per_gpu
            and pa.ttft_ms < pb.ttft_ms
            and pa.tpot_ms < pb.tpot_ms
            and pa.tokens_per_second_per_user >= pb.tokens_per_second_per_user
            and a.fits >= b.fits
        )

    expect = [i for i, r in enumerate(rows) if not any(dominates(o, r) for o in rows)]
    assert _undominated(rows, block=block) == expect


def _at(budget, batch, thr, ttft=500.0, tpot=30.0, fits=True):
    priced = Priced(ttft, tpot, thr, 1000.0 / tpot, 10.0, False, False)
    return Row(Worker(Layout(2), batch, budget, "auto", 5000), priced, fits, None)


def test_the_dense_lattice_surrounds_the_best_budgets_that_meet_the_targets():
    req = PlanRequest.make(**ARGS)  # TTFT 2000, TPOT 40; budgets every 128 from 256
    batches, budgets = tuple(range(4, 129, 4)), (512, 1024, 2048, 4000)
    rows = [
        _at(512, 40, 100.0),
        _at(1024, 60, 90.0),
        _at(4000, 64, 80.0),  # the third best budget: no centre
        _at(2048, 10, 500.0, ttft=3000.0),  # fastest, but misses TTFT
        _at(2048, 12, 400.0, fits=False),  # and beyond arbiter's memory model
    ]
    fine = refinement(req, rows, batches, budgets)
    # less than 512 tokens either side of 512 and 1024, never below 256 or on the first grid
    assert sorted(fine) == [256, 384, 512, 640, 768, 896, 1024, 1152, 1280, 1408]
    near = set(range(32, 49))
    assert set(fine[256]) == {b for b in batches if 20 <= b <= 80} | near
    assert set(fine[512]) == near - set(batches)  # the centre's own budget: the new batches
    assert set(fine[640]) == {b for b in batches if 20 <= b <= 120} | near | set(range(52, 69))
    # an infeasible layout, or no second lattice asked for: nothing more is priced
    assert refinement(req, [_at(512, 40, 100.0, tpot=50.0)], batches, budgets) == {}
    flat = PlanRequest.make(**ARGS, lattice=Lattice(refine_step=None))
    assert refinement(flat, rows, batches, budgets) == {}


def test_without_the_extra_plan_says_how_to_install_it(monkeypatch):
    from arbiter.plan import oracle

    monkeypatch.setattr(oracle, "_SDK", {})
    monkeypatch.setitem(sys.modules, "aiconfigurator_core", None)  # an import then fails
    with pytest.raises(PlanExtraMissing) as info:
        oracle.sdk()
    assert 'pip install ".[plan]"' in str(info.value) and info.value.exit_code == 2
    result = CliRunner().invoke(
        app,
        ["plan", "--model", "Qwen/Qwen3-32B", "--device", "8xH200", "--isl", "4000"]
        + ["--osl", "1000", "--ttft", "2000", "--tpot", "40"],
    )
    assert result.exit_code == 2
    assert 'pip install ".[plan]"' in result.output and "Traceback" not in result.output


def test_the_plan_command_refuses_an_unknown_format_before_any_pricing():
    result = CliRunner().invoke(
        app,
        ["plan", "--model", "x", "--device", "8xH200", "--isl", "4000", "--osl", "1000"]
        + ["--ttft", "2000", "--tpot", "40", "--format", "pdf"],
    )
    assert result.exit_code == 2 and "format" in result.output
