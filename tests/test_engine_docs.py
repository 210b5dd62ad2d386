"""The engine reference pages `docs/engines/*.md` are what scripts/gen_engine_docs.py writes
from the rule records: regenerated and diffed, so a new rule updates them (and the rule and
profile counts they hold), never the README."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from constraints.profiles import ENGINES, PROFILES
from constraints.rules import all_rules, default_rules, every_rule, rules_for

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_engine_docs.py"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_engine_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_are_up_to_date():
    # the generator runs in a fresh interpreter, as `python scripts/gen_engine_docs.py`
    # does: the pages are what a clean run writes, whatever earlier tests left in this one;
    # it imports this checkout's packages (a script's own folder leads its sys.path, so
    # without this an installed copy elsewhere would be the one read)
    root = SCRIPT.parents[1]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, f"run python scripts/gen_engine_docs.py: {out.stdout}{out.stderr}"


def test_the_generator_writes_one_page_per_engine_and_an_index():
    files = _generator().targets()
    assert {p.name for p in files} == {"index.md", *(f"{e}.md" for e in ENGINES)}


def test_the_index_counts_the_rules_and_each_profiles_rules():
    text = _generator().index_page()
    match = re.search(r"\*\*(\d+) hard rules and (\d+) default rules\*\*", text)
    assert match and (int(match[1]), int(match[2])) == (len(all_rules()), len(default_rules()))
    rows = dict(re.findall(r"^\| `([\w.-]+)` \|[^|]*\|[^|]*\| (\d+ \+ \d+) \|", text, re.M))
    assert set(rows) == set(PROFILES)
    for name, profile in PROFILES.items():
        hard, soft = len(rules_for(profile, "hard")), len(rules_for(profile, "default"))
        assert rows[name] == f"{hard} + {soft}", name


def test_every_rule_is_on_the_page_of_each_engine_that_compiles_it():
    gen = _generator()
    pages = {engine: gen.engine_page(engine) for engine in ENGINES}
    for rule in every_rule():
        engines = {p.engine for p in PROFILES.values() if rule in rules_for(p)}
        if rule.scope.engine != "any":  # a rule of a release no profile covers is listed too
            engines.add(rule.scope.engine)
        assert engines, f"{rule.id} is compiled for no profile"
        for engine in engines:
            assert f"**`{rule.id}`**" in pages[engine], (rule.id, engine)
