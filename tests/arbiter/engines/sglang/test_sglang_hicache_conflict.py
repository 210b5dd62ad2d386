"""A HiCache conflict names only the SGLang defaults that take part in it, and its numbers
read right (issue 30): `--enable-hierarchical-cache` with a radix cache that is off (by
`--disable-radix-cache`, or on a PD decode server) once listed the defaults of every field
left open as culprits, and printed "disable-radix-cache [=True] must be !=
disable-radix-cache [=True]" because the radix cache SGLang runs (an option SGLang
resolves `disable_radix_cache` into) shares the flag's name."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from arbiter.cli import app

COMMAND = (
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
    " --enable-hierarchical-cache --disaggregation-mode decode --disable-radix-cache"
)
# fields left open whose defaults no rule of these conflicts reads through HiCache
UNRELATED = (
    "page-size",
    "kv-cache-dtype",
    "disaggregation-transfer-backend",
    "enable-mixed-chunk",
    "speculative-algorithm",
    "prefill-attention-backend",
    "decode-attention-backend",
)


def _reject() -> str:
    result = CliRunner().invoke(app, ["check", "-d", "sglang", "--serve-args", COMMAND])
    assert result.exit_code == 1, result.output
    return result.stderr


def test_only_the_defaults_that_take_part_are_named():
    text = _reject()
    heads = [line for line in text.splitlines() if line.startswith("conflict ")]
    assert len(heads) == 2, text
    assert "enable-hierarchical-cache" in heads[0] and "disable-radix-cache" in heads[0]
    assert "disaggregation-mode" in heads[1]
    defaults = [line.strip() for line in text.splitlines() if "SGLang's default" in line]
    assert defaults, text
    for line in defaults:
        assert not any(name in line for name in UNRELATED), line
    # each named default is needed: a rule of its conflict reads it
    assert all(
        ("enable-deterministic-inference" in line or "radix" in line) for line in defaults
    ), defaults


def test_the_numbers_line_names_the_radix_cache_sglang_runs():
    numbers = [line.strip() for line in _reject().splitlines() if "numbers:" in line]
    assert numbers
    for line in numbers:
        left, _, right = line.removeprefix("numbers: ").partition(" must be ")
        names = (left.split(" [=")[0], right.split(" [=")[0])
        assert names[0] != names[1], line  # two different things compared
    assert any(line.startswith("numbers: the radix cache SGLang runs [=") for line in numbers)
    assert not any(
        re.search(r"disable-radix-cache \[=True\] must be != disable-radix", n) for n in numbers
    )
