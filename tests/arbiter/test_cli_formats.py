"""One `--format` (with `--json` as its alias) on every command that prints a result,
defined once (`arbiter.cli.options`), and one JSON shape for a conflict and for bad input
whichever command meets it: `solve` prints the conflict entries `check` prints, and
every command's refusal under `--format json` is the `arbiter.verdict` error report."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

from arbiter.cli import COMMANDS, app
from arbiter.cli.options import FORMATS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/schema/verdict.schema.json").read_text())
PRINTS_NOTHING = {"serve"}  # it serves; it prints no result


def _command(name: str):
    group = typer.main.get_command(app)
    ctx = group.make_context("arbiter", [name, "--help"], resilient_parsing=True)
    return group.get_command(ctx, name)


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if c.name not in PRINTS_NOTHING])
def test_every_command_takes_the_one_format_option(name):
    params = {p.name: p for p in _command(name).params}
    fmt, alias = params["format_"], params["as_json"]
    assert fmt.opts == ["--format", "-f"] and alias.opts == ["--json"]
    assert "text, json, markdown, html or sarif" in (fmt.help or "")
    result = CliRunner().invoke(app, [name, "--format", "pdf", "x"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_the_plan_formats_are_the_renderers():
    from arbiter.cli.plan import PLAN_FORMATS
    from arbiter.plan.render import FORMATS as RENDERED

    assert PLAN_FORMATS == RENDERED and set(PLAN_FORMATS) <= set(FORMATS)


def _report(result) -> dict:
    body = json.loads(result.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(body)
    return body


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "nope.yaml"],
        ["explain", "nope.yaml"],
        ["sweep", "nope.yaml"],
        ["compare", "nope.yaml"],
        ["check", "nope.yaml", "--dialect", "vllm", "--model", "llama-3.1-8b"],
        ["solve", "examples/vllm/typos.yaml"],
        ["rules", "--profile", "no-such-profile"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_every_refusal_is_the_error_report_under_json(args, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 2, result.output
    body = _report(result)
    assert body["verdict"] == "error" and body["input_errors"][0]["reason"]
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 2 and not text.stdout.strip()  # text: the error on stderr


def test_solve_and_check_print_one_conflict_shape(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    claims = (ROOT / "examples/claims_streamingllm.yaml").read_text()
    hard = claims.replace(
        "kind: perf, name: block_reuse, weight: 3,", "kind: func, name: block_reuse,"
    )
    assert hard != claims
    path = tmp_path / "hard.yaml"
    path.write_text(hard)
    solved = CliRunner().invoke(app, ["solve", str(path), "--format", "json"])
    assert solved.exit_code == 1
    body = _report(solved)
    assert body["verdict"] == "reject" and body["profile"] == "trtllm-0.10"
    (conflict,) = body["conflicts"]
    assert conflict["claims"] == ["block_reuse", "streamingllm"]
    assert {f["text"] for f in body["fixes"]} == {"drop `block_reuse`", "drop `streamingllm`"}
    assert {r["id"] for r in body["rules"]} == set(conflict["rules"])
    checked = CliRunner().invoke(
        app,
        ["check", "examples/vllm/no-chunking-short-budget.yaml", "--dialect", "vllm"]
        + ["--model", "tests/fixtures/models/llama-3.1-8b.json", "--json"],
    )
    assert checked.exit_code == 1
    other = _report(checked)
    for key in ("conflicts", "fixes", "rules"):  # the same entry types, field for field
        assert {tuple(sorted(e)) for e in other[key]} == {tuple(sorted(e)) for e in body[key]}


def test_solve_json_carries_its_profile(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["solve", "examples/claims_streamingllm.yaml", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["profile"] == "trtllm-0.10"


def test_a_refused_flag_value_is_json_when_json_was_asked(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        app,
        ["explain", "examples/claims_streamingllm.yaml", "--json"] + ["--max-conflicts", "many"],
    )
    assert result.exit_code == 2
    (entry,) = _report(result)["input_errors"]
    assert entry["path"] == "--max-conflicts" and entry["value"] == "many"
    text = CliRunner().invoke(app, ["explain", "x.yaml", "--max-conflicts", "many"])
    assert text.exit_code == 2 and "Invalid value" in text.output
