"""Small plans through the real oracle (AIConfigurator's estimator): the pick is the brute
force optimum of the priced table among the rows arbiter accepts, it meets every target
under the oracle, the answer is deterministic, and every emitted worker config passes
`arbiter check` for its profile."""

from __future__ import annotations

import math

import pytest

from tests.arbiter.plan.conftest import TPOT, TTFT, needs_oracle, planned, small_request

pytestmark = needs_oracle


def _engine(engine="trtllm"):
    return planned(engine).engines[0]


def test_the_pick_is_the_brute_force_optimum_of_the_priced_table():
    from arbiter.plan.emit import check_worker, worker_config
    from arbiter.plan.planner import resolve_model
    from arbiter.plan.solve import MILLI

    ep = _engine()
    rows = ep.table.rows
    assert ep.proven_optimal and ep.lattice["status"] == "OPTIMAL"
    ok = [
        (-math.floor(r.priced.tokens_per_second_per_gpu * MILLI), i)
        for i, r in enumerate(rows)
        if r.fits and r.priced.ttft_ms <= TTFT and r.priced.tpot_ms <= TPOT
    ]
    _, model_file = resolve_model("Qwen/Qwen3-32B")
    expect = None
    for _, i in sorted(ok):  # the best row whose emitted config arbiter accepts
        w = rows[i].worker
        if check_worker(
            "trtllm", worker_config("trtllm", w), model_file, "H200", w.layout.gpus
        ).accepted:
            expect = i
            break
    assert expect is not None
    assert ep.pick.worker == rows[expect].worker
    assert ep.lattice["points"] >= len(rows) > 100
    # rows beyond arbiter's memory model exist only where the oracle still says they fit
    assert all(not (r.priced.oracle_kv_oom or r.priced.oracle_oom) for r in rows if not r.fits)


def test_the_pick_and_runners_up_meet_the_targets_under_a_fresh_oracle():
    from arbiter.plan.oracle import Oracle
    from arbiter.plan.planner import resolve_model

    ep = _engine()
    model_id, _ = resolve_model("Qwen/Qwen3-32B")
    fresh = Oracle("h200_sxm", "trtllm", model_id)
    for point in [ep.pick, *ep.runners_up]:
        w = point.worker
        again = fresh.price(w.layout, w.batch, w.budget, 4000, 1000)
        assert again is not None
        assert again.ttft_ms <= TTFT and again.tpot_ms <= TPOT
        assert again.tokens_per_second_per_gpu == pytest.approx(
            point.priced.tokens_per_second_per_gpu
        )
    layouts = [p.worker.layout for p in [ep.pick, *ep.runners_up]]
    assert len(set(layouts)) == len(layouts) >= 2  # distinct layouts
    figures = [p.priced.tokens_per_second_per_gpu for p in [ep.pick, *ep.runners_up]]
    assert figures == sorted(figures, reverse=True)


def test_a_plan_is_deterministic():
    from arbiter.plan import plan_request

    def strip(data):
        for e in data["engines"]:
            e.pop("timings_s")
        return data

    first = strip(planned().to_json())
    again = strip(plan_request(small_request()).to_json())
    assert first == again


@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_every_emitted_worker_config_passes_arbiter_check(engine):
    from arbiter.application.check import check_verdict
    from arbiter.plan.emit import PROFILES
    from arbiter.plan.planner import resolve_model

    ep = planned(engine).engines[0]
    assert ep.pick is not None
    _, model_file = resolve_model("Qwen/Qwen3-32B")
    for point in [ep.pick, *ep.runners_up]:
        assert point.accepted
        config = point.config
        verdict = check_verdict(
            dict(config),
            engine,
            model=model_file,
            device="H200",
            gpus=point.worker.layout.gpus,
            profile=PROFILES[engine],
        )
        assert verdict.verdict in ("accept", "adjust"), verdict.reasons
        resolution = verdict.resolution
        # what is served is what was priced
        assert resolution.values["build_config.max_seq_len"] == 5000
        batch = resolution.values["build_config.max_batch_size"]
        assert batch == point.worker.batch * (point.worker.layout.dp if engine == "sglang" else 1)
        assert resolution.values["parallel_config.tensor_parallel_size"] == point.worker.layout.tp


def test_the_json_carries_the_pick_and_the_oracle_provenance():
    data = planned().to_json()
    e = data["engines"][0]
    pick = e["pick"]
    for key in ("tokens_per_second_per_gpu", "tokens_per_second_per_user", "ttft_ms", "tpot_ms"):
        assert pick[key] > 0
    assert pick["workers"][0]["config"]["max_batch_size"] == pick["workers"][0]["batch"]
    assert (
        pick["oracle"]["source_mix"] and abs(sum(pick["oracle"]["source_mix"].values()) - 1) < 0.01
    )
    assert e["oracle"]["database_version"].startswith("trtllm 1.3")
    assert "TensorRT-LLM 1.2" in e["oracle"]["version_skew"]
    assert pick["memory"]["agree"] in (True, False)
    lat = e["lattice"]
    parts = ("priced", "unpriced", "pruned_beyond_memory", "cut_beyond_latency", "refused_points")
    assert lat["points"] == sum(lat[k] for k in parts) and lat["cut_beyond_latency"] > 0
    # the denser second lattice is counted in the points and holds budgets off the first grid
    assert 0 < lat["fine_points"] < lat["points"] and lat["refinement"]
    table = planned().engines[0].table
    assert any(r.worker.budget not in lat["token_budgets"] for r in table.rows)


def test_renderers_and_chart(tmp_path):
    from arbiter.plan.chart import write_chart
    from arbiter.plan.render import render

    data = planned().to_json()
    text = render(data, "text")
    assert "pick:" in text and "proven optimal" in text
    assert "| trtllm |" in render(data, "markdown")
    assert render(data, "html").startswith("<!doctype html>")
    svg = write_chart(data, tmp_path / "plan.svg")
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_engines_side_by_side_in_one_table_and_one_chart(tmp_path):
    from arbiter.plan.chart import write_chart
    from arbiter.plan.render import render
    from arbiter.plan.result import PlanReport

    plans = [planned(e).engines[0] for e in ("trtllm", "vllm", "sglang")]
    report = PlanReport(planned().to_json()["request"], plans)
    data = report.to_json()
    best = max(plans, key=lambda e: e.pick.priced.tokens_per_second_per_gpu)
    assert data["best_engine"] == best.engine
    table = render(data, "markdown")
    assert all(f"| {e} |" in table for e in ("trtllm", "vllm", "sglang"))
    for e in data["engines"]:
        front = e["pareto_front"]
        assert (
            front
            and all(  # a front: rising tok/s/user, falling tok/s/GPU
                a["tokens_per_second_per_gpu"] >= b["tokens_per_second_per_gpu"]
                for a, b in zip(front, front[1:], strict=False)
            )
        )
        # the pick is on or under its engine's front
        pick = e["pick"]
        assert any(
            p["tokens_per_second_per_gpu"] >= pick["tokens_per_second_per_gpu"]
            and p["tokens_per_second_per_user"] >= pick["tokens_per_second_per_user"]
            for p in front
        )
    png = write_chart(data, tmp_path / "engines.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_engine_all_through_the_command(tmp_path):
    from typer.testing import CliRunner

    from arbiter.cli import app

    chart = tmp_path / "all.svg"
    result = CliRunner().invoke(
        app,
        ["plan", "--model", "Qwen/Qwen3-32B", "--device", "1xH200", "--isl", "4000"]
        + ["--osl", "1000", "--ttft", "2000", "--tpot", "40", "--engine", "all"]
        + ["--max-batch", "32", "--budget-step", "4096", "--max-pp", "1", "--chart", str(chart)],
    )
    assert result.exit_code == 0, result.output
    assert "best engine:" in result.output and chart.stat().st_size > 1000


def test_the_latency_cutoff_keeps_the_optimum_of_the_whole_lattice():
    from dataclasses import replace

    from arbiter.plan import plan_request
    from tests.arbiter.plan.conftest import small_lattice

    cut = planned().engines[0]
    whole = plan_request(
        small_request(lattice=replace(small_lattice(), latency_cutoff=None)), runners_up=0
    ).engines[0]
    assert whole.lattice["cut_beyond_latency"] == 0
    assert whole.lattice["priced"] > cut.lattice["priced"]
    assert whole.pick.worker == cut.pick.worker
