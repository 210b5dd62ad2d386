"""The family table (constraints/facts/families.py): which reader a `model_type` gets, and
the recipe of a new family (one class, one `FAMILIES` line) changing only what it says."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from constraints.facts import families
from constraints.facts.families import FAMILIES, Family, family_of
from constraints.facts.model import read_hf

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models"
LLAMA = {
    k: v
    for k, v in json.loads((FIXTURES / "llama-3.1-8b.json").read_text()).items()
    if k != "_provenance"
}


@pytest.mark.parametrize(
    ("model_type", "architectures", "reader"),
    [
        ("llama", [], families.Llama),
        ("llama_custom", [], Family),  # Llama admits no variants: a stray window counts
        ("llama4_text", [], families.Llama4),
        ("qwen2_moe", [], families.Qwen2),
        ("qwen2_5_vl", [], families.Qwen2),  # the longest key it extends
        ("qwen3_next", [], families.Qwen3Next),
        ("qwen3_next_mtp", [], families.Qwen3),  # Qwen3-Next admits no variants
        ("gemma3n", [], families.Gemma3),
        ("gpt_oss", [], families.GptOss),
        ("kimi_k2", [], families.DeepseekV3),
        ("rwkv6", [], families.Rwkv6),
        ("rwkv7", [], Family),  # recurrent readers admit no variants
        ("falcon_mamba", ["FalconMambaForCausalLM"], families._MambaByName),
        ("", ["RwkvForCausalLM"], families.Recurrent),
        ("phi3", ["Phi3ForCausalLM"], Family),
    ],
)
def test_the_reader_of_a_model_type(model_type, architectures, reader):
    assert family_of(model_type, architectures) is reader


def test_every_table_entry_is_a_family_keyed_by_a_model_type():
    for key, reader in FAMILIES.items():
        assert key == key.lower() and " " not in key
        assert issubclass(reader, Family)


def test_a_new_family_is_one_class_and_one_table_line(monkeypatch):
    class Acme(Family):
        """A made-up family: a norm on queries and keys."""

        qk_norm = True

    base = read_hf({**LLAMA, "model_type": "acme"})
    monkeypatch.setitem(FAMILIES, "acme", Acme)
    acme = read_hf({**LLAMA, "model_type": "acme"})
    assert acme.params.other - base.params.other == 32 * 2 * 128  # 32 layers x 2 x head_dim
    assert acme.kv_elements_per_token == base.kv_elements_per_token
    assert read_hf({**LLAMA, "model_type": "acme_v2"}).params == acme.params  # a variant


def test_the_readers_no_longer_test_model_type_strings():
    for name in ("model.py", "layers.py", "families.py"):
        tree = ast.parse((ROOT / "constraints" / "facts" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str)
                for c in [node.left, *node.comparators]
            ):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                assert "model_type" not in names, (name, node.lineno)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "startswith":
                assert name == "families.py", (name, node.lineno)  # only family_of's lookup
