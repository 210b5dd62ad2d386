"""ModelSpec from Hugging Face configs and DeviceSpec from the catalog or torch."""

from __future__ import annotations

import json

import pytest

from constraints.shared.rules.memory import param_count
from constraints.specs import CATALOG, DeviceSpec, ModelSpec, SpecError, UnknownDevice

LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}


def test_llama3_8b_shape_and_parameter_count(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA3_8B))
    spec = ModelSpec.from_hf_config(tmp_path)  # the folder works as well as the file
    assert (spec.num_layers, spec.num_kv_heads, spec.head_dim) == (32, 8, 128)
    assert spec.architecture == "LlamaForCausalLM" and spec.dtype == "bfloat16"
    # Meta publishes 8.03 B parameters for Llama-3-8B
    assert spec.num_params == 8_030_261_248
    assert spec.kv_bytes_per_token() == 131072  # 128 KiB per token in 16-bit
    facts = spec.facts()
    assert facts["model.num_params"] == spec.num_params
    # the memory model computes the same count from the shape facts alone
    assert param_count({**facts, "model.num_params": 0}) == spec.num_params


def test_sliding_window_tied_embeddings_and_experts():
    mistral = ModelSpec.from_hf_config(
        {
            **LLAMA3_8B,
            "architectures": ["MistralForCausalLM"],
            "sliding_window": 4096,
            "vocab_size": 32000,
        }
    )
    assert mistral.sliding_window == 4096 and mistral.architecture == "MistralForCausalLM"
    tied = ModelSpec.from_hf_config({**LLAMA3_8B, "tie_word_embeddings": True})
    assert ModelSpec.from_hf_config(LLAMA3_8B).num_params - tied.num_params == 128256 * 4096
    mixtral = ModelSpec.from_hf_config({**LLAMA3_8B, "num_local_experts": 8})
    assert mixtral.num_params > 6 * ModelSpec.from_hf_config(LLAMA3_8B).num_params // 2
    unknown = ModelSpec.from_hf_config({**LLAMA3_8B, "architectures": ["FancyLM"]})
    assert unknown.architecture == "other"


def test_bad_configs_name_file_and_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA3_8B, "num_hidden_layers": "32"}))
    with pytest.raises(SpecError) as err:
        ModelSpec.from_hf_config(path)
    assert err.value.key == "num_hidden_layers" and str(path) in str(err.value)
    broken = dict(LLAMA3_8B)
    del broken["vocab_size"]
    with pytest.raises(SpecError, match="vocab_size"):
        ModelSpec.from_hf_config(broken)
    with pytest.raises(SpecError, match="torch_dtype"):
        ModelSpec.from_hf_config({**LLAMA3_8B, "torch_dtype": "int4"})
    with pytest.raises(SpecError, match="cannot read"):
        ModelSpec.from_hf_config(tmp_path / "missing.json")


def test_device_catalog_has_the_common_gpus():
    for name in (
        "V100-16GB",
        "A10G",
        "L4",
        "L40S",
        "A100-40GB",
        "A100-80GB",
        "H100-80GB",
        "H200",
        "RTX-4090",
    ):
        assert name in CATALOG
    assert DeviceSpec.named("h100").facts()["device.memory_mib"] == 81559
    assert DeviceSpec.named("H100-80GB").sm == 90
    assert DeviceSpec.named("L4").sm == 89 and DeviceSpec.named("V100").sm == 70
    cpu = DeviceSpec.named("cpu")
    assert cpu.name == "cpu" and cpu.memory_mib > 0


def test_unknown_device_suggests():
    with pytest.raises(UnknownDevice) as err:
        DeviceSpec.named("H10-80GB")
    assert "H100-80GB" in err.value.suggestions


def test_probe_returns_a_device():
    spec = DeviceSpec.probe()
    assert spec.memory_mib > 0 and spec.sm > 0
