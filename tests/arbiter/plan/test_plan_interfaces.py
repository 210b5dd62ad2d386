"""`arbiter plan` and `POST /v1/plan` through the real oracle on a one-GPU lattice: the same
JSON from both, exit 1 / 200 with the why-not for an SLA nothing meets, 422 for bad input,
501 with the install line when the extra is absent."""

from __future__ import annotations

import json
import sys

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.service.app import create_app
from tests.arbiter.plan.conftest import HAS_ORACLE, needs_oracle

ARGS = ["--model", "Qwen/Qwen3-32B", "--device", "1xH200", "--isl", "4000", "--osl", "1000"]
SMALL = ["--max-batch", "24", "--budget-step", "4096", "--max-pp", "1", "--runners-up", "0"]
BODY = {
    "model": "Qwen/Qwen3-32B",
    "device": "1xH200",
    "isl": 4000,
    "osl": 1000,
    "ttft": 2000,
    "tpot": 40,
    "max_batch": 24,
    "budget_step": 4096,
    "max_pp": 1,
    "runners_up": 0,
}


@needs_oracle
def test_the_command_and_the_service_answer_the_same_plan(tmp_path):
    result = CliRunner().invoke(
        app, ["plan", *ARGS, "--ttft", "2000", "--tpot", "40", *SMALL, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    cli = json.loads(result.output)
    pick = cli["engines"][0]["pick"]
    assert pick["workers"][0]["config"]["max_batch_size"] == pick["workers"][0]["batch"] <= 24
    response = TestClient(create_app()).post("/v1/plan", json=BODY)
    assert response.status_code == 200
    served = response.json()
    for data in (cli, served):
        for e in data["engines"]:
            e.pop("timings_s")
    assert served == cli


@needs_oracle
def test_an_sla_nothing_meets_exits_1_with_the_relaxation():
    result = CliRunner().invoke(app, ["plan", *ARGS, "--ttft", "50", "--tpot", "40", *SMALL])
    assert result.exit_code == 1
    assert "binding: ttft" in result.output and "would meet it: TTFT >=" in result.output


def test_the_service_names_a_bad_field():
    response = TestClient(create_app()).post("/v1/plan", json={**BODY, "engine": "mlc"})
    assert response.status_code == 422
    assert "engine" in response.json()["message"]


def test_the_service_says_how_to_install_the_extra(monkeypatch):
    from arbiter.plan import oracle

    monkeypatch.setattr(oracle, "_SDK", {})
    monkeypatch.setitem(sys.modules, "aiconfigurator_core", None)
    response = TestClient(create_app()).post("/v1/plan", json=BODY)
    assert response.status_code == 501
    assert response.json()["error"] == "plan_extra_missing"
    assert 'pip install ".[plan]"' in response.json()["message"]


@pytest.mark.skipif(HAS_ORACLE, reason="checks the plain install, where the extra is absent")
def test_without_the_extra_other_commands_still_work():
    result = CliRunner().invoke(app, ["profiles"])
    assert result.exit_code == 0
