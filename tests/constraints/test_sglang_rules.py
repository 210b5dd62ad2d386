"""The SGLang rule pack: sourced and scoped to SGLang 0.5, compiled for the sglang-0.5
profile only, and the engine-neutral rules that profile also compiles hold in SGLang."""

from __future__ import annotations

from constraints.profiles import PROFILES, get_profile
from constraints.rules import every_rule, rules_for
from constraints.rules.sglang import RULES, SGLANG, chunk_for_memory

# rules of every engine that the sglang profile compiles, and where SGLang enforces each
NEUTRAL = {
    "memory.weights-fit": "mem_cache/kv_cache_configurator.py: a pool of no token fails",
    "machine.parallel-fits-devices": "tp_size x pp_size ranks need as many GPUs",
    "parallel.heads-divisible-by-tp": "models/llama.py LlamaAttention asserts heads % tp",
}


def test_every_sglang_rule_is_sourced_and_scoped():
    assert len(RULES) >= 20
    for rule in RULES:
        assert rule.id.startswith("sglang.")
        assert rule.scope == SGLANG
        assert rule.source.engine == "SGLang" and rule.source.version == "0.5.23"
        assert rule.source.file.startswith("python/sglang/srt/")
        assert rule.feasible and rule.infeasible
        assert rule.topic == "" or rule.topic == "sglang"


def test_the_sglang_profile_compiles_sglang_rules_and_neutral_ones_only():
    compiled = rules_for(get_profile("sglang-0.5"))
    ids = {r.id for r in compiled}
    assert {r.id for r in RULES} <= ids
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
