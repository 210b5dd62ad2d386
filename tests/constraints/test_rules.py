"""Every rule: its feasible example holds and its infeasible example conflicts through it."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, arbitrate, func, setup
from constraints import all_rules, get_rule
from constraints.rules import UnknownRule

RULES = all_rules()


def claims_for(requirement):
    facts = {p: v for p, v in requirement.items() if p.startswith(("device.", "model."))}
    options = {p: v for p, v in requirement.items() if p not in facts}
    claims = [func("example", options)] if options else []
    if facts:
        claims.append(setup("machine", facts))
    return claims


def test_rule_ids_are_unique_and_sourced():
    assert len({r.id for r in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.text and rule.source.engine and rule.source.file, rule.id
        assert rule.feasible and rule.infeasible, rule.id


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_feasible_example_holds(rule):
    resolution = arbitrate(claims_for(rule.feasible), rules=[rule])
    for path, value in rule.feasible.items():
        if not isinstance(value, dict):
            assert resolution.value(path) == value
    assert rule.expr.evaluate(resolution.values)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_infeasible_example_conflicts_through_the_rule(rule):
    claims = claims_for(rule.infeasible)
    arbitrate(claims, rules=[])  # without the rule the example is fine
    with pytest.raises(ConflictError) as err:
        arbitrate(claims, rules=[rule])
    conflict = err.value.conflicts[0]
    assert conflict.rules == (rule.id,)
    assert rule.id in str(err.value)


def test_unknown_rule_id_suggests():
    with pytest.raises(UnknownRule) as err:
        get_rule("kv.reuse-needs-paged-context")
    assert "kv.reuse-needs-paged-context-fmha" in err.value.suggestions
