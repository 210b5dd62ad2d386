"""`arbiter run`: arbitrate LLM arguments, then generate with the runtime on CPU."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine import LLM, SamplingParams
from engine.cli import app  # the whole `arbiter` command, `run` included
from engine.model.testing import make_tiny_model_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    make_tiny_model_dir(path, arch="llama", seed=0)
    return path


def test_run_generates_what_the_python_api_generates(tiny):
    result = runner.invoke(
        app,
        [
            "run",
            str(tiny),
            "-p",
            "1,2,3",
            "-p",
            "4,5,6,7",
            "--set",
            "kv_cache_config.tokens_per_block=16",
            "--max-tokens",
            "6",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    llm = LLM(tiny, kv_cache_config={"tokens_per_block": 16})
    expected = llm.generate([[1, 2, 3], [4, 5, 6, 7]], SamplingParams(max_tokens=6))
    assert [o["token_ids"] for o in data["outputs"]] == [o.token_ids for o in expected]
    assert data["resolution"]["config"]["kv_cache_config"]["tokens_per_block"] == 16


def test_run_reports_conflicts_with_exit_1(tiny):
    result = runner.invoke(
        app,
        [
            "run",
            str(tiny),
            "-p",
            "1,2",
            "--set",
            "streamingllm=true",
            "--set",
            "kv_cache_config.enable_block_reuse=true",
        ],
    )
    assert result.exit_code == 1
    assert "llm_args.kv_cache_config.enable_block_reuse" in result.output


def test_run_bad_arguments_exit_2(tiny, tmp_path):
    result = runner.invoke(
        app, ["run", str(tiny), "-p", "1", "--set", "kv_cache_config.tokens_per_blok=16"]
    )
    assert result.exit_code == 2 and "tokens_per_blo" in result.output
    result = runner.invoke(app, ["run", str(tmp_path), "-p", "1"])
    assert result.exit_code == 2 and "config.json" in result.output
    result = runner.invoke(app, ["run", str(tiny), "-p", "1", "--set", "novalue"])
    assert result.exit_code == 2 and "key=value" in result.output
