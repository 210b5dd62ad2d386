"""The runtime reads the model and device facts once, into the record `arbiter check`
reads at its front door (`Machine`): `engine.LLM` builds it with `runtime_machine`, and
`build_claims` given that machine reads no model config again."""

from __future__ import annotations

import pytest
import torch

import engine.model.config as model_config
from arbiter.dialects.protocol import Machine
from engine.args import build_claims, device_facts, runtime_machine
from engine.model import ModelArgs

ARGS = ModelArgs(
    architecture="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=160,
    max_position_embeddings=256,
    torch_dtype="float32",
)
CPU = device_facts(torch.device("cpu"))


def _setups(claims):
    return {c.name: c.fixes for c in claims if c.name in ("device", "model")}


def test_the_machine_holds_the_model_and_device_facts():
    machine = runtime_machine(ARGS, CPU)
    assert isinstance(machine, Machine)
    assert machine.model is not None and machine.model.facts() == ARGS.spec.facts()
    assert machine.device is not None
    assert (machine.device.sm, machine.device.memory_mib, machine.device.count) == (
        CPU.sm,
        CPU.memory_mib,
        CPU.count,
    )
    assert machine.gpus == CPU.count


def test_claims_from_the_machine_read_no_model_config_again(monkeypatch):
    machine = runtime_machine(ARGS, CPU)
    calls = []
    real = model_config.read_hf
    monkeypatch.setattr(model_config, "read_hf", lambda cfg: calls.append(1) or real(cfg))
    from_machine = build_claims({}, ARGS, machine)
    assert calls == []  # the facts come from the machine read at the front door
    from_facts = build_claims({}, ARGS, CPU)
    assert calls  # without one, the facts are read here
    assert _setups(from_machine) == _setups(from_facts)


def test_the_machine_decides_the_device_claim():
    other = runtime_machine(ARGS, type(CPU)(CPU.sm, 4096, 2))
    device = _setups(build_claims({}, ARGS, other))["device"]
    assert device == {"device.sm": CPU.sm, "device.memory_mib": 4096, "device.count": 2}


def test_the_llm_reads_the_model_config_once(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from engine.llm import LLM
    from engine.model.testing import make_tiny_model_dir

    folder = make_tiny_model_dir(tmp_path, "qwen2", seed=3)
    calls = []
    real = model_config.read_hf
    monkeypatch.setattr(model_config, "read_hf", lambda cfg: calls.append(1) or real(cfg))
    llm = LLM(folder, kv_cache_config={"tokens_per_block": 4, "max_tokens": 256})
    assert len(calls) == 1  # checked, shaped, arbitrated and loaded from one reading
    assert isinstance(llm.machine, Machine)
    assert llm.machine.model is not None and llm.machine.model.vocab_size == llm.vocab_size
    llm.close()
