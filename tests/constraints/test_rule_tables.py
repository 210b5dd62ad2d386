"""Pair tables and default rules: the rule packs beyond one-rule-at-a-time examples."""

from __future__ import annotations

from collections import Counter

import pytest
from typer.testing import CliRunner

from arbiter import arbitrate, func, perf, setup
from arbiter.cli import app
from constraints import EngineConfig
from constraints.rules import all_rules, default_rules, every_rule
from constraints.shared.rules.pairs import FEATURES, LEGACY_TYPES, TABLE


def claims_for(requirement):
    facts = {p: v for p, v in requirement.items() if p.startswith(("device.", "model."))}
    options = {p: v for p, v in requirement.items() if p not in facts}
    claims = [func("example", options)] if options else []
    if facts:
        claims.append(setup("machine", facts))
    return claims


def test_rule_count_by_topic():
    by_topic = Counter(r.topic for r in all_rules())
    print(dict(by_topic), "default:", len(default_rules()))
    assert len(all_rules()) >= 80
    # Spec-Legacy (NGram, user-provided drafters) pairs exist once the schema has the types
    assert by_topic["pairs"] == len(TABLE) == 16 + 2 * bool(LEGACY_TYPES)
    refs = {r.source.ref for r in every_rule()}
    assert any(ref.startswith("T5") for ref in refs) and "V29" in refs and "M11" in refs


def test_every_rule_names_engine_file_and_catalog_reference():
    for rule in every_rule():
        assert rule.source.engine and rule.source.file, rule.id
        assert rule.source.ref, rule.id
        assert rule.kind in ("hard", "default")


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_examples_switch_the_feature(name):
    expr, on, off, _ = FEATURES[name]
    base = EngineConfig().flat()
    assert expr.evaluate({**base, **on}), name
    assert not expr.evaluate({**base, **off}), name


def test_pair_rules_are_distinct_and_sourced():
    ids = [r.id for r in all_rules() if r.topic == "pairs"]
    assert len(ids) == len(set(ids))
    for r in all_rules():
        if r.topic == "pairs":
            assert r.source.ref in ("T56", "T58", "V29")
            assert r.text.endswith("cannot be combined")


@pytest.mark.parametrize("rule", default_rules(), ids=lambda r: r.id)
def test_default_rule_holds_unless_a_claim_overrides_it(rule):
    kept = arbitrate(claims_for(rule.feasible), rules=[rule])
    assert rule.expr.evaluate(kept.values) and kept.overridden_defaults == ()
    # a func claim against a default rule is no conflict: the rule gives way, and says so
    overridden = arbitrate(claims_for(rule.infeasible), rules=[rule])
    assert overridden.overridden_defaults == (rule.id,)


def test_default_rules_rank_below_perf_claims_and_above_fewest_changes():
    nvfp4 = func("nvfp4", {"quant_config.quant_algo": "NVFP4"})
    blackwell = setup("B200", {"device.sm": 100})  # NVFP4 needs sm >= 100
    # T27 is the TensorRT engine builder's: GEMM plugins exist on that backend only
    r = arbitrate([nvfp4, blackwell], profile="trtllm-tensorrt")
    assert r.value("plugin_config.gemm_plugin") == "nvfp4"  # T27, though it costs a change
    assert r.overridden_defaults == ()
    r = arbitrate(
        [nvfp4, blackwell, perf("no_gemm", {"plugin_config.gemm_plugin": None})],
        profile="trtllm-tensorrt",
    )
    assert r.kept_names == ("no_gemm",)
    assert r.overridden_defaults == ("quant.nvfp4-gemm-plugin",)


def test_rules_command_lists_and_filters():
    runner = CliRunner()
    result = runner.invoke(app, ["rules", "--grep", "reuse"])
    assert result.exit_code == 0
    assert "kv.reuse-needs-paged-context-fmha" in result.output
    assert "pairs.v29.encoder-decoder-x-prefix-caching" in result.output
    everything = runner.invoke(app, ["rules"])
    assert f"{len(every_rule())} rule(s)" in everything.output
