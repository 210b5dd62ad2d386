"""Speculative decoding in the plan: MTP draft depths searched beside the plain points,
priced with the acceptance the user gives, and emitted as each engine spells it."""

from __future__ import annotations

import pytest

from .conftest import needs_oracle

pytestmark = needs_oracle

MTP_MODEL = "Qwen/Qwen3.5-27B"  # one MTP layer (mtp_num_hidden_layers), bundled by the oracle


def _plan(engine: str, **kw):
    from arbiter.plan import Lattice, plan

    lattice = Lattice(batches=tuple(range(8, 65, 8)), budgets=(2048, 4000), max_pp=1)
    return plan(
        MTP_MODEL, "2xH200", 4000, 1000, 2000, 30, engine, lattice=lattice, runners_up=0, **kw
    )


_CACHE: dict = {}


def planned(engine: str, **kw):
    key = (engine, tuple(sorted(kw.items())))
    if key not in _CACHE:
        _CACHE[key] = _plan(engine, **kw)
    return _CACHE[key]


def _pick(report):
    (engine,) = report.engines
    return engine.pick


def test_a_draft_that_is_never_accepted_is_never_picked():
    best = _pick(planned("vllm", nextn=2, accept_rate=0.0))
    assert best is not None
    assert best.worker.nextn == 0
    assert "speculative-config" not in best.config


def test_searching_drafts_never_loses_and_the_pick_is_emitted_as_priced():
    plain = _pick(planned("vllm"))
    spec = _pick(planned("vllm", nextn=2, accept_rate=0.8))
    assert plain is not None and spec is not None
    # the plain points are in the speculative lattice too (depth 0)
    assert spec.priced.tokens_per_second_per_gpu >= plain.priced.tokens_per_second_per_gpu
    assert spec.worker.nextn > 0  # at 80 % acceptance a draft pays on this scenario
    assert spec.accepted
    assert spec.config["speculative-config"] == {
        "method": "mtp",
        "num_speculative_tokens": spec.worker.nextn,
    }
    # priced with the chain's acceptance at the picked depth
    k = spec.worker.nextn
    assert spec.worker.draft_accept == pytest.approx(sum(0.8**i for i in range(1, k + 1)))
    data = planned("vllm", nextn=2, accept_rate=0.8).to_json()
    depths = data["engines"][0]["lattice"]["draft_depths"]
    assert [d["draft_tokens"] for d in depths] == [0, 1, 2]


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_each_engine_spells_the_draft_its_own_way(engine):
    from arbiter.plan.emit import Worker, worker_config
    from arbiter.plan.layout import Layout

    config = worker_config(engine, Worker(Layout(tp=2), 32, 2048, "auto", 5000, 2, 1.4))
    if engine == "sglang":
        assert config["speculative-algorithm"] == "EAGLE"
        assert config["speculative-num-steps"] == 2
        assert config["speculative-num-draft-tokens"] == 3
    else:
        assert config["speculative_config"] == {
            "decoding_type": "MTP",
            "num_nextn_predict_layers": 2,
        }
