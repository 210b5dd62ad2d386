"""The SGLang rule pack: sourced and scoped to SGLang 0.5 (or a release range of it), compiled for the sglang-0.5
profile only, and the engine-neutral rules that profile also compiles hold in SGLang."""

from __future__ import annotations

import pytest

from constraints.engines.sglang.rules.sglang import (
    ATTN_TP_ARCHITECTURES,
    RULES,
    SGLANG,
    chunk_for_memory,
)
from constraints.profiles import PROFILES, get_profile
from constraints.rules import every_rule, get_rule, rules_for
from constraints.rules.base import bind_rule
from constraints.schema import fact_defaults

# rules of every engine that the sglang profile compiles, and where SGLang enforces each
NEUTRAL = {
    "memory.weights-fit": "mem_cache/kv_cache_configurator.py: a pool of no token fails",
    "machine.parallel-fits-devices": "tp_size x pp_size ranks need as many GPUs",
}


def test_every_sglang_rule_is_sourced_and_scoped():
    assert len(RULES) >= 20
    for rule in RULES:
        assert rule.id.startswith("sglang.")
        # the pack's scope, or a release range inside it with the source of that release
        if rule.scope != SGLANG:
            assert rule.scope.engine == "sglang" and (rule.scope.since or rule.scope.until)
            release = rule.scope.until or rule.scope.since
            assert rule.source.version == release, rule.id
        else:
            assert rule.source.version == "0.5.23"
        assert rule.source.engine == "SGLang"
        assert rule.source.file.startswith("python/sglang/srt/")
        assert rule.feasible and rule.infeasible
        assert rule.topic == "" or rule.topic == "sglang"


def test_the_sglang_profile_compiles_sglang_rules_and_neutral_ones_only():
    profile = get_profile("sglang-0.5")
    compiled = rules_for(profile)
    ids = {r.id for r in compiled}
    assert {r.id for r in RULES if profile.admits(r)} <= ids
    assert {r.id for r in RULES if not profile.admits(r)} == {
        "sglang.chunk-by-gpu-memory-0.5.16",
        "sglang.dflash-no-attn-dp-0.5.16",
    }
    others = {r.id for r in compiled if r.scope.engine == "any"}
    assert others == set(NEUTRAL)
    for rule in compiled:
        assert rule.scope.engine in ("any", "sglang")
        assert (
            "TensorRT-LLM" not in rule.source.engine
            or "SGLang" in rule.source.engine
            or (rule.id in NEUTRAL)
        )


def test_no_other_profile_compiles_sglang_rules():
    for name, profile in PROFILES.items():
        if profile.engine == "sglang":
            continue
        assert not [r.id for r in rules_for(profile) if r.id.startswith("sglang.")], name


def test_sglang_rules_are_registered():
    assert {r.id for r in RULES} <= {r.id for r in every_rule()}
    assert {r.topic for r in every_rule() if r.id.startswith("sglang.")} == {"sglang"}


def test_chunk_tiers():
    assert [chunk_for_memory(g * 1024) for g in (16, 24, 48, 80, 141, 180)] == [
        2048,
        4096,
        4096,
        8192,
        8192,
        16384,
    ]


def test_sglang_heads_rule_replaces_the_shared_one_for_sglang_only():
    sglang = {r.id for r in rules_for(get_profile("sglang-0.5"))}
    assert "sglang.heads-divisible-by-attn-tp" in sglang
    assert "parallel.heads-divisible-by-tp" not in sglang
    for name, profile in PROFILES.items():
        if profile.engine != "sglang":
            assert "parallel.heads-divisible-by-tp" in {r.id for r in rules_for(profile)}, name
    assert get_rule("sglang.heads-divisible-by-attn-tp").replaces == (
        "parallel.heads-divisible-by-tp",
    )


def _heads_hold(arch: str, heads: int, kv: int, tp: int, dp: int, cp: int = 1, mla=False):
    facts = {
        **fact_defaults(),
        "model.architecture": arch,
        "model.num_attention_heads": heads,
        "model.num_kv_heads": kv,
        "model.kv_replicated": mla,
    }
    rule = bind_rule(get_rule("sglang.heads-divisible-by-attn-tp"), facts)
    values = {
        **facts,
        "parallel_config.tensor_parallel_size": tp,
        "sglang_config.attn_dp_size": dp,
        "sglang_config.attn_cp_size": cp,
    }
    return rule.expr.evaluate(values)


@pytest.mark.parametrize(
    ("arch", "heads", "kv", "tp", "dp", "cp", "mla", "holds"),
    [
        # Qwen2-57B-A14B: 28 heads, 4 KV heads; attention TP 8 / 2 = 4 splits them
        ("Qwen2MoeForCausalLM", 28, 4, 8, 2, 1, False, True),
        ("Qwen2MoeForCausalLM", 28, 4, 8, 1, 1, False, False),
        # Qwen2 (dense) divides by the whole TP group even with attention DP
        ("Qwen2ForCausalLM", 28, 4, 8, 2, 1, False, False),
        ("Qwen2ForCausalLM", 28, 4, 4, 1, 1, False, True),
        # attention context parallelism also narrows the attention-TP group
        ("Qwen3MoeForCausalLM", 28, 4, 16, 2, 2, False, True),
        ("Qwen3MoeForCausalLM", 28, 4, 16, 2, 1, False, False),
        # KV heads replicated over whole ranks: 4 KV heads over 8 attention-TP ranks
        ("Qwen3MoeForCausalLM", 32, 4, 8, 1, 1, False, True),
        # 6 KV heads over 4 ranks neither divide nor replicate
        ("Qwen3ForCausalLM", 24, 6, 8, 2, 1, False, False),
        # MLA (DeepSeek-V3): only the 128 query heads are split
        ("DeepseekV3ForCausalLM", 128, 128, 32, 8, 1, True, True),
        ("LlamaForCausalLM", 32, 8, 3, 1, 1, False, False),
        # a class not known to read the attention-TP width gets the whole TP group
        ("other", 28, 4, 8, 2, 1, False, False),
    ],
)
def test_sglang_heads_rule_splits_over_the_attention_tp_group(
    arch, heads, kv, tp, dp, cp, mla, holds
):
    assert _heads_hold(arch, heads, kv, tp, dp, cp, mla) is holds


def test_attention_tp_architectures_are_known_model_classes():
    from constraints.schema import ARCHITECTURES

    assert set(ATTN_TP_ARCHITECTURES) <= set(ARCHITECTURES)
