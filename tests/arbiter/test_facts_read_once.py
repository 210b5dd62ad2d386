"""The machine is read once at the front door: one `arbiter check` parses the model's
config.json exactly once, whichever engine's dialect reads the configuration, and the
dialects take what they need (architectures, MTP layers, the text vocabulary, a vision
tower) off the `ModelSpec`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import constraints.facts.model as model_facts
from arbiter.cli import app

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests/fixtures/models/llama-3.1-8b.json"
CONFIGS = {
    "vllm": ROOT / "examples/vllm/llama-3.1-8b-h100.yaml",
    "sglang": ROOT / "examples/sglang/eagle_chain_h100.yaml",
    "trtllm": ROOT / "examples/trtllm/streamingllm.yaml",
}


@pytest.mark.parametrize("dialect", sorted(CONFIGS))
def test_one_check_parses_the_model_config_once(monkeypatch, dialect):
    parsed: list[str] = []
    real_load, real_read = model_facts.load_json, Path.read_text

    def load_json(config, name):
        parsed.append(str(config))
        return real_load(config, name)

    def read_text(self, *args, **kwargs):
        if self.resolve() == LLAMA:
            parsed.append(f"read_text {self}")
        return real_read(self, *args, **kwargs)

    # every binding of the parse function, and any other reader of the file
    monkeypatch.setattr(model_facts, "load_json", load_json)
    monkeypatch.setattr("constraints.facts.read.load_json", load_json)
    monkeypatch.setattr("arbiter.engines.vllm.target.load_json", load_json)
    monkeypatch.setattr("arbiter.engines.sglang.memory.load_json", load_json)
    monkeypatch.setattr(Path, "read_text", read_text)
    args = ["check", str(CONFIGS[dialect]), "--dialect", dialect, "--model", str(LLAMA)]
    result = CliRunner().invoke(app, [*args, "--device", "H100", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert parsed == [str(LLAMA), f"read_text {LLAMA}"], parsed


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gemma-3-27b", "llama-4-scout"])
def test_the_model_spec_carries_what_the_dialects_read_off_the_file(name):
    from arbiter.engines.sglang.memory import vision_tower
    from arbiter.engines.vllm.target import draft_vocab, read_target

    path = ROOT / f"tests/fixtures/models/{name}.json"
    raw = model_facts.load_json(path, "")[0]
    spec = model_facts.read_hf(raw, str(path))
    assert spec.architectures == tuple(raw["architectures"])
    text = raw.get("text_config", raw)
    assert spec.text_vocab_size == text["vocab_size"]
    assert spec.hf_config == raw
    # the views the dialects take are the same off the spec as off the file
    assert read_target(spec) == read_target(path)
    assert vision_tower(spec) == vision_tower(path)
    assert draft_vocab(spec, None) == draft_vocab(path, None)
