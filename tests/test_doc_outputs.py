"""Every command output shown in README.md and docs/ is what the command prints now
(newcomer review 3, D-M1: the README's printed outputs were stale and nothing checked them).

Each block after an `<!-- output: COMMAND -->` marker is compared with a fresh run of
COMMAND (`scripts/update_doc_outputs.py` rewrites the blocks that differ); the README stays
a guide of at most 400 lines, and the documentation site builds with `mkdocs --strict`
where mkdocs is installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "update_doc_outputs", ROOT / "scripts" / "update_doc_outputs.py"
)
assert _spec is not None and _spec.loader is not None
doc_outputs = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = doc_outputs  # dataclasses look their module up while defining
_spec.loader.exec_module(doc_outputs)

BLOCKS = [block for path in doc_outputs.documents() for block in doc_outputs.blocks(path)]


def test_the_readme_and_the_cli_reference_show_marked_outputs():
    where = {block.path.name for block in BLOCKS}
    assert {"README.md", "cli.md"} <= where
    readme = [b.command for b in BLOCKS if b.path.name == "README.md"]
    for dialect in ("vllm", "sglang", "mlc"):
        assert any(f"--dialect {dialect}" in c for c in readme), dialect
    assert any(c.startswith("arbiter check examples/trtllm/") for c in readme)
    assert "python" in readme  # the Python API example


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_every_marked_block_is_what_its_command_prints(block):
    output, exit_code = doc_outputs.run(block)
    assert exit_code == block.exit_code, output
    assert doc_outputs.normalise(block.shown) == doc_outputs.normalise(output), (
        f"{block.where} is stale: run python scripts/update_doc_outputs.py"
    )


def test_a_stale_block_is_rewritten_and_then_compares_equal(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "intro\n<!-- output: arbiter --version -->\n```text\narbiter 0.0.0-stale\n```\nend\n"
    )
    (block,) = doc_outputs.blocks_in_text(page.read_text(), "page.md")
    output, code = doc_outputs.run(block)
    assert doc_outputs.normalise(output) != doc_outputs.normalise(block.shown)
    text = doc_outputs.render(page.read_text(), {block.marker_line: (output, code, block)})
    (again,) = doc_outputs.blocks_in_text(text, "page.md")
    assert doc_outputs.normalise(again.shown) == doc_outputs.normalise(output)
    assert text.startswith("intro\n") and text.endswith("```\nend\n")


def test_timings_do_not_make_a_block_stale():
    assert doc_outputs.normalise("solved in 12.5 ms  \n") == doc_outputs.normalise(
        "solved in 3042.0 ms"
    )
    assert doc_outputs.normalise("32 blocks") != doc_outputs.normalise("33 blocks")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<!-- output: arbiter --version -->\nno fence\n", "must be followed by a fenced"),
        ("<!-- output: arbiter --version -->\n```text\nnever closed\n", "never closed"),
    ],
)
def test_a_marker_without_its_block_is_named(text, reason):
    with pytest.raises(doc_outputs.DocOutputError) as caught:
        doc_outputs.blocks_in_text(text, "page.md")
    assert caught.value.where == "page.md:1" and reason in str(caught.value)


def test_only_arbiter_commands_and_python_run():
    (block,) = doc_outputs.blocks_in_text("<!-- output: rm -rf / -->\n```text\n```\n", "page.md")
    with pytest.raises(doc_outputs.DocOutputError, match="only `arbiter ...` or `python`"):
        doc_outputs.run(block)


def test_the_readme_is_a_guide_of_at_most_400_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400
    assert "python3 -m pytest  # the README's test command" in (ROOT / ".ci" / "run").read_text()
    assert any("python -m pytest" in line for line in lines)


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")
def test_the_documentation_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
