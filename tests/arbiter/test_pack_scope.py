"""One `arbiter check` imports the packs of the chosen engine only (issue 29): the
registry reaches a pack's `Dialect` through the module its entry names, detection reads
every engine's vocabulary from data (`arbiter.sources.vocab_data`), so neither a check
with `--dialect` nor one that detects the engine imports another engine's pack, and the
problem's `EngineConfig` holds the shared sections and the chosen engine's own only
(`constraints.schema.engine_config`), so no other engine's schema section is read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = "examples/models/llama-3-8b.json"
CASES = {
    "vllm -d": ("vllm", ["examples/vllm/llama-3.1-8b-h100.yaml", "-d", "vllm"]),
    "sglang -d": ("sglang", ["examples/sglang/pd_decode_h200.yaml", "-d", "sglang"]),
    "vllm detected": ("vllm", ["examples/vllm/llama-3.1-8b-h100.yaml"]),
    "trtllm detected": ("trtllm", ["examples/trtllm/long_prompt.yaml"]),
    "mlc detected": ("mlc", ["examples/mlc/server_llama3_h100.json"]),
    # a conflict of the shared memory rule, explained in full and as JSON
    "vllm memory conflict": ("vllm", ["{tmp}/small.yaml", "-d", "vllm", "--verbose"]),
    "vllm memory conflict json": ("vllm", ["{tmp}/small.yaml", "-d", "vllm", "-f", "json"]),
}
# 0.15 of an 80 GB GPU cannot hold the 16 GB of Llama-3-8B's weights
SMALL = "max-model-len: 8192\ngpu-memory-utilization: 0.15\n"


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
def test_a_check_imports_only_the_chosen_engines_packs(case, tmp_path):
    engine, args = CASES[case]
    (tmp_path / "small.yaml").write_text(SMALL)
    exit_code, loaded = _modules_after([a.replace("{tmp}", str(tmp_path)) for a in args])
    assert exit_code in (0, 1, 2), exit_code  # a verdict, not a crash
    own = {f"arbiter.engines.{engine}", f"constraints.engines.{engine}"}
    # the chosen engine's dialect, its rules and its memory terms were used
    assert f"arbiter.engines.{engine}.dialect" in loaded
    assert f"constraints.engines.{engine}.rules" in loaded
    others = [m for m in loaded if not any(m == o or m.startswith(o + ".") for o in own)]
    # no module of another engine's pack in either layer: not its schema, not its label,
    # not its vocabulary
    assert others == [], others
