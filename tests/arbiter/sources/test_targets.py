"""The front door's reading step: what to check in a file, and the refusals that name
their fix (the newcomer review's D-H1 empty file, D-M4 wrong dialect and wrong command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.sources.targets import SourceError, config_model, targets

from .test_manifest import HELM_RENDERED, LWS

ROOT = Path(__file__).parents[3]
NEWCOMER = """\
model: meta-llama/Llama-3.1-8B-Instruct
tensor-parallel-size: 2
max-model-len: 131072
max-num-seqs: 512
"""


def test_a_vllm_config_is_one_target_with_its_model_and_lines() -> None:
    found, (target,) = targets(NEWCOMER, source="prod.yaml")
    assert (found.dialect, target.dialect) == ("vllm", "vllm")
    assert target.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert target.config is not None and target.config["max-num-seqs"] == 512
    assert target.lines["max-model-len"] == 3
    assert target.mismatch is None


def test_the_given_dialect_is_kept_and_a_mismatch_said() -> None:
    _, (target,) = targets(NEWCOMER, dialect="trtllm", source="prod.yaml")
    assert target.dialect == "trtllm"
    assert target.mismatch == "this looks like a `vllm serve` config: --dialect vllm"


@pytest.mark.parametrize(
    ("dialect", "config", "model"),
    [
        ("sglang", {"model-path": "Qwen/Qwen2-7B", "tp-size": 2}, "Qwen/Qwen2-7B"),
        ("sglang", {"model": "Qwen/Qwen2-7B"}, "Qwen/Qwen2-7B"),
        ("trtllm", {"model": "/models/llama", "backend": "pytorch"}, "/models/llama"),
        ("mlc", {"model": "HF://mlc-ai/x", "mode": "server"}, "HF://mlc-ai/x"),
        ("vllm", {"max-num-seqs": 8}, None),
    ],
)
def test_config_model(dialect: str, config: dict, model: str | None) -> None:
    assert config_model(dialect, config) == model


def test_a_serve_command_line() -> None:
    line = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2"
    _, (target,) = targets(line, source="--serve-args")
    assert (target.dialect, target.model) == ("sglang", "meta-llama/Llama-3.1-8B-Instruct")
    assert target.serve_args == line


def test_a_manifest_gives_one_target_per_engine_server() -> None:
    _, (helm,) = targets(HELM_RENDERED, source="chart.yaml")
    assert (helm.dialect, helm.gpus, helm.model) == ("vllm", 2, "meta-llama/Llama-3.1-8B-Instruct")
    assert helm.line is not None and "Deployment/demo-llama-deployment-vllm" in helm.where
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN" in n for n in helm.notes)
    _, (leader,) = targets(LWS, dialect="sglang", source="lws.yaml")
    assert leader.gpus == 16
    assert (
        leader.mismatch == "LeaderWorkerSet/vllm container 'vllm-leader' runs vllm: --dialect vllm"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file holds no settings"),
        ("# just a comment\n", "the file holds no settings"),
        ((ROOT / "examples" / "claims_streamingllm.yaml").read_text(), "use `arbiter solve`"),
        ((ROOT / "examples" / "models" / "llama-3-8b.json").read_text(), "pass it as `--model`"),
        (
            "kv-cache-dtype: fp8_e5m2\n",
            "could be vLLM or SGLang: pass --dialect vllm or --dialect sglang",
        ),
        ("invalid_setting: 1\n", "cannot tell the engine from the content"),
        ("a: [unclosed\n", "not valid YAML"),
        ("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n", "start no engine server"),
    ],
)
def test_refusals_name_the_fix(text: str, message: str) -> None:
    with pytest.raises(SourceError) as info:
        targets(text, source="in.yaml")
    assert str(info.value).startswith("in.yaml: ")
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_a_tie_is_checked_under_the_given_dialect() -> None:
    _, (target,) = targets("kv-cache-dtype: fp8_e5m2\n", dialect="sglang")
    assert (target.dialect, target.mismatch) == ("sglang", None)


def test_an_unknown_dialect_is_named() -> None:
    with pytest.raises(SourceError) as info:
        targets(NEWCOMER, dialect="tgi")
    assert "unknown dialect 'tgi'; use one of vllm, sglang, trtllm, mlc" in str(info.value)


def test_json_by_suffix() -> None:
    text = (ROOT / "examples" / "mlc" / "server_llama3_h100.json").read_text()
    _, (target,) = targets(text, suffix=".json")
    assert target.dialect == "mlc" and target.config is not None
