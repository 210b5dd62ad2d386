"""`arbiter check` names every problem of one input together (issue 30, D-L6/D-L7): a
value the edge validator refuses (with its allowed domain) beside the dialect's own
unknown keys (with "did you mean"), a key given twice, and an unknown `--dialect` or
`--profile` with close matches; in the text and in the JSON report alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.cli import app

LLAMA = "examples/models/llama-3-8b.json"
HUGE = "99999999999999999999999"


def check(*args: str | Path):
    return CliRunner().invoke(app, ["check", *map(str, args)])


@pytest.mark.parametrize(
    ("name", "text", "args", "typo", "meant"),
    [
        ("v.yaml", f"max-num-seqs: {HUGE}\nenable-prefix-cachng: true\n", ["-d", "vllm"],
         "enable-prefix-cachng", "enable-prefix-caching"),
        ("s.yaml", f"max-running-requests: {HUGE}\nchunked-prefil-size: 8\n", ["-d", "sglang"],
         "chunked-prefil-size", "chunked-prefill-size"),
        ("m.json", f'{{"max_batch_size": {HUGE}, "tensor_parallel_shardz": 2}}', ["-d", "mlc"],
         "tensor_parallel_shardz", "tensor_parallel_shards"),
    ],
)  # fmt: skip
def test_a_refused_value_and_a_typo_are_reported_together(tmp_path, name, text, args, typo, meant):
    config = tmp_path / name
    config.write_text(text)
    result = check(config, *args, "--model", LLAMA)
    assert result.exit_code == 2
    assert HUGE in result.output and typo in result.output and meant in result.output
    body = json.loads(check(config, *args, "--model", LLAMA, "--json").stdout)
    by_path = {e["path"]: e for e in body["input_errors"]}
    assert len(by_path) == 2, by_path
    huge = next(e for e in body["input_errors"] if e["value"] == HUGE)
    assert huge["allowed"] and huge["limit"].startswith("INT_LIMIT") and huge["line"] == 1
    assert meant in by_path[typo]["suggestions"]


def test_a_key_given_twice_is_named_beside_the_typos(tmp_path):
    config = tmp_path / "d.yaml"
    config.write_text("max_batch_size: 8\nmax_batch_size: 16\nmax_num_tokenz: 5\n")
    body = json.loads(check(config, "--model", LLAMA, "--json").stdout)
    assert body["verdict"] == "error"
    reasons = {e["path"]: e["reason"] for e in body["input_errors"]}
    assert "set twice (lines 1 and 2)" in reasons["max_batch_size"]
    assert "max_num_tokenz" in reasons


def test_an_unknown_dialect_or_profile_gets_close_matches_in_json():
    body = json.loads(check(LLAMA, "--dialect", "vlm", "--json").stdout)
    (entry,) = body["input_errors"]
    assert (entry["path"], entry["value"], entry["suggestions"]) == ("--dialect", "vlm", ["vllm"])
    solved = CliRunner().invoke(app, ["solve", "--profile", "vllm-0.3", "--json"])
    assert solved.exit_code == 2
    (entry,) = json.loads(solved.stdout)["input_errors"]
    assert entry["path"] == "--profile" and "vllm-0.33" in entry["suggestions"]


def test_a_claims_file_names_refused_values_beside_its_bad_claims(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        f"  - {{name: a, kind: func, requires: {{build_config.max_batch_size: {HUGE}}}}}\n"
        f"  - {{name: b, kind: perf, weight: {HUGE}, requires: {{plugin_config.use_fused_mlp: true}}}}\n"
        "  - {name: c, kind: fucn, requires: {plugin_config.use_fused_mlp: true}}\n"
    )
    result = CliRunner().invoke(app, ["solve", str(claims)])
    assert result.exit_code == 2
    assert "3 invalid claims" in result.output and "did you mean 'func'" in result.output
    assert "claims.yaml:2: invalid claim 'a', option 'build_config.max_batch_size'" in result.output
    body = json.loads(CliRunner().invoke(app, ["solve", str(claims), "--json"]).stdout)
    entries = body["input_errors"]
    assert [e["path"] for e in entries[:2]] == ["build_config.max_batch_size", "weight"]
    assert all(e["allowed"] and e["value"] == HUGE for e in entries[:2])
