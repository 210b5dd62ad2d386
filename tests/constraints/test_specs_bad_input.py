"""Bad model configs: a value of the wrong type anywhere the reader looks, in config.json
or its `quantization_config`, is a SpecError naming the key (and the file), never a
TypeError, KeyError or AttributeError from deep inside the reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constraints.facts import ModelSpec, read_model
from constraints.facts.errors import SpecError, UnknownQuantization
from constraints.facts.quant import KNOWN_METHODS

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
NAMES = (
    "llama-3.1-8b",
    "deepseek-v3",
    "gpt-oss-120b",
    "gemma-2-27b",
    "gemma-3-27b",
    "qwen3-next-80b-a3b",
    "qwen3-235b-a22b",
    "llama-4-scout",
    "mixtral-8x7b",
    "rwkv6-finch-1b6",
)


def fixture(name: str) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return data


LLAMA = fixture("llama-3.1-8b")
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
@given(st.sampled_from(NAMES), st.booleans(), st.data())
def test_any_value_of_any_key_is_read_or_named(name, nested, data):
    config = fixture(name)
    target = config.get("text_config", config) if nested else config
    key = data.draw(st.sampled_from(sorted(target) + ["quantization_config"]))
    target[key] = data.draw(JSON)
    try:
        ModelSpec.from_hf_config(config)
    except SpecError as err:
        assert str(err).startswith("<config dict>")


@settings(
    max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
@given(
    st.sampled_from(KNOWN_METHODS),
    st.dictionaries(
        st.sampled_from(
            (
                "weight_block_size",
                "bits",
                "w_bit",
                "group_size",
                "modules_to_not_convert",
                "load_in_4bit",
                "config_groups",
                "kv_cache_scheme",
                "quant_algo",
                "kv_cache_quant_algo",
                "quantization",
                "producer",
            )
        ),
        JSON,
        max_size=3,
    ),
)
def test_any_quantization_config_is_read_or_named(method, extra):
    try:
        ModelSpec.from_hf_config(
            {**LLAMA, "quantization_config": {"quant_method": method, **extra}}
        )
    except SpecError as err:
        assert err.key is None or str(err.key).startswith("quantization_config"), err


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"architectures": "LlamaForCausalLM"}, "architectures"),
        ({"architectures": [7]}, "architectures"),
        ({"torch_dtype": {"bf16": True}}, "torch_dtype"),
        ({"model_type": ["llama"]}, "model_type"),
        ({"model_type": "mistral", "sliding_window": [4096]}, "sliding_window"),
        ({"quantization_config": "fp8"}, "quantization_config"),
        (
            {"quantization_config": {"quant_method": "gptq", "bits": "4"}},
            "quantization_config.bits",
        ),
        (
            {"quantization_config": {"quant_method": "fp8", "weight_block_size": ["128", "128"]}},
            "quantization_config.weight_block_size",
        ),
        (
            {"quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": "attn"}},
            "quantization_config.modules_to_not_convert",
        ),
        (
            {
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {"group_0": {"weights": 8}},
                }
            },
            "quantization_config.config_groups.group_0.weights",
        ),
    ],
)
def test_a_value_of_the_wrong_type_names_its_key(change, key):
    with pytest.raises(SpecError) as err:
        ModelSpec.from_hf_config({**LLAMA, **change})
    assert err.value.key == key
    assert repr(change[next(iter(change))]) in str(err.value) or key in str(err.value)


def test_layer_lists_must_cover_every_layer():
    scout = fixture("llama-4-scout")
    scout["text_config"]["no_rope_layers"] = [1, 1, 0]  # 48 layers
    with pytest.raises(SpecError) as err:
        ModelSpec.from_hf_config(scout)
    assert err.value.key == "no_rope_layers" and "3 entries for 48 layers" in str(err.value)
    qwen = fixture("qwen3-235b-a22b")
    with pytest.raises(SpecError) as err:
        ModelSpec.from_hf_config({**qwen, "mlp_only_layers": [1, "2"]})
    assert err.value.key == "mlp_only_layers"


def test_a_kv_quantization_we_do_not_know_is_named_with_the_known_ones():
    config = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP4"}
    with pytest.raises(UnknownQuantization) as err:
        ModelSpec.from_hf_config({**LLAMA, "quantization_config": config})
    assert err.value.key == "quantization_config.kv_cache_quant_algo"
    assert err.value.method == "FP4" and err.value.known == ("FP8", "INT8", "NVFP4")


def test_a_bad_file_is_named_by_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "torch_dtype": ["bfloat16"]}))
    with pytest.raises(SpecError) as err:
        read_model(path)
    assert str(err.value).startswith(f"{path}, key 'torch_dtype': dtype ['bfloat16']")
    mlc = tmp_path / "mlc-chat-config.json"
    mlc.write_text(
        json.dumps({"model_type": "llama", "model_config": LLAMA, "quantization": ["q4f16_1"]})
    )
    with pytest.raises(UnknownQuantization) as err:
        read_model(mlc)
    assert err.value.key == "quantization"


@settings(
    max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
@given(
    st.sampled_from(
        ("model_type", "quantization", "model_config", "context_window_size", "sliding_window_size")
    ),
    JSON,
)
def test_any_value_in_an_mlc_chat_config_is_read_or_named(key, value):
    from constraints.facts.mlc import read_mlc_chat_config

    data = {"model_type": "llama", "quantization": "q4f16_1", "model_config": dict(LLAMA)}
    data[key] = value
    try:
        read_mlc_chat_config(data, "mlc-chat-config.json")
    except SpecError as err:
        assert str(err).startswith("mlc-chat-config.json")
