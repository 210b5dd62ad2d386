"""The one reader of model facts: MoE spellings, nested text_config, recurrent models,
checkpoint quantization, MLC's own config, bad input, and the device catalog."""

from __future__ import annotations

import json

import pytest

from constraints.facts import (
    CATALOG,
    MLC_QUANTIZATIONS,
    DeviceSpec,
    MissingKeys,
    ModelSpec,
    SpecError,
    UnknownQuantization,
    read_model,
)
from constraints.facts.quant import KNOWN_METHODS

DENSE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "vocab_size": 32000,
}


def test_moe_keys_under_every_spelling_count_the_same():
    spellings = ("num_local_experts", "num_experts", "n_routed_experts")
    counts = {
        key: ModelSpec.from_hf_config({**DENSE, key: 8, "num_experts_per_tok": 2}).num_params
        for key in spellings
    }
    assert len(set(counts.values())) == 1
    dense = ModelSpec.from_hf_config(DENSE)
    moe = ModelSpec.from_hf_config({**DENSE, "num_experts": 8, "num_experts_per_tok": 2})
    mlp = 3 * 1024 * 2816
    assert moe.num_params - dense.num_params == 4 * (7 * mlp + 1024 * 8)
    assert moe.active_params - dense.num_params == 4 * (mlp + 1024 * 8)
    # expert size, shared experts and dense-first layers
    ds = ModelSpec.from_hf_config(
        {
            **DENSE,
            "n_routed_experts": 8,
            "moe_intermediate_size": 512,
            "n_shared_experts": 2,
            "first_k_dense_replace": 1,
        }
    )
    expert = 3 * 1024 * 512
    assert ds.params.experts == 3 * 8 * expert
    assert ds.params.mlp == mlp + 3 * 2 * expert  # one dense layer, two shared per MoE layer
    sparse = ModelSpec.from_hf_config(
        {**DENSE, "num_experts": 8, "decoder_sparse_step": 2, "mlp_only_layers": [3]}
    )
    assert sparse.params.experts == 1 * 8 * mlp  # layer 1 only (3 is listed dense)


def test_text_config_is_the_language_model():
    nested = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": {**DENSE, "model_type": "gemma3_text"},
        "vision_config": {"hidden_size": 1152},
        "torch_dtype": "bfloat16",
    }
    spec = ModelSpec.from_hf_config(nested)
    assert spec.num_layers == 4 and spec.hidden_size == 1024
    assert spec.architecture == "Gemma3ForConditionalGeneration"


def test_recurrent_models_need_no_attention_heads():
    rwkv = ModelSpec.from_hf_config(
        {
            "architectures": ["RwkvForCausalLM"],
            "model_type": "rwkv",
            "hidden_size": 2048,
            "num_hidden_layers": 24,
            "vocab_size": 50277,
        }
    )
    assert rwkv.family == "recurrent" and rwkv.kv_bytes_per_token() == 0
    assert rwkv.state_bytes == 24 * 5 * 2048 * 2  # five vectors of hidden per layer
    facts = rwkv.facts()
    assert facts["model.kv_elements_per_token"] == 0 and facts["model.state_bytes"] > 0
    mamba = ModelSpec.from_hf_config(
        {"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24, "vocab_size": 50280}
    )
    assert mamba.architecture == "MambaForCausalLM"
    assert mamba.state_bytes == 24 * (1536 * 16 + 1536 * 3) * 2


def test_missing_keys_are_all_named():
    broken = {k: v for k, v in DENSE.items() if k not in ("hidden_size", "vocab_size")}
    with pytest.raises(MissingKeys) as err:
        ModelSpec.from_hf_config(broken)
    assert err.value.keys == ("hidden_size", "vocab_size")
    assert "hidden_size, vocab_size" in str(err.value)
    with pytest.raises(MissingKeys, match="qk_rope_head_dim"):
        ModelSpec.from_hf_config({**DENSE, "kv_lora_rank": 512})
    with pytest.raises(MissingKeys, match="linear_num_key_heads"):
        ModelSpec.from_hf_config({**DENSE, "layer_types": ["linear_attention"] * 4})
    with pytest.raises(SpecError, match="layer_types"):
        ModelSpec.from_hf_config({**DENSE, "layer_types": ["full_attention"] * 3})


@pytest.mark.parametrize(
    ("config", "algo", "kv", "bits"),
    [
        ({"quant_method": "fp8"}, "FP8", None, 8.0),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "FP8_BLOCK_SCALES", None, 8.002),
        ({"quant_method": "mxfp4"}, "MXFP4", None, 4.25),
        (
            {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"},
            "NVFP4",
            "FP8",
            4.5,
        ),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, "W4A16_AWQ", None, 4.16),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "W4A16_GPTQ", None, 4.16),
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "W8A16", None, 8.19),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {
                        "weights": {"num_bits": 8, "type": "float"},
                        "input_activations": {"num_bits": 8, "type": "float"},
                    }
                },
                "kv_cache_scheme": {"num_bits": 8, "type": "float"},
            },
            "FP8",
            "FP8",
            8.0,
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}
                },
            },
            "W4A16",
            None,
            4.125,
        ),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "W4A16", None, 4.5),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "W8A16", None, 8.0),
    ],
)
def test_quantization_config_is_a_fact_of_the_checkpoint(config, algo, kv, bits):
    spec = ModelSpec.from_hf_config({**DENSE, "quantization_config": config})
    assert spec.quant.quant_algo == algo and spec.quant.kv_cache_quant_algo == kv
    assert spec.quant.bits == pytest.approx(bits, abs=0.01)
    claims = spec.checkpoint_claims()
    assert claims["quant_config.quant_algo"] == algo
    assert claims.get("quant_config.kv_cache_quant_algo") == kv
    # weights as stored: quantized linear layers, 16-bit embedding, head and norms
    p = spec.params
    linear = p.attention + p.mlp + p.experts
    expected = linear * spec.quant.bits / 8 + (p.total - linear) * 2
    assert abs(spec.weight_bytes() - expected) <= 1


def test_an_unknown_quantization_method_is_named_with_the_known_ones():
    with pytest.raises(UnknownQuantization) as err:
        ModelSpec.from_hf_config({**DENSE, "quantization_config": {"quant_method": "hqq"}})
    assert err.value.method == "hqq" and err.value.known == KNOWN_METHODS
    assert "'hqq'" in str(err.value) and "mxfp4" in str(err.value)


def test_mlc_quantization_names_and_bytes_per_weight():
    assert MLC_QUANTIZATIONS["q4f16_1"].bits == 4.5  # 4 bits + one f16 scale per 32
    assert MLC_QUANTIZATIONS["q4f32_1"].bits == 5.0  # 4 bits + one f32 scale per 32
    assert MLC_QUANTIZATIONS["q3f16_1"].bits == pytest.approx(3.6)  # 10 per uint32 + f16/40
    assert MLC_QUANTIZATIONS["q0f16"].bits == 16.0 and MLC_QUANTIZATIONS["q0f32"].bits == 32.0
    assert MLC_QUANTIZATIONS["e4m3_e4m3_f16"].bits == 8.0
    assert "embedding" not in MLC_QUANTIZATIONS["e4m3_e4m3_f16"].covers


def test_mlc_chat_config_is_a_model(tmp_path):
    chat = {
        "model_type": "llama",
        "quantization": "q4f16_1",
        "model_config": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "context_window_size": 8192,
            "tie_word_embeddings": False,
        },
        "context_window_size": 8192,
        "prefill_chunk_size": 8192,
    }
    (tmp_path / "mlc-chat-config.json").write_text(json.dumps(chat))
    spec = read_model(tmp_path)  # the folder holding it
    assert spec.num_params == 8_030_261_248 and spec.dtype == "float16"
    assert spec.max_position_embeddings == 8192
    # q4f16_1 quantizes everything but the norms: 4.5 bits a weight, about 4.2 GiB
    assert 4.1 * (1 << 30) < spec.weight_bytes() < 4.3 * (1 << 30)
    assert spec.facts()["model.weight_bytes"] == spec.weight_bytes()
    rwkv = read_model(
        {
            "model_type": "rwkv6",
            "quantization": "q4f16_1",
            "model_config": {
                "hidden_size": 2048,
                "intermediate_size": 7168,
                "num_hidden_layers": 24,
                "vocab_size": 65536,
                "head_size": 64,
            },
        }
    )
    assert rwkv.architecture == "Rwkv6ForCausalLM" and rwkv.family == "recurrent"
    with pytest.raises(UnknownQuantization, match="q4f16_1"):
        read_model({**chat, "quantization": "q5f16_9"})
    with pytest.raises(MissingKeys, match="model_type"):
        read_model({"quantization": "q4f16_1", "model_config": {}})
    # the Hugging Face reader alone refuses it, naming the front door
    for given in (tmp_path, chat):
        with pytest.raises(SpecError, match="read_model") as err:
            ModelSpec.from_hf_config(given)
        assert "mlc-chat-config.json" in str(err.value)


@pytest.mark.parametrize(
    ("name", "sm", "gib"),
    [
        ("B200", 100, 179),
        ("GB200", 100, 185),
        ("B300", 103, 268),  # 275,040 MiB (nvidia-smi)
        ("H20", 90, 95),
        ("H800", 90, 79),
        ("L20", 89, 44),
        ("RTX PRO 6000 Blackwell", 120, 95),
    ],
)
def test_new_devices_are_in_the_catalog_with_a_source(name, sm, gib):
    dev = DeviceSpec.named(name)
    assert dev.sm == sm and dev.memory_mib // 1024 == gib
    assert dev.source and dev.bandwidth_gbs > 0 and "bfloat16" in dev.dtypes
    assert ("nvfp4" in dev.dtypes) == (sm >= 100)


def test_every_catalog_entry_is_sourced_and_counts_parse():
    assert all(d.source and d.bandwidth_gbs for d in CATALOG.values())
    eight = DeviceSpec.named("8xH100")
    assert eight.count == 8 and eight.name == "H100-80GB"
    assert DeviceSpec.named("H200x4").count == 4
    assert DeviceSpec.named("B200", count=8, nodes=2).facts()["device.nodes"] == 2


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_catalog_figure_is_in_its_source(name):
    """Each entry names a page (URL) and the figures it was checked against: the MiB
    total, and the bandwidth (in GB/s or TB/s) the entry uses."""
    dev = CATALOG[name]
    assert "https://" in dev.source
    assert f"{dev.memory_mib:,} MiB" in dev.source
    gbs = dev.bandwidth_gbs
    spelled = [f"{gbs:,} GB/s", f"{gbs} GB/s"]
    spelled += [f"{gbs / 1000:{fmt}} TB/s" for fmt in ("g", ".1f", ".2f")]
    assert any(s in dev.source for s in spelled), (dev.source, spelled)


def test_a_gated_decoder_without_its_mlp_size_is_named_not_defaulted():
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 100,
    }
    with pytest.raises(MissingKeys) as err:
        ModelSpec.from_hf_config(cfg)
    assert err.value.keys == ("intermediate_size",)
    with pytest.raises(SpecError) as err:
        ModelSpec.from_hf_config({**cfg, "intermediate_size": 128, "vocab_size": 0})
    assert err.value.key == "vocab_size"
    # a stray window means nothing to Llama (transformers ignores it)
    spec = ModelSpec.from_hf_config({**cfg, "intermediate_size": 128, "sliding_window": 16})
    assert spec.sliding_window == 0 and set(spec.layer_types) == {"full"}
