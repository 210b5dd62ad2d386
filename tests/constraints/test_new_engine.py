"""A new engine is its pack folder plus its registry entry (its release lines in the pack's
`profiles.yaml`, which `constraints.profiles` reads): a throwaway pack with one section, one rule, its memory
terms and its defaults, written to a temporary folder, gets its section on `EngineConfig`,
its path constant, its rule discovered and in scope, its memory terms found by the
profile's `memory_terms` name, its defaults read from the pack, and arbitration over its
option, with no shared module edited.
It runs in a fresh interpreter, since the schema is composed once per process."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from constraints.profiles import ENGINES
from constraints.schema import pack_sections

ROOT = Path(__file__).resolve().parents[2]

PACK = {
    "__init__.py": 'LABEL = "Demo"\n',
    "schema.py": (
        "from typing import Annotated\n"
        "from constraints import paths\n"
        "from constraints.domains import IntDomain\n"
        "from constraints.sections import Section, opt\n"
        "class DemoConfig(Section):\n"
        "    depth: Annotated[int, IntDomain(1, 8)] = opt(1, 'Draft depth.')\n"
        "SECTIONS = {'demo_config': DemoConfig}\n"
        "DEMO_CONFIG = paths.Section('demo_config')\n"
    ),
    "rules/__init__.py": "",
    "rules/limits.py": (
        "from constraints.expr import eq, gt, implies\n"
        "from constraints.paths import BUILD_CONFIG\n"
        "from constraints.rules.base import Rule, Source\n"
        "from ..schema import DEMO_CONFIG\n"
        "BEAMS = BUILD_CONFIG.max_beam_width\n"
        "RULES = [Rule('demo.deep-drafts-need-one-beam', 'a depth above 4 needs one beam',"
        " Source('Demo', 'demo.py'), implies(gt(DEMO_CONFIG.depth, 4), eq(BEAMS, 1)),"
        " {DEMO_CONFIG.depth: 6, BEAMS: 1}, {DEMO_CONFIG.depth: 6, BEAMS: 2})]\n"
    ),
    "memory.py": (
        "from constraints.facts.memory import Coefficients, MemoryTerms\n"
        "class DemoTerms(MemoryTerms):\n"
        "    name = 'demo'\n"
        "    engine = 'demo'\n"
        "    replicas_path = 'demo_config.depth'\n"
        "    source = 'Demo demo.py'\n"
        "    def coefficients(self, facts):\n"
        "        return Coefficients(7, 11, 13, 0)\n"
        "TERMS = DemoTerms()\n"
    ),
    "defaults.py": "DEFAULTS = {'demo_config.depth': 2}\n",
    # the registry entry: the engine's release line (ENGINES and BACKENDS follow from it)
    "profiles.yaml": (
        "profiles:\n"
        "  - name: demo-1\n"
        "    version: '1.0'\n"
        "    description: Demo 1.0\n"
        "    memory_terms: demo\n"
        "    release: '1.0'\n"
        "    defaults: pack\n"
    ),
    "surfaces/__init__.py": "",
    "surfaces/demo_1.py": (
        "SURFACE = {'demo_config.depth': 1, 'build_config.max_beam_width': 1,"
        " 'build_config.max_num_tokens': 8192}\n"
    ),
}

SCRIPT = """
import json, sys
import constraints.engines
constraints.engines.__path__.append(sys.argv[1])
from constraints import profiles  # reads the demo pack's profiles.yaml
assert "demo" in profiles.ENGINES and profiles.BACKENDS["demo"] == ()

from constraints.rules import rules_for
rules = rules_for(profiles.get_profile("demo-1"))
loaded = sorted(m for m in sys.modules if m.startswith("constraints.engines."))

from constraints import paths
from constraints.check import violations
from constraints.schema import EngineConfig, lookup
from arbiter import func
from arbiter.errors import ConflictError
from arbiter.solve import arbitrate

(rule,) = [r for r in rules if r.pack == "demo"]
config = EngineConfig.from_flat(rule.infeasible)
try:
    EngineConfig.model_validate({"demo_config": {"width": 2}})
    extra = "accepted"
except ValueError as err:
    extra = type(err).__name__
solved = arbitrate([func("deep", {"demo_config.depth": 6})], profile="demo-1")
kept = arbitrate([], profile="demo-1").config.get("demo_config.depth")
from constraints.facts.memory import coefficients, memory_terms, terms_names
terms = memory_terms(profiles.get_profile("demo-1").memory_terms)
memory = [type(terms).__module__, terms.replicas_path, coefficients({}, "demo").act_per_sequence,
          "demo" in terms_names()]
loaded_all = sorted(m for m in sys.modules if m.startswith("constraints.engines."))
try:
    arbitrate([func("deep", {"demo_config.depth": 6}), func("beams", {"build_config.max_beam_width": 2})], profile="demo-1")
    conflict = []
except ConflictError as err:
    conflict = sorted({r for c in err.conflicts for r in c.rules})
print(json.dumps({
    "sections": list(EngineConfig.model_fields),
    "domain": lookup("demo_config.depth").domain.describe(),
    "path": paths.DEMO_CONFIG.depth,
    "rule": [rule.id, rule.pack, rule.topic, str(rule.scope)],
    "loaded": loaded,
    "violated": [r.id for r in violations(config, profile="demo-1")],
    "extra": extra,
    "solved": solved.config.get("demo_config.depth"),
    "kept": kept,
    "memory": memory,
    "loaded_all": loaded_all,
    "conflict": conflict,
}))
"""


def _run(tmp_path: Path) -> dict:
    pack = tmp_path / "demo"
    for name, text in PACK.items():
        (pack / name).parent.mkdir(parents=True, exist_ok=True)
        (pack / name).write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_pack_needs_no_edit_outside_its_folder_and_its_registry_entry(tmp_path):
    seen = _run(tmp_path)
    # its section joins the packs' (in the packs' name order), before the last shared one
    packs = [
        s
        for s in seen["sections"]
        if s.endswith("_config") and s.split("_")[0] in ("demo", "sglang", "vllm")
    ]
    assert packs == ["demo_config", "sglang_config", "vllm_config"], seen["sections"]
    assert seen["sections"][-1] == "memory_policy"
    assert seen["domain"] == "int in [1, 8]"
    assert seen["path"] == "demo_config.depth"
    assert seen["rule"][:3] == ["demo.deep-drafts-need-one-beam", "demo", "limits"]
    assert seen["rule"][3].startswith("demo")
    # building the new engine's rules loads its own pack only
    assert all(m.startswith("constraints.engines.demo") for m in seen["loaded"]), seen["loaded"]
    assert seen["violated"] == ["demo.deep-drafts-need-one-beam"]
    assert seen["extra"] == "ValidationError"
    assert seen["solved"] == 6
    # its defaults come from its pack's defaults.py, its memory terms from its memory.py
    assert seen["kept"] == 2
    assert seen["memory"] == ["constraints.engines.demo.memory", "demo_config.depth", 11, True]
    # none of it reached into another engine's pack beyond the schema sections
    # EngineConfig composes
    others = [m for m in seen["loaded_all"] if not m.startswith("constraints.engines.demo")]
    assert all(
        m.rsplit(".", 1)[-1] in ("schema", "vllm", "sglang", "trtllm", "mlc") for m in others
    ), others
    assert "demo.deep-drafts-need-one-beam" in seen["conflict"]


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_the_shared_schema_modules_name_no_packs_section():
    sections = {name for engine in ENGINES for name in pack_sections(engine)}
    assert sections  # vLLM and SGLang declare theirs
    for module in ("schema.py", "paths.py", "sections.py", "rules/__init__.py", "rules/base.py"):
        named = {
            s
            for s in _string_constants(ROOT / "constraints" / module)
            for name in sections
            if s == name or s.startswith(name + ".")
        }
        assert named == set(), (module, named)
