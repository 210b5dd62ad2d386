"""TensorRT-LLM dialect: LlmArgs / extra_llm_api_options YAML / engine folders <-> claims."""

from __future__ import annotations

import json
import logging

import pytest
import yaml

from arbiter import ConflictError, FuncClaim, PerfClaim, SetupClaim, arbitrate
from arbiter.dialects import DialectError, machine_claims
from arbiter.engines.trtllm import native as trtllm

REUSE = "kv_cache_config.enable_block_reuse"
PAGED = "plugin_config.use_paged_context_fmha"


def names(parsed):
    return {c.name: c for c in parsed.claims}


def test_explicit_values_are_func_claims_and_defaults_perf_claims():
    parsed = trtllm.read({"max_batch_size": 64, "kv_cache_config": {"tokens_per_block": 64}})
    claims = names(parsed)
    assert isinstance(claims["llm_args.max_batch_size"], FuncClaim)
    assert claims["llm_args.kv_cache_config.tokens_per_block"].requires == {
        "kv_cache_config.tokens_per_block": 64
    }
    assert isinstance(claims["default.enable_block_reuse"], PerfClaim)
    # a feature the user named is no longer a default
    parsed = trtllm.read({"kv_cache_config": {"enable_block_reuse": True}})
    assert "default.enable_block_reuse" not in names(parsed)


def test_explicit_reuse_fails_closed_and_default_reuse_falls_back_with_a_log(caplog):
    volta = machine_claims(device="V100-16GB")
    old = "trtllm-0.10"  # "pre-Ampere: no block reuse" is the 0.9-0.12 LLM API's
    with pytest.raises(ConflictError) as err:
        arbitrate(
            [*trtllm.read({"kv_cache_config": {"enable_block_reuse": True}}).claims, *volta],
            profile=old,
            defaults={REUSE: True},
        )
    assert err.value.conflicts[0].claims == ("llm_args.kv_cache_config.enable_block_reuse",)
    with caplog.at_level(logging.WARNING, logger="arbiter.dialects"):
        r = arbitrate(
            [*trtllm.read({"max_batch_size": 8}).claims, *volta],
            profile=old,
            defaults={REUSE: True},
        )
    assert r.value(REUSE) is False and "default.enable_block_reuse" in r.dropped_names
    assert "default enable_block_reuse switched off" in caplog.text


def test_yaml_file_and_speculative_config(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "max_batch_size": 32,
                "speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3},
                "backend": "pytorch",
            }
        )
    )
    parsed = trtllm.read(path)
    r = arbitrate(parsed.claims, profile=parsed.profile)
    assert r.value("speculative_config.decoding_type") == "Eagle"
    assert r.value("speculative_config.eagle3") is True
    assert r.value("build_config.max_draft_len") == 3
    # build_config is a TrtLlmArgs field: a TensorRT engine's plugin switches read as before
    path.write_text(
        yaml.safe_dump(
            {
                "backend": "tensorrt",
                "build_config": {"plugin_config": {"multiple_profiles": "enable"}},
            }
        )
    )
    parsed = trtllm.read(path)
    r = arbitrate(parsed.claims, profile=parsed.profile)
    assert r.value("plugin_config.multiple_profiles") is True


def test_bad_input_names_key_and_file(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text("kv_cache_config:\n  enable_blok_reuse: true\n")
    with pytest.raises(DialectError) as err:
        trtllm.read(path)
    assert err.value.key == "kv_cache_config.enable_blok_reuse" and str(path) in str(err.value)
    assert "kv_cache_config.enable_block_reuse" in err.value.suggestions
    with pytest.raises(DialectError, match="max_batch_sise"):
        trtllm.read({"max_batch_sise": 8})
    with pytest.raises(DialectError, match="decoding_type"):
        trtllm.read({"speculative_config": {"decoding_type": "NGramish"}})
    with pytest.raises(DialectError, match="tokens_per_block"):
        trtllm.read({"kv_cache_config": {"tokens_per_block": 0}})


def test_engine_folder_is_readonly(tmp_path):
    engine = tmp_path / "engine"
    engine.mkdir()
    config = {
        "pretrained_config": {
            "architecture": "LlamaForCausalLM",
            "dtype": "float16",
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "vocab_size": 128256,
            "max_position_embeddings": 8192,
            "mapping": {"tp_size": 1, "pp_size": 1},
        },
        "build_config": {
            "max_batch_size": 64,
            "max_seq_len": 4096,
            "speculative_decoding_mode": 1,
            "plugin_config": {"use_paged_context_fmha": False, "tokens_per_block": 128},
        },
    }
    (engine / "config.json").write_text(json.dumps(config))
    parsed = trtllm.read(engine)
    readonly = names(parsed)["BuildConfig is readonly"]
    assert isinstance(readonly, SetupClaim) and readonly.fixes[PAGED] is False
    trt = parsed.profile  # a prebuilt engine: the TensorRT-engine line
    assert trt == "trtllm-tensorrt"
    r = arbitrate(parsed.claims, profile=trt)
    assert r.value(REUSE) is False  # the default gives way to the engine as built
    with pytest.raises(ConflictError) as err:
        arbitrate(
            trtllm.read({"kv_cache_config": {"enable_block_reuse": True}}, engine=engine).claims,
            profile=trt,
        )
    assert "BuildConfig is readonly" in err.value.conflicts[0].setups


def test_resolution_round_trips_through_the_yaml_shape():
    given = {
        "backend": "tensorrt",
        "max_batch_size": 128,
        "enable_chunked_prefill": True,
        "quant_config": {"quant_algo": "FP8"},
        "speculative_config": {"decoding_type": "Medusa", "max_draft_len": 4},
    }
    parsed = trtllm.read(given)
    r = arbitrate(parsed.claims, profile=parsed.profile)
    out = trtllm.write(r, parsed)
    assert out["max_batch_size"] == 128 and out["enable_chunked_prefill"] is True
    assert out["speculative_config"] == {"decoding_type": "Medusa", "max_draft_len": 4}
    again = trtllm.read(yaml.safe_load(yaml.safe_dump(out)))
    assert arbitrate(again.claims, profile=again.profile).values == r.values
