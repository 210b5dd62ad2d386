"""The command line's conventions (issue 30 item 6; newcomer review 3, D-M7, D-M8, D-L2,
D-L4): `--version`, `python -m arbiter`, shell completion, `--help` without the rules,
OR-Tools or torch, one `--format` option with `--json` as its alias, and a closed pipe
that is no conflict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import arbiter
from arbiter.cli import COMMANDS, RUNTIME_COMMAND, app
from arbiter.cli.options import FORMATS, FormatError, resolve_format

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
HEAVY = ("constraints.rules", "constraints.schema", "ortools", "torch", "fastapi", "rich")


def _python(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, **kwargs
    )


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_distribution_version(flag):
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0, result.output
    assert result.output == f"arbiter {arbiter.__version__}\n"
    assert arbiter.__version__[0].isdigit()


def test_python_m_arbiter_is_the_arbiter_command_with_run():
    """D-M8: `python -m arbiter` was "No module named arbiter.__main__"."""
    version = _python("-m", "arbiter", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("arbiter ")
    listed = _python("-m", "arbiter", "--help")
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")}
    assert {spec.name for spec in COMMANDS} | {"run"} <= names


def test_shell_completion_is_on():
    """D-M8: `--show-completion` was "No such option"."""
    result = runner.invoke(app, ["--show-completion", "bash"], prog_name="arbiter")
    assert result.exit_code == 0, result.output
    assert "complete -o default -F _arbiter_completion arbiter" in result.output
    assert "_ARBITER_COMPLETE=complete_bash" in result.output


def test_help_and_every_command_help_import_no_rules_solver_or_torch():
    """D-M7: `arbiter --help` imported the rules (0.9 s); each `CMD --help` must not either.

    One fresh interpreter runs every help and then reports what it loaded."""
    names = [spec.name for spec in COMMANDS] + [RUNTIME_COMMAND.name]
    code = f"""
import sys
from engine.cli import app
for args in [["--help"]] + [[name, "--help"] for name in {names!r}]:
    try:
        app(args, prog_name="arbiter")
    except SystemExit as exit:
        assert exit.code in (0, None), (args, exit.code)
print("LOADED", sorted(m for m in sys.modules if m.startswith({HEAVY!r})))
"""
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.rsplit("LOADED", 1)[1].strip()
    assert loaded == "[]"
    for name in names:
        assert f"arbiter {name} [OPTIONS]" in result.stdout


def test_every_command_spec_names_a_command_with_a_docstring():
    for spec in (*COMMANDS, RUNTIME_COMMAND):
        function = spec.load()
        assert callable(function) and function.__doc__, spec
        assert spec.summary.endswith(".") and len(spec.summary) <= 80, spec


def test_help_has_no_bool_metavars_and_keeps_sentences_whole():
    """D-L1: flags showed `<bool>` and the top-level help wrapped mid-sentence."""
    top = runner.invoke(app, ["--help"])
    solve = runner.invoke(app, ["solve", "--help"])
    assert top.exit_code == 0 and solve.exit_code == 0
    for text in (top.output, solve.output):
        assert "<bool>" not in text and "<str>" not in text
    assert "Solve claims into the best configuration." in top.output
    assert "--format FORMAT" in solve.output and "--json" in solve.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["solve", "--format", "html"], "--format html: this command cannot write it"),
        (["solve", "--format", "yaml"], "--format yaml: unknown format"),
        (["rules", "--json", "--format", "text"], "--json asks for json at the same time"),
        (["explain", "x.yaml", "--format", "sarif"], "--format sarif: this command cannot"),
    ],
)
def test_a_format_the_command_cannot_write_is_exit_2_before_any_work(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output


def test_json_is_an_alias_of_format_json():
    by_alias = runner.invoke(app, ["profiles", "--json"])
    by_format = runner.invoke(app, ["profiles", "--format", "json"])
    assert by_alias.exit_code == by_format.exit_code == 0
    assert json.loads(by_alias.output) == json.loads(by_format.output)


def test_resolve_format_is_one_answer_per_pair():
    assert resolve_format(None, False) == "text"
    assert resolve_format(None, True) == "json"
    assert resolve_format("JSON", True) == "json"
    assert resolve_format("sarif", False, FORMATS) == "sarif"
    with pytest.raises(FormatError) as caught:
        resolve_format("html", False, ("text", "json"))
    assert (caught.value.value, caught.value.allowed, caught.value.exit_code) == (
        "html",
        ("text", "json"),
        2,
    )


def test_old_option_names_still_work():
    """D-L2: `sweep --out` became `--output` and `explain --time-budget` `--time-limit`."""
    sweep = runner.invoke(app, ["sweep", "--help"])
    explain = runner.invoke(app, ["explain", "--help"])
    assert "--output" in sweep.output and "--out" in sweep.output
    assert "--time-limit" in explain.output and "--time-budget" in explain.output
    bad = runner.invoke(app, ["explain", "x.yaml", "--time-budget", "0"])
    assert bad.exit_code == 2


def test_a_closed_pipe_is_not_a_conflict():
    """D-L4: `arbiter rules | head -1` exited 1, the "claims conflict" code."""
    child = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "rules"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0, stderr
    assert "Traceback" not in stderr


def test_the_spinner_is_silent_off_a_terminal_and_when_disabled(capsys):
    """D-M7: progress goes to stderr only when it is a terminal and output is for people."""
    from arbiter.cli.console import working

    with working("solving"):
        print("inside")
    with working("solving", enabled=False):
        pass
    captured = capsys.readouterr()
    assert captured.out == "inside\n" and captured.err == ""


def test_every_help_example_names_files_that_exist():
    """D-M5: `explain --help` showed `claims.yaml` and `run --help` `./tiny-llama`, which
    are not in the repository (and no command made the model)."""
    import shlex

    for spec in (*COMMANDS, RUNTIME_COMMAND):
        doc = spec.load().__doc__ or ""
        examples = [line.split("arbiter ", 1)[1] for line in doc.splitlines() if "arbiter " in line]
        for example in examples:
            words = shlex.split(example)
            outputs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")}
            for word in words:
                if word.endswith((".yaml", ".yml", ".json")) and word not in outputs:
                    assert (ROOT / word).exists(), f"arbiter {spec.name} --help: {word}"
    run_doc = RUNTIME_COMMAND.load().__doc__ or ""
    assert "python -m engine.model.testing tiny-llama" in run_doc
