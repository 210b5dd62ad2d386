"""`arbiter check FILE` as a deployer first meets it: the dialect detected, the model read
from the config (never a silent default), the GPUs the layout needs said as an
assumption, one `checked against:` line first, `--format json|sarif`, `-o FILE` whose
written config checks the same, and `solve` pointing an engine config at `check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arbiter.cli import app

from .test_examples import CASES, EXAMPLES, PROFILE

VLLM_PROD = """\
model: meta-llama/Llama-3.1-8B-Instruct
tensor-parallel-size: 2
gpu-memory-utilization: 0.92
max-model-len: 131072
max-num-seqs: 512
max-num-batched-tokens: 16384
enable-prefix-caching: true
enable-chunked-prefill: true
kv-cache-dtype: fp8
host: 0.0.0.0
port: 8000
"""
SGLANG_PROD = """\
model-path: meta-llama/Llama-3.1-8B-Instruct
tp-size: 2
context-length: 65536
mem-fraction-static: 0.85
"""
MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                    "--tensor-parallel-size", "2", "--max-model-len", "131072"]
          resources:
            limits:
              nvidia.com/gpu: 2
"""


def run(*args: str):
    result = CliRunner().invoke(app, ["check", *args])
    return result, result.stdout, result.stderr if result.stderr_bytes else ""


def write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def test_the_newcomers_vllm_config_is_checked_against_its_own_model(tmp_path):
    result, out, _ = run(write(tmp_path, "vllm_prod.yaml", VLLM_PROD))
    assert result.exit_code == 0, result.output  # was a reject on the silent 8192-position model
    first = out.splitlines()[0]
    assert first.startswith("# checked against: meta-llama/Llama-3.1-8B-Instruct")
    assert "the config's model, catalog" in first
    assert "2x H100-80GB (assumed from tensor-parallel-size 2; pass --gpus)" in first
    assert "vLLM (vllm-0.33)" in first
    config = yaml.safe_load(out)  # the report is comments only: the output stays YAML
    assert config["max-model-len"] == 131072 and config["tensor-parallel-size"] == 2


def test_the_sglang_model_path_is_the_model(tmp_path):
    result, out, _ = run(write(tmp_path, "sglang.yaml", SGLANG_PROD))
    assert result.exit_code == 0, result.output  # was a false context-length conflict
    assert out.startswith("# checked against: meta-llama/Llama-3.1-8B-Instruct")
    assert "the config's model-path" in out.splitlines()[0]
    assert "SGLang (sglang-0.5.23)" in out.splitlines()[0]


def test_no_model_anywhere_is_exit_2_naming_model(tmp_path):
    path = write(tmp_path, "nomodel.yaml", "tensor-parallel-size: 2\nmax-num-seqs: 64\n")
    result, _, _ = run(path)
    assert result.exit_code == 2
    assert "--model" in result.output and "never assumes" in result.output
    given, _, _ = run(path, "--model", "meta-llama/Llama-3.1-8B-Instruct")
    assert given.exit_code == 0, given.output


def test_an_unknown_model_is_exit_2_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an unknown id is not looked up online
    path = write(tmp_path, "vllm.yaml", "model: nosuchorg/nosuchmodel-xyz\nmax-num-seqs: 8\n")
    result, _, _ = run(path, "--format", "json")
    assert result.exit_code == 2
    body = json.loads(result.stdout)
    assert body["verdict"] == "error" and body["input_errors"]
    assert "nosuchorg/nosuchmodel-xyz" in json.dumps(body)


def test_an_empty_file_is_exit_2(tmp_path):
    result, _, _ = run(write(tmp_path, "empty.yaml", "# nothing yet\n"))
    assert result.exit_code == 2
    assert "holds no settings" in result.output


def test_given_gpus_and_device_count_win_over_the_layout(tmp_path):
    path = write(tmp_path, "vllm_prod.yaml", VLLM_PROD)
    one, _, _ = run(path, "--gpus", "1", "--format", "json")
    assert one.exit_code == 1  # two ranks on one GPU
    assert json.loads(one.stdout)["assumptions"]["items"][-1] == {
        "name": "gpus",
        "value": 1,
        "source": "--gpus",
    }
    named, out, _ = run(path, "--device", "2xH100-80GB")
    assert named.exit_code == 0, named.output
    assert "2x H100-80GB (--device)" in out.splitlines()[0]


def test_a_wrong_dialect_is_named(tmp_path):
    result, _, err = run(write(tmp_path, "vllm_prod.yaml", VLLM_PROD), "--dialect", "sglang")
    assert "--dialect vllm" in result.output + err


def test_a_manifest_checks_its_workload_with_its_gpu_limits(tmp_path):
    result, out, _ = run(write(tmp_path, "deploy.yaml", MANIFEST))
    assert result.exit_code == 0, result.output
    assert "# workload: Deployment/llama" in out
    assert "2x H100-80GB (the manifest's GPU limits)" in out


def test_json_carries_the_assumptions_and_sarif_renders(tmp_path):
    path = write(tmp_path, "vllm_prod.yaml", VLLM_PROD)
    result, out, _ = run(path, "--json")
    body = json.loads(out)
    assert body["assumptions"]["summary"].startswith("meta-llama/Llama-3.1-8B-Instruct")
    assert {i["name"] for i in body["assumptions"]["items"]} >= {"model", "device", "gpus"}
    sarif, out, _ = run(path, "--gpus", "1", "--format", "sarif")
    assert sarif.exit_code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["runs"][0]["results"]


def test_an_unknown_format_is_refused_before_any_work(tmp_path):
    result, _, _ = run(write(tmp_path, "v.yaml", VLLM_PROD), "--format", "yaml")
    assert result.exit_code == 2 and "unknown format" in result.output


def test_solve_on_an_engine_config_names_check(tmp_path):
    path = write(tmp_path, "vllm_prod.yaml", VLLM_PROD)
    result = CliRunner().invoke(app, ["solve", path])
    assert result.exit_code == 2
    assert "use `arbiter check`" in result.output


# accepted or adjusted files (an engine folder's written config needs its folder's line)
WRITABLE = [c for c in CASES if c[5] == 0 and c[4] is None and not (EXAMPLES / c[0]).is_dir()]


@pytest.mark.parametrize("case", WRITABLE, ids=lambda c: c[0])
def test_the_written_config_checks_the_same(case, tmp_path):
    file, dialect, model, device, _, _, _ = case
    args = ["--dialect", dialect, "--device", device]
    if file in PROFILE:
        args += ["--profile", PROFILE[file]]
    if model:
        args += ["--model", str(EXAMPLES / model)]
    fixed = tmp_path / f"fixed{Path(file).suffix}"
    first, _, _ = run(str(EXAMPLES / file), *args, "-o", str(fixed))
    assert first.exit_code == 0, first.output
    before, _, _ = run(str(EXAMPLES / file), *args, "--json")
    again, _, _ = run(str(fixed), *args, "--json")
    assert again.exit_code == 0, again.output
    b, a = json.loads(before.stdout), json.loads(again.stdout)
    assert a["written"]["config"] == b["written"]["config"]  # the fixed config: a fixed point
    assert a["verdict"] in ("accept", b["verdict"])


def test_compare_takes_the_shared_format_option():
    intent = str(EXAMPLES / "compare" / "chat.yaml")
    both = ["compare", intent, "--engines", "vllm"]
    alias = CliRunner().invoke(app, [*both, "--json"])
    assert alias.exit_code in (0, 1), alias.output
    assert json.loads(alias.stdout) == json.loads(
        CliRunner().invoke(app, [*both, "--format", "json"]).stdout
    )
    sarif = CliRunner().invoke(app, [*both, "--format", "sarif"])
    assert sarif.exit_code == 2 and "cannot write it" in sarif.output


def test_the_service_takes_a_model_name_and_the_configs_model_key(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an unknown id is not looked up online
    from fastapi.testclient import TestClient

    from arbiter.service import ServiceSettings, create_app

    config = yaml.safe_load(VLLM_PROD)
    with TestClient(create_app(ServiceSettings(workers=1))) as client:
        own = client.post("/v1/check", json={"dialect": "vllm", "config": config, "gpus": 2})
        assert own.status_code == 200, own.text  # the config's model: 131072 positions
        models = [i for i in own.json()["assumptions"]["items"] if i["name"] == "model"]
        assert models[0]["source"] == "the config's model, catalog"
        named = {"dialect": "vllm", "config": {"max-num-seqs": 8}, "model": "Qwen/Qwen2.5-7B"}
        by_name = client.post("/v1/check", json=named)
        assert by_name.status_code == 200, by_name.text
        named_items = by_name.json()["assumptions"]["items"]
        assert [i["value"] for i in named_items if i["name"] == "model"] == ["Qwen/Qwen2.5-7B"]
        missing = client.post("/v1/check", json={**named, "model": "nosuchorg/nosuch-xyz"})
        assert missing.status_code == 404 and "nosuchorg/nosuch-xyz" in missing.text
        assert missing.json()["verdict"] == "error" and missing.json()["input_errors"]
        summary = client.get("/openapi.json").json()["paths"]["/v1/check"]["post"]["summary"]
        assert "vLLM" in summary and "SGLang" in summary


def test_serve_args_alone_name_the_engine_and_the_model():
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2"
    result, out, _ = run("--serve-args", line + " --max-model-len 131072")
    assert result.exit_code == 0, result.output  # detected vLLM, the command's MODEL
    first = out.splitlines()[0]
    assert "the command line's model" in first and "vLLM (vllm-0.33)" in first
    assert "2x H100-80GB (assumed from tensor-parallel-size 2" in first
