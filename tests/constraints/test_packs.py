"""Engine packs: rules are discovered from the pack folders (a module without `RULES` is an
error), the folder gives the default scope, and `rules_for(profile)` imports only the
profile's engine pack and the shared one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from constraints import rules as discovery
from constraints.errors import SchemaError
from constraints.profiles import BACKENDS, ENGINES, PROFILES
from constraints.rules import every_rule, pack_rules, packs, rules_for
from constraints.rules.base import Scope

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(profile: str) -> list[str]:
    code = (
        "import json, sys\n"
        "from constraints.profiles import get_profile\n"
        "from constraints.rules import rules_for\n"
        f"assert rules_for(get_profile({profile!r}))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('constraints.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    ("profile", "engine"),
    [("vllm-0.33", "vllm"), ("mlc", "mlc"), ("sglang-0.5.23", "sglang"), ("trtllm-1.2", "trtllm")],
)
def test_rules_for_imports_only_the_profiles_pack_and_the_shared_one(profile, engine):
    loaded = _modules_after(profile)
    assert f"constraints.engines.{engine}.rules" in loaded
    assert "constraints.shared.rules.memory" in loaded
    # no module of another engine's pack: not its rules, memory terms or surfaces, nor
    # its schema section (a shared rule reads no pack's section, and `lookup` imports only
    # the pack owning the path it is asked for)
    others = [
        m
        for m in loaded
        if m.startswith("constraints.engines.")
        and not m.startswith(f"constraints.engines.{engine}")
    ]
    assert others == []


def test_engines_and_backends_come_from_the_profiles():
    assert set(ENGINES) == {p.engine for p in PROFILES.values()}
    assert BACKENDS["trtllm"] == ("pytorch", "tensorrt") and BACKENDS["vllm"] == ()
    assert packs() == (*ENGINES, "shared")


def test_every_rule_knows_its_pack_and_the_pack_its_engine():
    for rule in every_rule():
        assert rule.pack in packs(), rule.id
        if rule.pack != "shared":
            assert rule.scope.engine == rule.pack, rule.id
    counts = {pack: len(pack_rules(pack)) for pack in packs()}
    assert sum(counts.values()) == len(every_rule())
    assert all(counts.values()), counts


def test_rules_for_a_profile_holds_only_its_engine_and_the_shared_rules():
    for profile in PROFILES.values():
        for rule in rules_for(profile):
            assert rule.pack in (profile.engine, "shared"), (profile.name, rule.id)


def _pack_in(tmp_path: Path, name: str, files: dict[str, str], monkeypatch) -> str:
    folder = tmp_path / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(discovery, "pack_package", lambda pack: name)
    return name


RULE = (
    "from constraints.expr import eq\n"
    "from constraints.rules.base import Rule, Source\n"
    "RULES = [Rule('x.one', 'one', Source('x', 'x.py'), eq('build_config.max_beam_width', 1),"
    " {'build_config.max_beam_width': 1}, {'build_config.max_beam_width': 2})]\n"
)


def test_a_new_module_in_a_pack_is_found_with_its_topic_and_the_packs_scope(tmp_path, monkeypatch):
    init = "from constraints.rules.base import Scope\nSCOPE = Scope('vllm', since='0.33')\n"
    _pack_in(tmp_path, "pack_demo_a", {"__init__.py": init, "beams.py": RULE}, monkeypatch)
    (rule,) = pack_rules.__wrapped__("vllm")
    assert rule.topic == "beams" and rule.pack == "vllm"
    assert rule.scope == Scope("vllm", since="0.33")


def test_a_module_without_rules_is_an_error_naming_it(tmp_path, monkeypatch):
    files = {"__init__.py": "", "helpers.py": "X = 1\n", "_private.py": "Y = 2\n"}
    _pack_in(tmp_path, "pack_demo_b", files, monkeypatch)
    with pytest.raises(SchemaError, match="pack_demo_b.helpers exports no RULES"):
        pack_rules.__wrapped__("mlc")
