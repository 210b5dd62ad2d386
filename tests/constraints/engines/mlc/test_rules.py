"""MLC LLM's rule pack: sourced at the pinned commit, scoped to MLC, compiled for the
`mlc` profile only, and each rule's own examples hold under it alone."""

from __future__ import annotations

import pytest

from constraints.profiles import PROFILES, get_profile
from constraints.rules import every_rule, rules_for
from constraints.rules.base import Scope

MLC = get_profile("mlc")
PACK = [r for r in every_rule() if r.pack == "mlc"]


def test_every_rule_of_the_pack_is_sourced_and_scoped_to_mlc():
    assert len(PACK) >= 3
    for rule in PACK:
        assert rule.id.startswith("mlc."), rule.id
        assert rule.scope == Scope("mlc"), rule.id
        assert rule.source.engine == "MLC LLM" and rule.source.version == "79d603f0", rule.id
        assert rule.source.file and rule.source.ref, rule.id


def test_the_pack_is_compiled_for_mlc_only():
    pack = {r.id for r in PACK}
    assert pack <= {r.id for r in rules_for(MLC)}
    for name, profile in PROFILES.items():
        if profile.engine != "mlc":
            assert not pack & {r.id for r in rules_for(profile)}, name


@pytest.mark.parametrize("rule", PACK, ids=lambda r: r.id)
def test_each_rule_has_both_examples(rule):
    assert rule.feasible and rule.infeasible
