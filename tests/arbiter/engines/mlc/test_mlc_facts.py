"""MLC in its own words: mlc-chat-config.json as the model, MLC quantization names, the
16-token page, RWKV's recurrent state, and the temp-buffer term of the capacity."""

from __future__ import annotations

import json

import pytest

from arbiter import ConflictError, arbitrate, func
from arbiter.application.check import check_file
from arbiter.dialects import machine_claims
from arbiter.engines.mlc import native as mlc
from constraints.engines.mlc.memory import MLC_TEMP_BYTES_PER_TOKEN
from constraints.facts import read_model
from constraints.facts.memory import coefficients
from constraints.profiles import get_profile

CHAT = {
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
    },
    "context_window_size": 8192,
}
RWKV6 = {
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


def test_a_4bit_chat_config_is_sized_with_its_4bit_weights(tmp_path):
    (tmp_path / "mlc-chat-config.json").write_text(json.dumps(CHAT))
    resolution, out, _ = check_file({"mode": "server"}, "mlc", model=tmp_path, device="L4")
    cap = resolution.capacity
    # 8.03B weights at 4.5 bits (q4f16_1: 4 bits + one f16 scale per 32): 4.2 GiB, not 15
    assert 4.1 < cap.weights / (1 << 30) < 4.3
    assert resolution.value("quant_config.quant_algo") == "W4A16"
    assert resolution.value("model.dtype") == "float16"
    assert out["kv_cache_page_size"] == 16


def test_mlc_accepts_only_16_token_pages():
    parsed = mlc.read({"mode": "local", "kv_cache_page_size": 32})
    with pytest.raises(ConflictError) as err:
        arbitrate([*parsed.claims, *machine_claims(CHAT, "H100")], profile="mlc", mode="local")
    assert "mlc.kv-page-size-16" in err.value.conflicts[0].rules
    # TensorRT-LLM has no such limit
    assert arbitrate([func("page", {"kv_cache_config.tokens_per_block": 32})])


def test_rwkv_keeps_history_and_a_kv_model_does_not():
    spec = read_model(RWKV6)
    history = mlc.read({"mode": "local", "max_history_size": 4})
    r = arbitrate([*history.claims, *machine_claims(spec, "L4")], profile="mlc", mode="local")
    assert r.value("runtime_config.max_history_size") == 4
    with pytest.raises(ConflictError) as err:
        arbitrate([*history.claims, *machine_claims(CHAT, "L4")], profile="mlc", mode="local")
    assert "mlc.history-size-recurrent-only" in err.value.conflicts[0].rules


def test_server_capacity_subtracts_twice_the_assumed_temp_buffer():
    claims = machine_claims(CHAT, "H100")
    r = arbitrate(claims, profile="mlc", mode="server")
    prefill = get_profile("mlc").defaults["build_config.max_num_tokens"]
    with_temp = coefficients(r.values, "mlc")
    known = coefficients({**r.values, "memory.mlc_temp_buffer_bytes": 1 << 30}, "mlc")
    # unknown: two prefill chunks' gate and up projections in 16 bits, per token
    assert with_temp.act_per_token - known.act_per_token == 2 * MLC_TEMP_BYTES_PER_TOKEN * 14336
    assert known.act_fixed - with_temp.act_fixed == 2 << 30  # a known buffer counts twice
    assert r.capacity.activations >= 2 * MLC_TEMP_BYTES_PER_TOKEN * 14336 * prefill
