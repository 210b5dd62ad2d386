"""SGLang 0.5's default attention backend: the Python function the dialect derives it with
(`default_attention_backend`) and the default rules that state it on the options agree on
every combination of GPU, attention kind, architecture and written speculative fields."""

from __future__ import annotations

import itertools

import pytest

from constraints.engines.sglang.rules.backend import default_attention_backend
from constraints.rules import get_rule
from constraints.schema import options

S = "sglang_config."
RULES = [
    get_rule(name)
    for name in (
        "sglang.default-backend-mha",
        "sglang.default-backend-mla",
        "sglang.gpt-oss-default-backend",
        "sglang.llama4-default-backend",
        "sglang.deepseek-v3-sm100-trtllm-mla",
    )
]


@pytest.mark.parametrize(
    ("sm", "mla", "arch", "algorithm", "topk", "page", "expected"),
    [
        (90, False, "LlamaForCausalLM", None, None, None, "fa3"),
        (90, False, "LlamaForCausalLM", "EAGLE", 4, None, "flashinfer"),
        (90, False, "LlamaForCausalLM", "EAGLE", 1, 64, "flashinfer"),
        (90, False, "LlamaForCausalLM", "EAGLE", None, 64, "fa3"),
        (100, False, "LlamaForCausalLM", None, None, 1, "trtllm_mha"),
        (103, False, "Qwen2ForCausalLM", None, None, None, "trtllm_mha"),
        (100, False, "LlamaForCausalLM", "EAGLE", None, None, "flashinfer"),
        (100, False, "LlamaForCausalLM", "EAGLE", 1, None, "trtllm_mha"),
        (100, False, "LlamaForCausalLM", "EAGLE", 1, 64, "flashinfer"),
        (100, False, "LlamaForCausalLM", "DFLASH", None, None, "trtllm_mha"),
        (120, False, "LlamaForCausalLM", None, None, None, "flashinfer"),
        (80, False, "LlamaForCausalLM", None, None, None, "flashinfer"),
        (80, False, "GraniteSWAForCausalLM", None, None, None, "triton"),
        (90, True, "LlamaForCausalLM", None, None, None, "fa3"),
        (100, True, "LlamaForCausalLM", None, None, None, "flashinfer"),
        (89, True, "LlamaForCausalLM", None, None, None, "triton"),
        # model override hooks (sglang_models.py): gpt-oss, Llama 4, DeepSeek-V3
        (100, False, "GptOssForCausalLM", "EAGLE", 4, None, "trtllm_mha"),
        (90, False, "GptOssForCausalLM", "EAGLE", 4, None, "fa3"),
        (89, False, "GptOssForCausalLM", None, None, None, "triton"),
        (100, False, "Llama4ForConditionalGeneration", None, None, None, "trtllm_mha"),
        (80, False, "Llama4ForConditionalGeneration", None, None, None, "triton"),
        (100, True, "DeepseekV3ForCausalLM", None, None, None, "trtllm_mla"),
        (90, True, "DeepseekV3ForCausalLM", None, None, None, "fa3"),
        (89, True, "DeepseekV3ForCausalLM", None, None, None, "triton"),
        (100, False, "Qwen3NextForCausalLM", None, None, None, None),
        (90, False, "other", None, None, None, None),
    ],
)
def test_default_backend(sm, mla, arch, algorithm, topk, page, expected):
    got = default_attention_backend(sm, mla, arch, algorithm=algorithm, topk=topk, page_size=page)
    assert got == expected


def _values(**changes):
    values = {s.path: s.default for s in options()}
    values.update(changes)
    return values


GRID = itertools.product(
    (80, 89, 90, 100, 103, 120),
    (False, True),
    (
        "LlamaForCausalLM",
        "GptOssForCausalLM",
        "DeepseekV3ForCausalLM",
        "Llama4ForConditionalGeneration",
        "Qwen3NextForCausalLM",
        "other",
    ),
    (None, "EAGLE", "DFLASH", "NGRAM"),
    (None, 1, 4),
    (1, 64),
)


def test_the_default_rules_state_the_same_choice():
    checked = 0
    for sm, mla, arch, algorithm, topk, page in GRID:
        expected = default_attention_backend(
            sm, mla, arch, algorithm=algorithm, topk=topk, page_size=page
        )
        base = {
            "device.sm": sm,
            "model.kv_replicated": mla,
            "model.architecture": arch,
            S + "speculative_algorithm": algorithm,
            S + "speculative_eagle_topk_given": topk is not None,
            S + "speculative_eagle_topk": topk or 1,
            S + "page_size": page,
        }
        other = _values(**base, **{S + "attention_backend": "aiter"})
        if expected is None:  # a model override decides: the rules say nothing
            assert all(r.expr.evaluate(other) for r in RULES), base
            continue
        chosen = _values(**base, **{S + "attention_backend": expected})
        assert all(r.expr.evaluate(chosen) for r in RULES), (base, expected)
        assert not all(r.expr.evaluate(other) for r in RULES), base
        checked += 1
    assert checked > 300


def test_split_backends_naming_one_backend_take_no_default():
    same = {
        S + "prefill_attention_backend": "triton",
        S + "decode_attention_backend": "triton",
        S + "attention_backend": None,
    }
    assert all(r.expr.evaluate(_values(**same)) for r in RULES)
    assert not all(r.expr.evaluate(_values(**{S + "attention_backend": None})) for r in RULES)


@pytest.mark.parametrize(
    ("sm", "algorithm", "topk", "expected"),
    [
        (100, None, None, "fa4"),
        (100, "EAGLE", 1, "fa4"),
        (100, "EAGLE", None, "flashinfer"),
        (90, None, None, "fa3"),
        (80, None, None, "flashinfer"),
    ],
)
def test_k_and_v_rows_of_different_widths_run_fa4_where_others_run_trtllm_mha(
    sm, algorithm, topk, expected
):
    """get_default_attn_backend: `if model_config.has_asymmetric_kv: return "fa4"` in the
    SM100 branch (trtllm_mha needs one row width); the function and the rule agree."""
    got = default_attention_backend(
        sm,
        False,
        "LlamaForCausalLM",
        algorithm=algorithm,
        topk=topk,
        page_size=None,
        asymmetric_kv=True,
    )
    assert got == expected
    base = {
        "device.sm": sm,
        "model.asymmetric_kv": True,
        S + "speculative_algorithm": algorithm,
        S + "speculative_eagle_topk_given": topk is not None,
        S + "speculative_eagle_topk": topk or 1,
    }
    assert all(r.expr.evaluate(_values(**base, **{S + "attention_backend": got})) for r in RULES)
    other = "trtllm_mha" if got == "fa4" else "fa4"
    assert not all(
        r.expr.evaluate(_values(**base, **{S + "attention_backend": other})) for r in RULES
    )


def test_the_asymmetric_kv_fact_reads_v_head_dim():
    """`model.asymmetric_kv`: v_head_dim (or swa_v_head_dim) apart from the K width; MLA's
    v_head_dim is no such model (its latent is one row)."""
    import json
    from pathlib import Path

    from constraints.facts.model import ModelSpec

    fixtures = Path(__file__).resolve().parents[3] / "fixtures" / "models"
    llama = json.loads((fixtures / "llama-3.1-8b.json").read_text())
    deepseek = json.loads((fixtures / "deepseek-v3.json").read_text())
    assert not ModelSpec.from_hf_config(llama).asymmetric_kv
    assert ModelSpec.from_hf_config({**llama, "v_head_dim": 64}).asymmetric_kv
    assert not ModelSpec.from_hf_config({**llama, "v_head_dim": 128}).asymmetric_kv
    assert ModelSpec.from_hf_config({**llama, "swa_v_head_dim": 64}).asymmetric_kv
    assert not ModelSpec.from_hf_config(deepseek).asymmetric_kv
    assert ModelSpec.from_hf_config({**llama, "v_head_dim": 64}).facts()["model.asymmetric_kv"]
