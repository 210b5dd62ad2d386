"""The start-up costs removed for `arbiter check` (issue 30 item 6): CP-SAT imported
without pandas (`arbiter.cpsat`), and the field lists read with libyaml's safe loader,
which must give the same data as the pure-Python one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FIELD_LISTS = sorted((ROOT / "arbiter" / "engines").glob("*/fields-*.yaml"))


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_cp_sat_imports_without_pandas_and_its_series_builders_still_get_real_pandas():
    out = _python(
        "import sys\n"
        "from arbiter.cpsat import cp_model\n"
        "print('pandas' in sys.modules)\n"
        "import pandas as pd\n"
        "m = cp_model.CpModel()\n"
        "s = m.new_int_var_series('x', pd.Index(range(3)), 0, 5)\n"
        "print(type(s).__module__.split('.')[0], len(s))\n"
    )
    assert out.splitlines() == ["False", "pandas 3"]


def test_a_check_imports_no_pandas():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from arbiter.cli import app\n"
        "r = CliRunner().invoke(app, ['check', 'examples/trtllm/streamingllm.yaml',"
        " '--model', 'examples/models/llama-3-8b.json', '--device', 'H100-80GB'])\n"
        "print(r.exit_code, 'pandas' in sys.modules, 'ortools.sat.python.cp_model' in sys.modules)\n"
    )
    assert _python(code) == "0 False True"


def test_when_pandas_is_already_imported_cp_sat_uses_it_as_is():
    out = _python(
        "import pandas\nfrom arbiter.cpsat import cp_model\nprint(cp_model.pd is pandas)\n"
    )
    assert out == "True"


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
@pytest.mark.parametrize("path", FIELD_LISTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_libyaml_reads_every_field_list_as_the_python_loader_does(path):
    text = path.read_text()
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.load(text, Loader=yaml.SafeLoader)


def test_field_defaults_are_not_shared_between_fields():
    from arbiter.engines.trtllm.fields import _default

    first, second = _default("[1, 2]"), _default("[1, 2]")
    assert first == second == [1, 2]
    assert first is not second


def test_only_arbiter_cpsat_imports_or_tools():
    """A direct `from ortools.sat.python import cp_model` elsewhere would pull pandas again
    (whichever module imports first decides)."""
    from tests.import_graph import imports

    direct = sorted(
        f"{i.source}:{i.line}"
        for i in imports()
        if i.target.split(".")[0] == "ortools" and i.source != "arbiter.cpsat"
    )
    assert direct == []
