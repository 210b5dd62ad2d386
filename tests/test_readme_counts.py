"""The README's rule counts stay true, and every rule module is registered."""

from __future__ import annotations

import re
from pathlib import Path

from constraints.profiles import PROFILES
from constraints.rules import all_rules, default_rules, rules_for

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_total_rule_count():
    match = re.search(r"\*\*(\d+) hard rules and (\d+) default rules\*\*", README)
    assert match, "the README states the rule count"
    assert (int(match[1]), int(match[2])) == (len(all_rules()), len(default_rules()))


def test_rule_count_per_profile():
    rows = dict(re.findall(r"^\| `([\w.-]+)`[^|]*\|[^|]*\| (\d+ \+ \d+) \|", README, re.M))
    assert set(rows) == set(PROFILES)
    for name, profile in PROFILES.items():
        hard, soft = len(rules_for(profile, "hard")), len(rules_for(profile, "default"))
        assert rows[name] == f"{hard} + {soft}", name


def test_every_rule_module_is_registered():
    """A rule module left out of `_TOPICS` would be silently ignored."""
    from constraints import rules

    folder = Path(rules.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")} - {"base"}
    assert modules == set(rules._TOPICS)
