"""The nested configs trtllm-serve's YAML builds itself: QuantConfig and LoraConfig refuse
a key they do not know (every one named, with its path and close matches), and so does
1.2's BuildConfig(**v); 1.0's BuildConfig.from_dict drops one, which is a warning and the
key is carried as given."""

from __future__ import annotations

import pytest

from arbiter.engines.trtllm.fields import FieldErrors, catalogue, validate
from arbiter.engines.trtllm.native import check_trtllm

TENSORRT = {"backend": "tensorrt"}


@pytest.mark.parametrize("release", ["1.0", "1.2"])
def test_nested_configs_have_field_lists(release):
    cat = catalogue(release)
    assert cat.args["TrtLlmArgs"]["quant_config"].startswith("QuantConfig")
    assert cat.args["TrtLlmArgs"]["build_config"].startswith("BuildConfig")
    assert cat.args["BaseLlmArgs"]["lora_config"].startswith("LoraConfig")
    assert {"quant_algo", "kv_cache_quant_algo", "group_size", "exclude_modules"} <= set(
        cat.fields("QuantConfig")
    )
    assert cat.fields("BuildConfig")["lora_config"].base_type == "LoraConfig"
    assert len(cat.fields("BuildConfig")) == 30
    assert cat.ignores_extra("BuildConfig") == (release == "1.0")
    assert not cat.ignores_extra("QuantConfig") and not cat.ignores_extra("LoraConfig")


def test_every_unknown_nested_key_is_named_at_once_with_its_path():
    config = {
        **TENSORRT,
        "quant_config": {"quant_algo": "FP8", "group_sise": 64},
        "lora_config": {"max_lora_rnk": 8},
        "build_config": {"lora_config": {"lora_dirs": ["/a"]}},
    }
    with pytest.raises(FieldErrors) as err:
        validate(config, "1.2", "tensorrt")
    paths = {p.key: p.suggestions for p in err.value.problems}
    assert paths == {
        "quant_config.group_sise": ("quant_config.group_size",),
        "lora_config.max_lora_rnk": (
            "lora_config.max_lora_rank",
            "lora_config.max_loras",
            "lora_config.max_cpu_loras",
        ),
        "build_config.lora_config.lora_dirs": ("build_config.lora_config.lora_dir",),
    }
    verdict = check_trtllm(config)
    assert verdict.verdict == "reject" and len(verdict.reasons) == 3


def test_values_of_nested_configs_are_checked():
    refused = check_trtllm({"lora_config": {"lora_ckpt_source": "pt"}})
    assert refused.verdict == "reject"
    assert "lora_config.lora_ckpt_source" in refused.reasons[0]
    nested = check_trtllm({**TENSORRT, "quant_config": {"group_size": {"a": 1}}})
    assert nested.verdict == "reject" and "not an object" in nested.reasons[0]


def test_an_unknown_build_config_key_is_dropped_by_1_0_and_carried():
    config = {**TENSORRT, "build_config": {"max_batch_size": 16, "max_batch_szie": 4}}
    verdict = check_trtllm(config, profile="trtllm-1.0")
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("build_config.max_batch_size") == 16
    [warning] = [w for w in verdict.warnings if "max_batch_szie" in w]
    assert "the engine drops it" in warning and "build_config.max_batch_size" in warning
    assert "build_config.max_batch_szie" in verdict.not_arbitrated
    assert verdict.config["build_config"]["max_batch_szie"] == 4  # written back as given


def test_known_nested_keys_not_arbitrated_are_carried_untouched():
    config = {"enable_lora": True, "lora_config": {"lora_dir": ["/x"], "max_lora_rank": 16}}
    verdict = check_trtllm(config)
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.config["lora_config"] == {"lora_dir": ["/x"], "max_lora_rank": 16}


def test_an_unknown_build_config_key_is_refused_by_1_2():
    config = {**TENSORRT, "build_config": {"max_batch_size": 16, "max_batch_szie": 4}}
    verdict = check_trtllm(config, profile="trtllm-1.2")
    assert verdict.verdict == "reject"
    assert verdict.unknown_keys == ("build_config.max_batch_szie",)
    assert "did you mean 'build_config.max_batch_size'" in verdict.reasons[0]
