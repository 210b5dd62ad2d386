"""`arbiter check FILE --dialect vllm [--serve-args] [--model] [--device] [--gpus]`: exit 0
with the solved vLLM YAML, 1 with the conflict report, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arbiter.cli import app

ROOT = Path(__file__).resolve().parents[4]
LLAMA = str(ROOT / "tests/fixtures/models/llama-3.1-8b.json")
EXAMPLES = ROOT / "examples" / "vllm"
runner = CliRunner()


def check(*args: str):
    return runner.invoke(
        app, ["check", *args, "--dialect", "vllm", "--model", LLAMA, "--device", "H100"]
    )


def test_a_working_config_is_written_back_in_vllms_shape():
    result = check(str(EXAMPLES / "llama-3.1-8b-h100.yaml"))
    assert result.exit_code == 0, result.output
    body = result.output.split("\n# changes")[0]
    assert yaml.safe_load(body) == yaml.safe_load((EXAMPLES / "llama-3.1-8b-h100.yaml").read_text())
    assert "vLLM would set max_num_batched_tokens = 8192" in result.output
    assert "profile: vllm-0.33" in result.output


def test_a_conflict_exits_1_with_the_rule():
    result = check(str(EXAMPLES / "no-chunking-short-budget.yaml"))
    assert result.exit_code == 1
    assert "vllm.scheduler.budget-holds-model-len-without-chunking" in result.output
    lora = check(str(EXAMPLES / "lora-speculative-budget.yaml"))
    assert lora.exit_code == 1 and "vllm.lora.budget-holds-speculative-tokens" in lora.output


def test_eagle3_on_a_target_without_the_interface_exits_1():
    mixtral = str(ROOT / "tests/fixtures/models/mixtral-8x7b.json")
    result = runner.invoke(
        app,
        [
            "check",
            str(EXAMPLES / "eagle3-mixtral.yaml"),
            "--dialect",
            "vllm",
            "--model",
            mixtral,
            "--device",
            "H100",
            "--gpus",
            "2",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "vllm.spec.eagle3-target-supported" in result.output


def test_a_draft_with_another_vocabulary_exits_1(monkeypatch):
    monkeypatch.chdir(ROOT)  # the example names its draft's folder from the repository root
    result = check(str(EXAMPLES / "draft-other-vocabulary.yaml"))
    assert result.exit_code == 1, result.output
    assert "vllm.spec.draft-vocab-matches-target" in result.output


@pytest.mark.slow
def test_the_v1_runner_and_quantization_examples_exit_1_naming_their_rule(monkeypatch):
    """Two refusals (2 s each): the corpus cases vllm-async-pp-heterogeneous-vocab-v1 and
    vllm-quant-mismatch-checkpoint prove the rules in the default run."""
    monkeypatch.chdir(ROOT)  # the example names its draft's folder from the repository root
    v1 = check(str(EXAMPLES / "async-pp-v1-runner.yaml"), "--gpus", "2")
    assert v1.exit_code == 1, v1.output
    assert "vllm.runner.v1-async-without-pp" in v1.output
    fp8 = str(ROOT / "tests/fixtures/models/deepseek-r1-0528-fp8.json")
    example = str(EXAMPLES / "quantization-not-the-checkpoints.yaml")
    quant = runner.invoke(
        app,
        ["check", example, "--dialect", "vllm", "--model", fp8, "--device", "H200", "--gpus", "8"],
    )
    assert quant.exit_code == 1, quant.output
    assert "vllm.quant.matches-checkpoint" in quant.output


def test_every_bad_key_at_once_exits_2():
    result = check(str(EXAMPLES / "typos.yaml"))
    assert result.exit_code == 2
    for key in ("max-num-batch-tokens", "swap-space", "max-lora-rank", "kv-cache-dtype"):
        assert key in result.output


def test_serve_args_alone_and_gpus():
    line = "vllm serve meta-llama/Llama-3.1-8B -tp 4 --max-num-seqs 64"
    one = check("--serve-args", line, "--gpus", "1", "--json")
    assert one.exit_code == 1  # four ranks on one GPU
    four = check("--serve-args", line, "--gpus", "4", "--json")
    assert four.exit_code == 0, four.output
    data = json.loads(four.output)
    written = data["written"]["config"]
    assert written["tensor-parallel-size"] == 4 and written["max-num-seqs"] == 64
    assert data["profile"] == "vllm-0.33"


def test_a_trtllm_profile_is_refused_for_the_vllm_dialect():
    result = check(str(EXAMPLES / "llama-3.1-8b-h100.yaml"), "--profile", "trtllm-1.2")
    assert result.exit_code == 2 and "not vLLM" in result.output


def test_every_example_is_exercised_and_listed():
    names = {p.name for p in EXAMPLES.glob("*.yaml")}
    assert names == {
        "llama-3.1-8b-h100.yaml",
        "no-chunking-short-budget.yaml",
        "lora-speculative-budget.yaml",
        "typos.yaml",
        "eagle3-mixtral.yaml",
        "draft-other-vocabulary.yaml",
        "async-pp-v1-runner.yaml",
        "quantization-not-the-checkpoints.yaml",
    }
    readme = (EXAMPLES / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in names)


def test_the_service_checks_the_vllm_dialect():
    from arbiter.service.jobs import check_job

    model = json.loads(Path(LLAMA).read_text())
    status, body = check_job(
        {"dialect": "vllm", "config": {"max-num-seqs": 64}, "model": model, "device": "H100"}, {}
    )
    assert status == 200 and body["written"]["config"] == {"max-num-seqs": 64}
    assert body["capacity"]["figures"]["fraction"] == 0.92
    status, body = check_job({"dialect": "vllm", "config": {"max-num-seq": 64}}, {})
    assert status == 422 and body["verdict"] == "error"
    (entry,) = body["input_errors"]
    assert (
        entry["path"] == "max-num-seq" and "max-num-seqs" in entry["suggestions"]
    )  # as the key is spelled
