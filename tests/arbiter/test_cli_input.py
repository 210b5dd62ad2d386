"""The command line under hostile input: every case is a clean exit 2 naming the culprit."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from constraints.edge import MAX_INPUT_BYTES
from engine.cli import app  # the whole `arbiter` command, `run` included

runner = CliRunner()
CLAIMS = '[{"kind": "func", "name": "a", "requires": {"plugin_config.use_fused_mlp": true}}]'


def refused(args: list[str], *words: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    flat = " ".join(result.output.split())  # the console wraps long lines
    for word in words:
        assert word in flat, result.output
    return result.output


def test_non_utf8_files(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_bytes(b"- kind: func\n  name: \xff\xfe\n")
    refused(["solve", str(bad)], "not UTF-8")
    refused(["explain", str(bad)], "not UTF-8")
    config = tmp_path / "config.yaml"
    config.write_bytes(b"max_batch_size: \xff\n")
    refused(["check", str(config)], "not UTF-8")


def test_directories_and_fifos(tmp_path):
    folder = tmp_path / "claims.yaml"
    folder.mkdir()
    refused(["solve", str(folder)], "directory")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    refused(["solve", str(fifo)], "not a regular file")  # never blocks opening it


def test_output_into_a_missing_folder_is_refused_before_solving(tmp_path):
    claims = tmp_path / "c.json"
    claims.write_text(CLAIMS)
    refused(["solve", str(claims), "-o", str(tmp_path / "nope" / "out.yaml")], "does not exist")
    refused(["solve", str(claims), "-o", str(tmp_path)], "is a directory")
    refused(["explain", str(claims), "-o", str(tmp_path / "nope" / "r.html")], "existing folder")


def test_a_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    big = tmp_path / "big.json"
    with big.open("w") as handle:
        handle.write("[")
        handle.truncate(MAX_INPUT_BYTES + 10)  # sparse: no time spent writing it
    refused(["solve", str(big)], "MAX_INPUT_BYTES", str(MAX_INPUT_BYTES))


def test_billion_laughs_and_deep_nesting(tmp_path):
    lines = ["claims: []", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{'abcdefghi'[i]}"] * 9) + "]")
    laughs = tmp_path / "laughs.yaml"
    laughs.write_text("\n".join(lines))
    refused(["solve", str(laughs)], "MAX_YAML_ALIASES")
    config = tmp_path / "laughs_config.yaml"
    config.write_text("\n".join(lines[1:]))
    refused(["check", str(config)], "MAX_YAML_ALIASES")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000 + "]" * 50_000)
    refused(["solve", str(deep)], "MAX_DEPTH")
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("[" * 3_000 + "]" * 3_000)
    refused(["solve", str(deep_yaml)], "MAX_DEPTH")


def test_non_finite_numbers_in_files(tmp_path):
    claims = tmp_path / "c.yaml"
    claims.write_text("- kind: func\n  name: a\n  requires: {build_config.max_batch_size: .inf}\n")
    refused(["solve", str(claims)], "not finite")


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--workers", "0"),
        ("--workers", "100000"),
        ("--port", "70000"),
        ("--port", "-1"),
        ("--time-limit", "-1"),
        ("--time-limit", "0"),
        ("--time-limit", "nan"),
        ("--max-claims", "0"),
        ("--max-body-bytes", "0"),
        ("--max-queue", "-3"),
    ],
)
def test_serve_validates_its_flags_before_starting(flag, value):
    refused(["serve", flag, value], flag)


def test_run_args_file_that_is_not_a_mapping_or_not_utf8(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    args = tmp_path / "args.yaml"
    args.write_bytes(b"max_batch_size: \xff\n")
    refused(["run", str(model), "-p", "1,2", "--args", str(args)], "not UTF-8")
    args.write_text("- 1\n- 2\n")
    refused(["run", str(model), "-p", "1,2", "--args", str(args)], "expected an object")
