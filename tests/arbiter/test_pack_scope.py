"""One `arbiter check` imports the packs of the chosen engine only (issue 29): the
registry reaches a pack's `Dialect` through the module its entry names, detection reads
every engine's vocabulary from data (`arbiter.sources.vocab_data`), so neither a check
with `--dialect` nor one that detects the engine imports another engine's pack. The one
exception, named here: every engine's schema section (`constraints.engines.<e>.schema`
and its package, whose `__init__` holds only the label), which `EngineConfig` composes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter.dialects import DIALECTS

ROOT = Path(__file__).resolve().parents[2]
MODEL = "examples/models/llama-3-8b.json"
CASES = {
    "vllm -d": ("vllm", ["examples/vllm/llama-3.1-8b-h100.yaml", "-d", "vllm"]),
    "sglang -d": ("sglang", ["examples/sglang/pd_decode_h200.yaml", "-d", "sglang"]),
    "vllm detected": ("vllm", ["examples/vllm/llama-3.1-8b-h100.yaml"]),
    "trtllm detected": ("trtllm", ["examples/trtllm/long_prompt.yaml"]),
    "mlc detected": ("mlc", ["examples/mlc/server_llama3_h100.json"]),
}


def _modules_after(args: list[str]) -> tuple[int, list[str]]:
    code = (
        "import json, sys\n"
        "from typer.testing import CliRunner\n"
        "from arbiter.cli import app\n"
        f"r = CliRunner().invoke(app, ['check', *{args!r}, '--model', {MODEL!r},"
        " '--device', 'H100-80GB'])\n"
        "names = sorted(m for m in sys.modules if m.startswith(('arbiter.engines.',"
        " 'constraints.engines.')))\n"
        "print(json.dumps([r.exit_code, names]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    code_, names = json.loads(out.stdout.strip().splitlines()[-1])
    return code_, names


@pytest.mark.parametrize("case", list(CASES))
def test_a_check_imports_only_the_chosen_engines_packs(case):
    engine, args = CASES[case]
    exit_code, loaded = _modules_after(args)
    assert exit_code in (0, 1, 2), exit_code  # a verdict, not a crash
    own = {f"arbiter.engines.{engine}", f"constraints.engines.{engine}"}
    # the chosen engine's dialect, its rules and its memory terms were used
    assert f"arbiter.engines.{engine}.dialect" in loaded
    assert f"constraints.engines.{engine}.rules" in loaded
    others = [m for m in loaded if not any(m == o or m.startswith(o + ".") for o in own)]
    sections = {
        f"constraints.engines.{e}{part}"
        for e in DIALECTS
        if e != engine
        for part in ("", ".schema")
    }
    assert set(others) <= sections, sorted(set(others) - sections)
    # no module of another engine's arbiter pack, not even its vocabulary
    assert not [m for m in others if m.startswith("arbiter.engines.")]
