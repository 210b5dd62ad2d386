"""Option paths derived from the schema: each section's constant spells its options' paths
and refuses a name the schema lacks, naming it with close matches."""

from __future__ import annotations

import pytest

from constraints.errors import UnknownPath
from constraints.paths import KV_CACHE_CONFIG, SECTIONS, VLLM_CONFIG, Section
from constraints.schema import EngineConfig, options


def test_a_section_spells_its_options_paths():
    assert KV_CACHE_CONFIG.enable_block_reuse == "kv_cache_config.enable_block_reuse"
    assert VLLM_CONFIG.enforce_eager == "vllm_config.enforce_eager"


def test_every_option_of_the_schema_is_reachable_through_its_section():
    assert set(SECTIONS) == set(EngineConfig.model_fields)
    for spec in options():
        section, _, name = spec.path.partition(".")
        assert getattr(SECTIONS[section], name) == spec.path


def test_a_misspelt_option_is_an_unknown_path_with_close_matches():
    with pytest.raises(UnknownPath) as err:
        _ = KV_CACHE_CONFIG.enable_block_reus
    assert "kv_cache_config.enable_block_reuse" in err.value.suggestions


def test_a_section_the_schema_lacks_is_refused():
    with pytest.raises(ValueError, match="no section of EngineConfig"):
        Section("lmdeploy_config")
