"""Disaggregated plans: prefill and decode pools, each worker priced on its phase, checked in
its role, the pools within the GPU budget, the figure the pool arithmetic gives."""

from __future__ import annotations

import pytest

from .conftest import MODEL, needs_oracle

pytestmark = needs_oracle

_CACHE: dict = {}


def planned(engine: str):
    from arbiter.plan import Lattice, plan

    if engine not in _CACHE:
        lattice = Lattice(batches=tuple(range(8, 129, 8)), budgets=(2048, 4000), max_pp=1)
        _CACHE[engine] = plan(
            MODEL, "4xH200", 4000, 1000, 2000, 40, engine, lattice=lattice, runners_up=0
        )
    return _CACHE[engine]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_disaggregated_pick_meets_the_targets_and_every_role_config_passes_check(engine):
    from arbiter.plan.disagg import DECODE_DERATE, PREFILL_DERATE
    from arbiter.plan.emit import check_worker
    from arbiter.plan.oracle import bundled_config

    (ep,) = planned(engine).engines
    dis = ep.disagg.pick
    assert dis is not None, ep.disagg.to_json()
    assert dis.ttft_ms <= 2000 and dis.tpot_ms <= 40
    assert dis.gpus <= 4 and dis.prefill_workers >= 1 and dis.decode_workers >= 1
    # the figure is the pool arithmetic of its own workers
    served = min(
        PREFILL_DERATE * dis.prefill_workers * dis.prefill.rate,
        DECODE_DERATE * dis.decode_workers * dis.decode.rate,
    )
    assert dis.tokens_per_second_per_gpu == pytest.approx(served * 1000 / dis.gpus)
    roles = {"prefill": dis.prefill.worker, "decode": dis.decode.worker}
    for role, worker in roles.items():
        config = dis.configs[role]
        checked = check_worker(engine, config, bundled_config(MODEL), "H200", worker.layout.gpus)
        assert checked.accepted, (role, checked.reason)
    if engine == "sglang":
        assert dis.configs["prefill"]["disaggregation-mode"] == "prefill"
        assert dis.configs["decode"]["disaggregation-mode"] == "decode"
    elif engine == "vllm":
        assert dis.configs["decode"]["kv-transfer-config"]["kv_connector"] == "NixlConnector"
    else:
        assert dis.configs["prefill"]["disable_overlap_scheduler"] is True


def test_the_disaggregated_figures_reprice_under_a_fresh_oracle():
    from arbiter.plan.disagg import DECODE_SCALE, PREFILL_SCALE, TTFT_CORRECTION
    from arbiter.plan.oracle import Oracle

    (ep,) = planned("vllm").engines
    dis = ep.disagg.pick
    fresh = Oracle("h200_sxm", "vllm", MODEL)
    p, d = dis.prefill.worker, dis.decode.worker
    pre = fresh.static(p.layout, p.batch, 4000, 1000, "prefill", PREFILL_SCALE)
    dec = fresh.static(d.layout, d.batch, 4000, 1000, "decode", DECODE_SCALE)
    assert TTFT_CORRECTION * pre["latency_ms"] == pytest.approx(dis.ttft_ms)
    assert dec["latency_ms"] == pytest.approx(dis.tpot_ms)


def test_the_json_and_the_renderers_carry_both_modes():
    from arbiter.plan.render import render

    data = planned("vllm").to_json()
    e = data["engines"][0]
    assert e["best_mode"] in ("aggregated", "disaggregated")
    assert [w["role"] for w in e["disagg"]["pick"]["workers"]] == ["prefill", "decode"]
    assert "disaggregated" in render(data, "text")
    assert "(disaggregated)" in render(data, "markdown")


def test_the_pool_arithmetic_reproduces_the_oracles_own_disaggregated_figure():
    """AIConfigurator 0.12.0's own figure for its disaggregated pick of vLLM Llama-3.1-70B on
    8x H200, ISL 4000 / OSL 1000 (`aiconfigurator.cli.api.cli_estimate(mode="disagg",
    backend_name="vllm", prefill_tp_size=2, prefill_batch_size=1, prefill_num_workers=2,
    decode_tp_size=4, decode_batch_size=96, decode_num_workers=1)`, run here): TTFT 897.179 ms,
    TPOT 24.473 ms, 451.35 tokens/s/GPU (its rows round seq/s to three decimals, hence the
    0.1 tolerance)."""
    from arbiter.plan.disagg import (
        DECODE_SCALE,
        PREFILL_SCALE,
        TTFT_CORRECTION,
        DisaggPick,
        RolePoint,
    )
    from arbiter.plan.emit import Worker
    from arbiter.plan.layout import Layout
    from arbiter.plan.oracle import Oracle

    oracle = Oracle("h200_sxm", "vllm", "meta-llama/Meta-Llama-3.1-70B")
    pre = oracle.static(Layout(tp=2), 1, 4000, 1000, "prefill", PREFILL_SCALE)
    dec = oracle.static(Layout(tp=4), 96, 4000, 1000, "decode", DECODE_SCALE)
    prefill = RolePoint(
        "prefill",
        Worker(Layout(tp=2), 1, 4000, "auto", 5000),
        TTFT_CORRECTION * pre["latency_ms"],
        pre["rate"],
        pre["memory_gib"],
    )
    decode = RolePoint(
        "decode",
        Worker(Layout(tp=4), 96, 2048, "auto", 5000),
        dec["latency_ms"],
        dec["rate"],
        dec["memory_gib"],
    )
    pick = DisaggPick(prefill, decode, 2, 1, 1000)
    assert pick.ttft_ms == pytest.approx(897.179, abs=0.01)
    assert pick.tpot_ms == pytest.approx(24.473, abs=0.001)
    assert pick.tokens_per_second_per_gpu == pytest.approx(451.35, abs=0.1)
