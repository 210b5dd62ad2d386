"""One input, one verdict, whichever door it comes through: the Python API
(`arbiter.check`), the command line (`arbiter check --json`, and its exit code), the HTTP
service (`POST /v1/check`, its status and JSON) and `compare`'s checker agree on the
verdict, the adjustments, the warnings and the written configuration, for generated
configurations of every engine. The LoRA + n-gram vLLM example, once accepted by the
command line and refused by the Python API, is a reject at every door."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import arbiter
from arbiter.cli import app
from arbiter.compare.run import checker
from arbiter.dialects import DIALECTS
from arbiter.dialects.protocol import Machine
from arbiter.report.schema import from_verdict
from arbiter.service import ServiceSettings, create_app
from tests.arbiter.test_dialect_fixed_points import SGLANG, VLLM, _optional

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests/fixtures/models/llama-3.1-8b.json"
DEVICE = "H100"

TRTLLM = _optional(
    **{
        "max_batch_size": st.sampled_from([8, 256, 2048]),
        "max_num_tokens": st.sampled_from([1024, 8192]),
        "max_seq_len": st.sampled_from([4096, 131072]),
        "tensor_parallel_size": st.sampled_from([1, 2]),
        "kv_cache_config": st.sampled_from(
            [
                {"enable_block_reuse": False},
                {"free_gpu_memory_fraction": 0.95},
                {"tokens_per_block": 48},
                {"dtype": "fp8", "enable_block_reuse": True},
            ]
        ),
        "enable_chunked_prefill": st.booleans(),
    }
)
MLC = st.fixed_dictionaries(
    {"mode": st.sampled_from(["local", "interactive", "server"])},
    optional={
        "max_num_sequence": st.sampled_from([1, 4, 64]),
        "prefill_chunk_size": st.sampled_from([512, 4096]),
        "kv_cache_page_size": st.sampled_from([16, 32]),
        "prefill_mode": st.sampled_from(["hybrid", "chunked"]),
        "speculative_mode": st.sampled_from(["disable", "small_draft"]),
        "prefix_cache_mode": st.sampled_from(["radix", "disable"]),
    },
)
GENERATORS = {"trtllm": TRTLLM, "vllm": VLLM, "sglang": SGLANG, "mlc": MLC}
LORA_NGRAM = {
    "enable-lora": True,
    "max-num-seqs": 2048,
    "speculative-config": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4},
}
# the fields of the `arbiter.verdict` report every door must agree on (the source and the
# assumptions' words differ by door: a file name, `--model` or the request's `model`)
COMPARED = (
    "verdict",
    "engine_changes",
    "warnings",
    "written",
    "conflicts",
    "fixes",
    "rules",
    "changes",
    "dropped",
    "capacity",
)


@pytest.fixture(scope="module")
def service():
    with TestClient(create_app(ServiceSettings(workers=1))) as client:
        yield client


def python_door(dialect: str, config: dict[str, Any], gpus: int) -> dict[str, Any]:
    verdict = arbiter.check(dialect, config, machine=Machine.read(LLAMA, DEVICE, gpus))
    return {**_fields(_report(verdict, dialect)), "code": verdict.exit_code}


def compare_door(dialect: str, config: dict[str, Any], gpus: int) -> dict[str, Any]:
    run, why = checker(dialect)
    assert run is not None, why
    verdict = run(config, machine=Machine.read(LLAMA, DEVICE, gpus))
    return {**_fields(_report(verdict, dialect)), "code": verdict.exit_code}


def _report(verdict: Any, dialect: str) -> dict[str, Any]:
    """The `arbiter.verdict` report of a Python API verdict, as the other doors print it."""
    fmt = "json" if verdict.format == "json" else "yaml"
    return from_verdict(verdict, dialect=dialect, format=fmt).to_json()


def cli_door(dialect: str, config: dict[str, Any], gpus: int, tmp: Path) -> dict[str, Any]:
    path = tmp / ("config.json" if dialect == "mlc" else "config.yaml")
    path.write_text(json.dumps(config) if dialect == "mlc" else yaml.safe_dump(config))
    args = ["check", str(path), "--dialect", dialect, "--model", str(LLAMA), "--device", DEVICE]
    result = CliRunner().invoke(app, [*args, "--gpus", str(gpus), "--json"])
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        return {"code": 2}
    return {**_fields(json.loads(result.stdout)), "code": result.exit_code}


def service_door(client: TestClient, dialect: str, config: dict[str, Any], gpus: int) -> dict:
    model = json.loads(LLAMA.read_text())
    body = {"dialect": dialect, "config": config, "model": model, "device": DEVICE, "gpus": gpus}
    response = client.post("/v1/check", json=body)
    codes = {200: 0, 409: 1, 422: 2}
    assert response.status_code in codes, response.text
    if response.status_code == 422:
        return {"code": 2}
    assert response.json()["schema"] == "arbiter.verdict"
    return {**_fields(response.json()), "code": codes[response.status_code]}


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({key: body[key] for key in COMPARED}, default=str))


def _all_doors(client, dialect, config, gpus, tmp) -> list[dict[str, Any]]:
    return [
        python_door(dialect, config, gpus),
        cli_door(dialect, config, gpus, tmp),
        service_door(client, dialect, config, gpus),
        compare_door(dialect, config, gpus),
    ]


@pytest.mark.parametrize("dialect", list(DIALECTS))
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_door_gives_the_same_verdict(service, tmp_path, dialect, data):
    config = data.draw(GENERATORS[dialect], label="config")
    gpus = data.draw(st.sampled_from([1, 2]), label="gpus")
    python, cli, http, compared = _all_doors(service, dialect, config, gpus, tmp_path)
    if python["code"] == 2:  # bad input: exit 2 and HTTP 422 (compare: a reject)
        assert cli["code"] == http["code"] == 2 and compared["verdict"] == "reject"
        return
    if not config:  # no settings: the command line and the service refuse it alike
        assert cli == http == {"code": 2}
    else:
        assert cli == python, "the command line differs from the Python API"
        assert http == python, "the service differs from the Python API"
    assert compared == python, "compare's checker differs from the Python API"
    assert python["code"] == (1 if python["verdict"] == "reject" else 0)


def test_the_lora_ngram_example_is_rejected_at_every_door(service, tmp_path):
    doors = _all_doors(service, "vllm", LORA_NGRAM, 1, tmp_path)
    for door in doors:
        assert door["verdict"] == "reject" and door["code"] == 1, door
        cited = [r for c in door["conflicts"] for r in c["rules"]]
        assert cited == ["vllm.lora.budget-holds-speculative-tokens"]
        assert door["written"] is None  # no configuration offered that vLLM refuses
    assert all(door == doors[0] for door in doors)
    text = CliRunner().invoke(
        app,
        ["check", "--dialect", "vllm", "--model", str(LLAMA), "--device", DEVICE]
        + [str(_written(tmp_path, LORA_NGRAM))],
    )
    assert text.exit_code == 1
    assert "vLLM keeps its default max_num_batched_tokens" in text.output


def test_the_json_carries_every_line_of_the_text(tmp_path):
    path = ROOT / "examples/vllm/llama-3.1-8b-h100.yaml"
    args = ["check", str(path), "--dialect", "vllm", "--model", str(LLAMA), "--device", DEVICE]
    text = CliRunner().invoke(app, [*args, "--verbose"])  # every line, the derivation's too
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert text.exit_code == 0
    derived = [c["text"] for c in data["engine_changes"] if c["kind"] == "derives"]
    assert any(line.startswith("vLLM would set") for line in derived)
    for line in derived + [w["text"] for w in data["warnings"]]:
        assert f"# {line}" in text.output
    assert f"# capacity: {data['capacity']['text']}" in text.output


def _written(tmp: Path, config: dict[str, Any]) -> Path:
    path = tmp / "lora.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
