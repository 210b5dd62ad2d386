"""Profiles: version-sensitive defaults that "fewest changes" counts from."""

from __future__ import annotations

from arbiter import arbitrate, func
from constraints.profiles import MODES, PROFILES, get_profile
from constraints.rules import all_rules

PAGED = "plugin_config.use_paged_context_fmha"
CHUNKED = {"scheduler_config.enable_chunked_context": True}


def test_profiles_are_consistent_with_the_rules():
    for name in PROFILES:
        r = arbitrate([], profile=name)
        assert r.changes == (), name  # each profile's defaults break no rule
        assert r.stats["profile"] == name


def test_trtllm_010_defaults_before_the_flips():
    r = arbitrate([], profile="trtllm-0.10")
    assert r.value(PAGED) is False
    assert r.value("plugin_config.use_fp8_context_fmha") is False
    assert r.value("kv_cache_config.tokens_per_block") == 128
    current = arbitrate([])
    assert current.value(PAGED) is True and current.value("kv_cache_config.tokens_per_block") == 32


def test_chunked_context_costs_a_change_only_under_the_old_defaults():
    # catalog 1.2: "chunked context needs paged context FMHA" blocked under 0.10 defaults
    old = arbitrate([func("chunked", CHUNKED)], profile="trtllm-0.10")
    new = arbitrate([func("chunked", CHUNKED)])
    assert {c.path for c in old.changes} == {PAGED, "scheduler_config.enable_chunked_context"}
    assert {c.path for c in new.changes} == {"scheduler_config.enable_chunked_context"}
    assert old.provenance(PAGED).rules == ("scheduler.chunked-context-needs-paged-context-fmha",)


def test_explicit_defaults_override_the_profile():
    r = arbitrate([], profile="trtllm-0.10", defaults={"kv_cache_config.tokens_per_block": 64})
    assert r.value("kv_cache_config.tokens_per_block") == 64 and r.changes == ()


def test_profile_and_mode_catalogues():
    assert get_profile(None).name == "trtllm-current"
    assert get_profile("mlc").memory_terms == "mlc"
    assert set(MODES) == {"local", "interactive", "server"}
    assert len(all_rules()) >= 80
