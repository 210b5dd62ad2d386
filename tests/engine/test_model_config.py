"""ModelArgs parsing and RoPE inverse frequencies against transformers' own init functions."""

from __future__ import annotations

import json

import pytest
import torch

from engine.model import ModelArgs, ModelConfigError, UnsupportedArchitecture, rope_inv_freq
from engine.model.rope import RotaryEmbedding

transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

BASE = dict(
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    vocab_size=100,
)

ROPE_CASES = {
    "linear": dict(max_position_embeddings=4096, rope_parameters={"factor": 4.0}),
    "dynamic": dict(max_position_embeddings=2048, rope_parameters={"factor": 2.0}),
    "llama3": dict(
        max_position_embeddings=131072,
        rope_parameters={
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    ),
    "yarn": dict(
        max_position_embeddings=32768,
        rope_parameters={
            "rope_theta": 1000000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    ),
    "yarn-mscale": dict(
        max_position_embeddings=16384,
        rope_parameters={
            "factor": 8.0,
            "original_max_position_embeddings": 2048,
            "mscale": 1.0,
            "mscale_all_dim": 0.5,
            "beta_fast": 16,
            "beta_slow": 2,
        },
    ),
}


def _hf_config(case: str) -> transformers.LlamaConfig:
    kw = json.loads(json.dumps(ROPE_CASES[case]))  # deep copy
    kw["rope_parameters"].setdefault("rope_theta", 10000.0)
    kw["rope_parameters"]["rope_type"] = case.split("-")[0]
    return transformers.LlamaConfig(**BASE, **kw)


@pytest.mark.parametrize("case", sorted(ROPE_CASES))
def test_inv_freq_matches_transformers(case):
    config = _hf_config(case)
    args = ModelArgs.from_hf(config.to_dict())
    kind = case.split("-")[0]
    assert args.rope_scaling["rope_type"] == kind
    lengths = [None, 1000, 6000] if kind == "dynamic" else [None]
    for seq_len in lengths:
        theirs, their_scale = ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len)
        ours, our_scale = rope_inv_freq(args, seq_len)
        torch.testing.assert_close(ours, theirs, atol=0, rtol=0)
        assert our_scale == pytest.approx(their_scale, rel=1e-12)
    if kind == "yarn":
        assert our_scale != 1.0  # the attention factor is really exercised


def test_dynamic_base_grows_past_max_positions():
    args = ModelArgs.from_hf(_hf_config("dynamic").to_dict())
    short, _ = rope_inv_freq(args, 100)
    long, _ = rope_inv_freq(args, 8000)
    assert torch.equal(short, rope_inv_freq(args, None)[0])
    assert (long[1:] < short[1:]).all()


def test_default_rope_matches_transformers_rotary_module():
    config = transformers.LlamaConfig(**BASE, rope_theta=12345.0)
    args = ModelArgs.from_hf(config.to_dict())
    assert args.rope_scaling is None and args.rope_theta == 12345.0
    theirs = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
    torch.testing.assert_close(RotaryEmbedding(args).inv_freq, theirs.inv_freq, atol=0, rtol=0)
    pos = torch.arange(50)
    cos, sin = RotaryEmbedding(args).cos_sin(pos, torch.float32)
    their_cos, their_sin = theirs(torch.zeros(1), pos[None])
    torch.testing.assert_close(cos, their_cos[0], atol=0, rtol=0)
    torch.testing.assert_close(sin, their_sin[0], atol=0, rtol=0)


def test_legacy_rope_scaling_keys_are_read():
    cfg = dict(
        BASE, model_type="llama", rope_theta=5e5, rope_scaling={"type": "linear", "factor": 2}
    )
    args = ModelArgs.from_hf(cfg)
    assert args.rope_theta == 5e5
    assert args.rope_scaling == {"rope_type": "linear", "factor": 2}
    plain = ModelArgs.from_hf(dict(BASE, model_type="llama", rope_theta=5e5))
    torch.testing.assert_close(rope_inv_freq(args)[0], rope_inv_freq(plain)[0] / 2)


def test_shapes_and_per_architecture_details():
    llama = ModelArgs.from_hf(dict(BASE, model_type="llama", attention_bias=True, head_dim=64))
    assert llama.head_dim == 64 and llama.attention_bias and llama.o_proj_bias
    assert llama.sliding_window is None and llama.layer_window(0) is None
    mistral = ModelArgs.from_hf(dict(BASE, architectures=["MistralForCausalLM"], sliding_window=8))
    assert mistral.architecture == "mistral" and mistral.head_dim == 128
    assert [mistral.layer_window(i) for i in range(2)] == [8, 8]
    qwen_off = ModelArgs.from_hf(dict(BASE, model_type="qwen2", sliding_window=4096))
    assert qwen_off.attention_bias and not qwen_off.o_proj_bias
    assert qwen_off.sliding_window is None
    qwen_on = ModelArgs.from_hf(
        dict(
            BASE,
            model_type="qwen2",
            sliding_window=32,
            use_sliding_window=True,
            max_window_layers=1,
        )
    )
    assert [qwen_on.layer_window(i) for i in range(2)] == [None, 32]
    assert ModelArgs.from_hf(dict(BASE, model_type="llama", dtype="bfloat16")).torch_dtype == (
        "bfloat16"
    )


def test_reads_a_config_file_and_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(dict(BASE, model_type="llama")))
    assert ModelArgs.from_hf(tmp_path) == ModelArgs.from_hf(tmp_path / "config.json")


@pytest.mark.parametrize(
    ("cfg", "error", "key"),
    [
        (dict(BASE, model_type="gpt2"), UnsupportedArchitecture, "model_type"),
        (dict(BASE, architectures=["GPT2LMHeadModel"]), UnsupportedArchitecture, "architectures"),
        ({**{k: v for k, v in BASE.items() if k != "hidden_size"}, "model_type": "llama"},
         ModelConfigError, "hidden_size"),
        (dict(BASE, model_type="llama", vocab_size=0), ModelConfigError, "vocab_size"),
        (dict(BASE, model_type="llama", num_key_value_heads=3), ModelConfigError,
         "num_key_value_heads"),
        (dict(BASE, model_type="llama", rope_scaling={"rope_type": "longrope"}),
         ModelConfigError, "rope_scaling.rope_type"),
        (dict(BASE, model_type="llama", rope_parameters={"rope_type": "llama3", "factor": 8}),
         ModelConfigError, "rope_parameters.low_freq_factor"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(cfg, error, key):
    with pytest.raises(error) as info:
        ModelArgs.from_hf(cfg)
    assert info.value.key == key
    assert key in str(info.value)
