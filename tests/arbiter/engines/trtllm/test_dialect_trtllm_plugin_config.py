"""build_config.plugin_config against PluginConfig's field list (tensorrt_llm/plugin/plugin.py
@c20322ff): every key known by name and type; neither 1.0 (BuildConfig.from_dict,
model_copy(update=...)) nor 1.2 (BuildConfig(**v), a dataclass) validates a YAML's
plugin_config, so an unknown key is named with its path and close matches, a value of the
wrong type is named, and both are carried exactly as given."""

from __future__ import annotations

import pytest

from arbiter.dialects._base import KeyProblem
from arbiter.engines.trtllm.fields import catalogue, validate
from arbiter.engines.trtllm.native import check_trtllm

RELEASES = ["1.0", "1.2"]


@pytest.mark.parametrize("release", RELEASES)
def test_plugin_config_has_a_field_list(release):
    cat = catalogue(release)
    assert cat.fields("BuildConfig")["plugin_config"].base_type == "PluginConfig"
    fields = cat.fields("PluginConfig")
    assert len(fields) == 41
    assert fields["use_paged_context_fmha"].type == "bool"
    assert fields["gemm_plugin"].default is None and "nvfp4" in fields["gemm_plugin"].type
    assert fields["tokens_per_block"].default == 32
    assert cat.ignores_extra("PluginConfig") and cat.unchecked("PluginConfig")
    assert not cat.unchecked("BuildConfig") and not cat.unchecked("QuantConfig")


@pytest.mark.parametrize("release", RELEASES)
def test_unknown_keys_and_bad_values_are_named_and_carried_as_given(release):
    plugin = {
        "multiple_profile": True,  # a typo of multiple_profiles
        "moe_plugin": "fp16",  # not a plugin dtype
        "dora_plugin": "maybe",  # not a bool
        "smooth_quant_plugins": "disable",  # PluginConfig's validator reads it as False
        "qserve_gemm_plugin": "enable",  # True: not a dtype, but read as PluginConfig reads it
        "bert_attention_plugin": "bfloat16",
    }
    ignored: list[KeyProblem] = []
    out = validate(
        {"backend": "tensorrt", "build_config": {"plugin_config": plugin}},
        release,
        "tensorrt",
        ignored=ignored,
    )
    assert out["build_config"]["plugin_config"] == plugin  # untouched
    named = {p.key.rsplit(".", 1)[1]: p for p in ignored}
    assert set(named) == {"multiple_profile", "moe_plugin", "dora_plugin", "qserve_gemm_plugin"}
    assert named["multiple_profile"].suggestions == (
        "build_config.plugin_config.multiple_profiles",
    )
    assert named["multiple_profile"].key == "build_config.plugin_config.multiple_profile"
    assert "expected bool" in named["dora_plugin"].reason
    assert f"TensorRT-LLM {release} stores it unchecked" in named["moe_plugin"].reason


@pytest.mark.parametrize("release", RELEASES)
def test_check_trtllm_warns_carries_and_writes_back(release):
    plugin = {"multiple_profile": True, "dora_plugin": "maybe", "use_paged_context_fmha": True}
    config = {"backend": "tensorrt", "build_config": {"plugin_config": plugin}}
    verdict = check_trtllm(config, profile=f"trtllm-{release}")
    assert verdict.verdict == "accept"
    assert any("multiple_profiles" in w for w in verdict.warnings)
    assert any("dora_plugin: expected bool" in w for w in verdict.warnings)
    carried = verdict.not_arbitrated
    assert "the engine drops it" in carried["build_config.plugin_config.multiple_profile"]
    assert "unchecked" in carried["build_config.plugin_config.dora_plugin"]
    written = verdict.config["build_config"]["plugin_config"]
    assert written["multiple_profile"] is True and written["dora_plugin"] == "maybe"


def test_a_well_formed_plugin_config_gives_no_warning():
    plugin = {"multiple_profiles": "enable", "paged_kv_cache": True, "gemm_plugin": "auto"}
    config = {"backend": "tensorrt", "build_config": {"plugin_config": plugin}}
    verdict = check_trtllm(config)
    assert verdict.verdict == "accept"
    assert not [w for w in verdict.warnings if "plugin_config" in w]
