"""Safetensors loading: dtypes, tied embeddings, and errors naming the tensors."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.model import CheckpointError, load_model
from engine.model.testing import make_tiny_model_dir
from tests.engine.test_model import PagedRunner

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("loader") / "llama", "llama", seed=2)


def _rewrite(src, dst, edit):
    shutil.copytree(src, dst)
    tensors = load_file(dst / "model.safetensors")
    edit(tensors)
    save_file(tensors, dst / "model.safetensors", metadata={"format": "pt"})
    return dst


def test_missing_tensor_is_named(llama_dir, tmp_path):
    bad = _rewrite(llama_dir, tmp_path / "m", lambda t: t.pop("model.norm.weight"))
    with pytest.raises(CheckpointError, match="missing tensors: model.norm.weight") as info:
        load_model(bad)
    assert info.value.missing == ["model.norm.weight"]
    assert info.value.unexpected == []


def test_unexpected_tensor_is_named(llama_dir, tmp_path):
    def add(t):
        t["model.layers.9.mlp.up_proj.weight"] = torch.zeros(2, 2)

    bad = _rewrite(llama_dir, tmp_path / "u", add)
    with pytest.raises(CheckpointError, match="unexpected tensors") as info:
        load_model(bad)
    assert info.value.unexpected == ["model.layers.9.mlp.up_proj.weight"]


def test_shape_mismatch_is_named(llama_dir, tmp_path):
    def shrink(t):
        t["model.layers.0.self_attn.k_proj.weight"] = torch.zeros(3, 64)

    bad = _rewrite(llama_dir, tmp_path / "s", shrink)
    with pytest.raises(CheckpointError, match="model.layers.0.self_attn.k_proj.weight"):
        load_model(bad)


def test_folder_without_safetensors(llama_dir, tmp_path):
    (tmp_path / "config.json").write_text((llama_dir / "config.json").read_text())
    with pytest.raises(CheckpointError, match="no \\*.safetensors"):
        load_model(tmp_path)


def test_dtypes_by_name_and_rejects_others(llama_dir):
    model = load_model(llama_dir, "bfloat16")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    # RoPE frequencies stay float32 whatever the weights' dtype.
    assert model.rotary.inv_freq.dtype == torch.float32
    with pytest.raises(ValueError, match="not supported"):
        load_model(llama_dir, "int8")
    with pytest.raises(ValueError, match="not supported"):
        load_model(llama_dir, torch.float64)


def test_weights_equal_the_checkpoint(llama_dir):
    model = load_model(llama_dir)
    tensors = load_file(llama_dir / "model.safetensors")
    params = dict(model.named_parameters())
    assert set(tensors) == set(params)
    for name, tensor in tensors.items():
        assert torch.equal(params[name], tensor), name


def test_tied_embeddings_match_transformers(tmp_path):
    path = make_tiny_model_dir(tmp_path / "tied", "llama", seed=3, tie_word_embeddings=True)
    assert "lm_head.weight" not in load_file(path / "model.safetensors")
    ours = load_model(path)
    assert ours.lm_head.weight is ours.model.embed_tokens.weight
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager", dtype=torch.float32
    ).eval()
    prompt = list(range(7, 30))
    runner = PagedRunner(ours, 4, 8)
    logits = runner.step({runner.add(): prompt}, all_logits=True)
    with torch.no_grad():
        ref = hf(torch.tensor([prompt])).logits[0]
    torch.testing.assert_close(logits, ref, atol=1e-4, rtol=0)
