"""arbitrate(): tiers, weights, alternatives, defaults, provenance, input errors, stats."""

from __future__ import annotations

import pytest

from arbiter import (
    ConflictError,
    InvalidClaim,
    arbitrate,
    func,
    ge,
    le,
    load_claims,
    ne,
    one_of,
    perf,
    setup,
)
from constraints.expr import eq, implies
from constraints.rules import Rule, Source

SRC = Source("test", "test")
PAGED = "plugin_config.use_paged_context_fmha"
# plugin, builder and StreamingLLM rules are the TensorRT engine's; the 0.9-0.12 LLM API
# added beam search x block reuse and the pre-Ampere limits
TRT = "trtllm-tensorrt"
OLD = "trtllm-0.10"


def test_no_claims_gives_the_defaults():
    r = arbitrate([])
    assert r.status == "optimal"
    assert r.changes == ()
    assert r.value("kv_cache_config.tokens_per_block") == 32
    assert r.provenance("kv_cache_config.tokens_per_block").kind == "default"


def test_higher_priority_strictly_dominates_weight():
    claims = [
        perf("light_high", {PAGED: False}, weight=1, priority=1),
        perf("heavy_low", {PAGED: True}, weight=100, priority=0),
    ]
    r = arbitrate(claims, rules=[])
    assert r.kept_names == ("light_high",)
    (d,) = r.dropped
    assert d.name == "heavy_low" and d.reason.kind == "outranked"
    assert d.reason.winners == ("light_high",)


def test_weights_add_up_within_a_tier():
    claims = [
        perf("a", {PAGED: False}, weight=3),
        perf("b", {PAGED: True}, weight=2),
        perf("c", {PAGED: True, "plugin_config.context_fmha": True}, weight=2),
    ]
    r = arbitrate(claims, rules=[])
    assert set(r.kept_names) == {"b", "c"}
    assert r.dropped[0].reason.kind == "outweighed"


def test_alternatives_earn_their_own_weight_and_are_reported():
    claims = [
        func("small_budget", {"build_config.max_num_tokens": le(3000)}),
        perf(
            "big_budget",
            {"build_config.max_num_tokens": ge(8192)},
            weight=10,
            alternatives=[
                ({"build_config.max_num_tokens": ge(4096)}, 5),
                ({"build_config.max_num_tokens": ge(2048)}, 2),
            ],
        ),
    ]
    r = arbitrate(claims)
    (kept,) = r.kept
    assert kept.alternative == 1 and kept.weight == 2
    assert 2048 <= r.value("build_config.max_num_tokens") <= 3000


def test_numeric_options_stay_as_close_to_the_default_as_claims_allow():
    r = arbitrate([func("budget", {"build_config.max_num_tokens": ge(10000)})])
    assert r.value("build_config.max_num_tokens") == 10000
    r = arbitrate([func("budget", {"build_config.max_num_tokens": le(5000)})])
    assert r.value("build_config.max_num_tokens") == 5000


def test_rules_push_options_off_defaults_with_provenance():
    r = arbitrate([func("streaming", {"plugin_config.streamingllm": True})], profile=TRT)
    assert r.value(PAGED) is False
    prov = r.provenance(PAGED)
    assert prov.kind == "rule"
    assert prov.rules == ("attention.streamingllm-no-paged-context-fmha",)
    assert prov.claims == ("streaming",)
    assert r.provenance("plugin_config.streamingllm").claims == ("streaming",)
    assert r.provenance("device.sm").kind == "fact"


def test_setup_claims_fix_facts_and_their_provenance():
    on = {PAGED: True, "kv_cache_config.enable_block_reuse": True}
    r = arbitrate([setup("gpu", {"device.sm": 75})], profile=OLD, defaults=on)
    assert r.value(PAGED) is False and r.value("kv_cache_config.enable_block_reuse") is False
    assert r.provenance("device.sm").claims == ("gpu",)
    assert r.config.device.sm == 75


def test_speculative_budget_is_raised_to_the_product():
    r = arbitrate(
        [
            func(
                "medusa",
                {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 4},
            ),
            func("batch", {"build_config.max_batch_size": 2048}),
        ],
        profile=TRT,
    )
    assert r.value("build_config.max_num_tokens") == 2048 * 5
    assert r.value("build_config.speculative_decoding_mode") == "medusa"


def test_speculative_budget_conflict_names_the_rule():
    with pytest.raises(ConflictError) as err:
        arbitrate(
            [
                func(
                    "medusa",
                    {"speculative_config.decoding_type": "Medusa", "build_config.max_draft_len": 4},
                ),
                func("batch", {"build_config.max_batch_size": 64}),
                func("budget", {"build_config.max_num_tokens": 256}),
            ],
            profile=TRT,
        )
    conflict = err.value.conflicts[0]
    assert set(conflict.claims) == {"medusa", "batch", "budget"}
    assert conflict.rules == ("speculative.token-budget-covers-drafts",)


def test_a_claim_on_a_fact_conflicts_with_the_setup():
    with pytest.raises(ConflictError) as err:
        arbitrate([setup("gpu", {"device.sm": 80}), func("needs_hopper", {"device.sm": ge(90)})])
    conflict = err.value.conflicts[0]
    assert conflict.claims == ("needs_hopper",)
    assert conflict.setups == ("gpu",)


def test_expression_requirements_and_custom_rules():
    rule = Rule(
        "test.reuse-needs-big-blocks",
        "reuse needs big blocks",
        SRC,
        implies(
            eq("kv_cache_config.enable_block_reuse", True),
            ge("kv_cache_config.tokens_per_block", 64),
        ),
    )
    r = arbitrate([func("reuse", {"kv_cache_config.enable_block_reuse": True})], rules=[rule])
    assert r.value("kv_cache_config.tokens_per_block") == 64
    r = arbitrate(
        [func("either", eq(PAGED, False) | eq("plugin_config.context_fmha", False))], rules=[]
    )
    assert len(r.changes) == 1


def test_predicates_in_mappings():
    r = arbitrate(
        [
            func(
                "policy", {"scheduler_config.capacity_scheduler_policy": ne("GUARANTEED_NO_EVICT")}
            ),
            perf(
                "util", {"scheduler_config.capacity_scheduler_policy": one_of(["MAX_UTILIZATION"])}
            ),
        ]
    )
    assert r.value("scheduler_config.capacity_scheduler_policy") == "MAX_UTILIZATION"


def test_fallbacks_run_once_after_solving_in_a_stable_order():
    calls = []
    claims = [
        func("streaming", {"plugin_config.streamingllm": True}),
        perf(
            "z_reuse",
            {"kv_cache_config.enable_block_reuse": True},
            fallback=lambda r: calls.append(("z", r.kind)),
        ),
        perf(
            "a_chunked",
            {"scheduler_config.enable_chunked_context": True},
            fallback=lambda r: calls.append(("a", r.kind)),
        ),
        perf("m_top", {PAGED: True}, priority=2, fallback=lambda r: calls.append(("m", r.kind))),
    ]
    arbitrate(claims, profile=TRT)
    assert calls == [("m", "conflict"), ("a", "conflict"), ("z", "conflict")]


def test_dropped_claim_leaves_nothing_behind():
    claims = [
        func("beam", {"build_config.max_beam_width": 4}),
        perf(
            "fast_reuse",
            {"kv_cache_config.tokens_per_block": 64, "kv_cache_config.enable_block_reuse": True},
        ),
    ]
    r = arbitrate(claims, profile=OLD, defaults={"kv_cache_config.tokens_per_block": 32})
    assert r.dropped_names == ("fast_reuse",)
    assert r.value("kv_cache_config.tokens_per_block") == 32


def test_same_resolution_for_any_claim_order():
    claims = [
        func("beam", {"build_config.max_beam_width": 2}),
        perf("chunk", {"scheduler_config.enable_chunked_context": True}, weight=2),
        perf("nochunk", {"scheduler_config.enable_chunked_context": False}, weight=2),
        perf("window", {"kv_cache_config.max_attention_window": ge(4096)}),
    ]
    first = arbitrate(claims)
    for order in ([3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]):
        again = arbitrate([claims[i] for i in order])
        assert again.values == first.values
        assert again.kept == first.kept and again.dropped == first.dropped


def test_stats_and_status():
    r = arbitrate([func("beam", {"build_config.max_beam_width": 2})], time_limit_s=5)
    assert r.status == "optimal"
    assert r.stats["variables"] > 0 and r.stats["constraints"] > 0 and r.stats["solves"] >= 1
    assert r.config.build_config.max_beam_width == 2


@pytest.mark.parametrize(
    ("claims", "match", "attrs"),
    [
        ([lambda: func("a", {"x": 1})], "unknown option path", {"claim": "a", "path": "x"}),
        (
            [
                {
                    "kind": "func",
                    "name": "a",
                    "requires": {"kv_cache_config.tokens_per_block": "big"},
                }
            ],
            "outside the domain",
            {"path": "kv_cache_config.tokens_per_block", "allowed": "int in [1, 4194304]"},
        ),
        (
            [lambda: func("a", {PAGED: True}), lambda: func("a", {PAGED: False})],
            "duplicate claim name",
            {"claim": "a"},
        ),
        (
            [{"kind": "perf", "name": "p", "requires": {PAGED: True}, "weight": 0}],
            "weight",
            {"claim": "p"},
        ),
        (
            [{"kind": "perf", "name": "p", "requires": {PAGED: True}, "weight": 1.5}],
            "weight",
            {"claim": "p"},
        ),
        (
            [{"kind": "func", "name": "q", "requires": {PAGED: {"gte": 3}}}],
            "unknown predicate",
            {"path": PAGED},
        ),
        (
            [{"kind": "setup", "name": "s", "fixes": {"device.sm": {"ge": 80}}}],
            "exact values",
            {"claim": "s"},
        ),
        (
            [lambda: setup("s1", {"device.sm": 80}), lambda: setup("s2", {"device.sm": 90})],
            "disagree",
            {"path": "device.sm"},
        ),
        (
            [lambda: perf("p", {PAGED: True}, weight=2, alternatives=[({PAGED: False}, 2)])],
            "less than",
            {"claim": "p"},
        ),
        (["not a claim"], "not a claim", {}),
    ],
)
def test_malformed_claims_raise_invalid_claim_before_solving(claims, match, attrs):
    with pytest.raises(InvalidClaim, match=match) as err:
        arbitrate([c() if callable(c) else c for c in claims])
    for key, value in attrs.items():
        assert getattr(err.value, key) == value


def test_unknown_path_error_suggests():
    with pytest.raises(InvalidClaim) as err:
        func("a", {"kv_cache_config.enable_blok_reuse": True})
    assert err.value.suggestions[0] == "kv_cache_config.enable_block_reuse"
    assert "did you mean" in str(err.value)


def test_claims_load_from_json_and_yaml():
    text = """
claims:
  - kind: setup
    name: gpu
    fixes: {device.sm: 90}
  - kind: func
    name: budget
    requires: {build_config.max_num_tokens: {ge: 4096}}
  - kind: perf
    name: reuse
    weight: 2
    requires: {kv_cache_config.enable_block_reuse: true}
    alternatives:
      - requires: {kv_cache_config.tokens_per_block: 64}
        weight: 1
"""
    claims = load_claims(text)
    assert [c.kind for c in claims] == ["setup", "func", "perf"]
    assert claims[2].alternatives[0].weight == 1
    from arbiter.claims import claim_to_dict

    again = load_claims([claim_to_dict(c) for c in claims])
    assert [c.expr for c in again] == [c.expr for c in claims]
    with pytest.raises(InvalidClaim, match="neither JSON nor YAML"):
        load_claims("claims: [\n  - {")


def test_scaled_shifted_products_compile_exactly():
    from constraints.expr import Prod, ge, ref

    batch, draft, tokens = (
        "build_config.max_batch_size",
        "build_config.max_draft_len",
        "build_config.max_num_tokens",
    )
    need = ge(tokens, Prod(ref(batch), ref(draft) + 1, scale=2, offset=10))  # 2*b*(d+1)+10
    fixed = {batch: 64, draft: 4}
    assert arbitrate([func("sizes", {**fixed, tokens: 650}), func("need", need)])
    with pytest.raises(ConflictError) as err:
        arbitrate([func("sizes", {**fixed, tokens: 649}), func("need", need)])
    assert set(err.value.conflicts[0].claims) == {"need", "sizes"}
    # with two free factors the product is a solver variable; the largest batch that fits
    r = arbitrate([func("need", need), func("fixed", {tokens: 100, draft: 4})])
    assert 2 * r.values[batch] * 5 + 10 <= 100 < 2 * (r.values[batch] + 1) * 5 + 10
