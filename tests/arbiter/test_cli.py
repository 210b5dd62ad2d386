"""The `arbiter` command line: solve, schema, rules; exit codes and error messages."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from arbiter.cli import app

runner = CliRunner()


def test_solve_runs_the_built_in_scenario():
    result = runner.invoke(app, ["solve"])
    assert result.exit_code == 0, result.output
    assert "built-in scenario server_h100.yaml: optimal" in result.output
    assert "block_reuse" in result.output and "dropped" in result.output


def test_solve_json_and_output_file(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text("- {kind: func, name: beam, requires: {build_config.max_beam_width: 4}}\n")
    target = tmp_path / "engine.yaml"
    # beam search x block reuse: a rule of the 0.9-0.12 LLM API (kv.beam-search-no-block-reuse)
    old = ["--profile", "trtllm-0.10"]
    result = runner.invoke(app, ["solve", str(claims), "--json", "-o", str(target), *old])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["config"]["kv_cache_config"]["enable_block_reuse"] is False
    assert data["stats"]["profile"] == "trtllm-0.10"
    assert yaml.safe_load(target.read_text())["build_config"]["max_beam_width"] == 4


def test_solve_conflict_exits_1(tmp_path):
    claims = tmp_path / "claims.json"
    claims.write_text(
        json.dumps(
            [
                {
                    "kind": "func",
                    "name": "streaming",
                    "requires": {"plugin_config.streamingllm": True},
                },
                {
                    "kind": "func",
                    "name": "reuse",
                    "requires": {"kv_cache_config.enable_block_reuse": True},
                },
            ]
        )
    )
    assert runner.invoke(app, ["solve", str(claims)]).exit_code == 0  # no plugins on PyTorch
    result = runner.invoke(app, ["solve", str(claims), "--profile", "trtllm-tensorrt"])
    assert result.exit_code == 1
    assert "`reuse` and `streaming`" in result.output


def test_bad_input_exits_2_and_names_the_culprit(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "- {kind: func, name: typo, requires: {kv_cache_config.enable_blok_reuse: true}}\n"
    )
    result = runner.invoke(app, ["solve", str(claims)])
    assert result.exit_code == 2
    assert "typo" in result.output and "kv_cache_config.enable_block_reuse" in result.output
    result = runner.invoke(app, ["solve", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_schema_and_rules():
    result = runner.invoke(app, ["schema", "kv_cache_config.tokens_per_block"])
    assert result.exit_code == 0 and "int in [1, 4194304]" in result.output
    result = runner.invoke(app, ["schema", "kv_cache_config.tokens_per_blok"])
    assert result.exit_code == 2 and "did you mean" in result.output
    result = runner.invoke(app, ["rules", "--grep", "reuse", "--json"])
    ids = [r["id"] for r in json.loads(result.output)]
    assert "kv.reuse-needs-paged-context-fmha" in ids
    assert all("reuse" in json.dumps(r).lower() for r in json.loads(result.output))


def test_errors_name_file_line_and_path(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - kind: func\n"
        "    name: ok\n"
        "    requires: {build_config.max_beam_width: 2}\n"
        "  - kind: func\n"
        "    name: typo\n"
        "    requires:\n"
        "      plugin_config.streamingllm: true\n"
        "      kv_cache_config.enable_blok_reuse: true\n"
    )
    result = runner.invoke(app, ["solve", str(claims)])
    assert result.exit_code == 2
    assert (
        f"{claims}:9: invalid claim 'typo', option 'kv_cache_config.enable_blok_reuse'"
        in result.output.replace("\n", "")
    )
    bad = tmp_path / "claims.json"
    bad.write_text(
        '[{"kind": "func", "name": "a", "requires": {"plugin_config.streamingllm": true}},\n'
        ' {"kind": "perf", "name": "w",\n  "requires": {"plugin_config.streamingllm": true}, "weight": 0}]'
    )
    result = runner.invoke(app, ["solve", str(bad)])
    assert result.exit_code == 2 and f"{bad}:2: invalid claim 'w'" in result.output
