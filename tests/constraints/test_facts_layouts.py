"""Per-GPU weights under the parallel layouts that place a MoE model's parts differently
(facts/memory.py `weight_parts`, `rank_weight_bytes`; the terms' `expert_shards` and
`attention_copies`), vLLM's own workspace terms (engines/vllm/memory.py
`vllm_moe_workspace_per_token`, the sampler rows), and the memory report's words for one
block, one sequence and beams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constraints.engines.vllm.memory import (
    VLLM_SAMPLER_BYTES_PER_VOCAB,
    vllm_moe_workspace_per_token,
)
from constraints.facts import ModelSpec
from constraints.facts.memory import (
    GIB,
    coefficients,
    memory_terms,
    rank_weight_bytes,
    weight_parts,
)
from constraints.schema import options
from constraints.shared.rules.memory import shortfall

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"


def facts(name: str, **layout: object) -> dict[str, object]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    defaults = {s.path: s.default for s in options()}
    return {**defaults, **ModelSpec.from_hf_config(data).facts(), **layout}


def test_the_parts_add_up_to_the_stored_weights():
    spec_facts = facts("deepseek-r1-0528-fp8")
    parts = weight_parts(spec_facts, None, "bfloat16")
    assert parts.total == spec_facts["model.weight_bytes"]
    # DeepSeek-R1: 256 routed experts in 58 of 61 layers hold nearly all the weights
    assert 0.9 < parts.experts / parts.total < 0.99
    # MLA: 11.4 GB; embedding and head 1.9 GB each (bf16); the rest 4.0 GB
    assert 0 < parts.rest < parts.attention < parts.experts
    assert parts.embedding == parts.head == 129280 * 7168 * 2


def test_unquantized_parts_follow_the_bytes_per_parameter():
    spec_facts = facts("qwen3-235b-a22b")
    bf16 = weight_parts(spec_facts, None, "bfloat16")
    fp8 = weight_parts(spec_facts, "FP8", "bfloat16")
    assert bf16.total == 2 * spec_facts["model.num_params"]
    assert bf16.experts == 2 * spec_facts["model.expert_params"] == 2 * fp8.experts
    assert bf16.attention == 2 * spec_facts["model.attention_params"]


def test_a_dense_model_has_no_expert_part():
    parts = weight_parts(facts("llama-3.1-8b"), None, "bfloat16")
    assert parts.experts == 0 and parts.attention > 0


@pytest.mark.parametrize("dp", [1, 2, 4, 8])
def test_vllm_data_parallel_replicas_share_the_experts(dp):
    # vLLM: the MoE layers of all replicas form one group of tp x dp ranks (with or
    # without --enable-expert-parallel); the rest is whole in every replica
    base = facts("deepseek-r1-0528-fp8")
    parts = weight_parts(base, None, "bfloat16")
    values = {
        **base,
        "vllm_config.data_parallel_size": dp,
        "vllm_config.enable_expert_parallel": True,
    }
    assert memory_terms("vllm").expert_shards(values) == dp
    per_gpu = rank_weight_bytes(values, None, "bfloat16", "vllm")
    assert per_gpu == pytest.approx(parts.total - parts.experts + parts.experts / dp)


def test_dp8_ep_deepseek_fits_an_h200_that_full_replicas_do_not():
    base = facts("deepseek-r1-0528-fp8")
    h200 = 143771 * 2**20  # the catalog's H200 memory (MiB)
    full = rank_weight_bytes(base, None, "bfloat16")
    dp8 = rank_weight_bytes({**base, "vllm_config.data_parallel_size": 8}, None, "bfloat16", "vllm")
    assert full > 4 * h200  # every GPU holding the whole model: hopeless
    assert dp8 < 0.7 * h200  # an eighth of the experts each: 93.9 GiB
    assert round(dp8 / GIB) in range(85, 95)


def test_sglang_attention_dp_copies_the_attention_weights():
    base = facts("deepseek-r1-0528-fp8")
    parts = weight_parts(base, None, "bfloat16")
    tp8 = {**base, "parallel_config.tensor_parallel_size": 8}
    dp_attention = {**tp8, "sglang_config.attn_dp_size": 8}
    sglang = memory_terms("sglang")
    assert sglang.attention_copies(tp8) == 1 and sglang.attention_copies(dp_attention) == 8
    # attention tensor-parallel over 8 / 8 = 1 rank: each GPU holds all of it
    assert rank_weight_bytes(dp_attention, None, "bfloat16", "sglang") == pytest.approx(
        parts.attention + (parts.total - parts.attention) / 8
    )
    assert rank_weight_bytes(tp8, None, "bfloat16") == pytest.approx(parts.total / 8)


def test_sglang_replicas_and_trtllm_keep_the_experts_over_tp():
    base = facts("deepseek-r1-0528-fp8", **{"sglang_config.dp_size": 2})
    assert memory_terms("sglang").expert_shards(base) == 1
    assert memory_terms("arbiter").expert_shards(base) == 1


def test_vllm_moe_workspace_per_token():
    # 16-bit rows of max(I, H) and max(2 I, H) for each of the top-k experts
    assert vllm_moe_workspace_per_token(facts("gpt-oss-120b")) == 2 * 4 * (2880 + 5760)
    assert vllm_moe_workspace_per_token(facts("deepseek-r1-0528-fp8")) == 2 * 8 * (7168 + 7168)
    assert vllm_moe_workspace_per_token(facts("llama-3.1-8b")) == 0
    moe = coefficients(facts("gpt-oss-120b"), "vllm")
    plain = coefficients(facts("gpt-oss-120b"), "arbiter")
    assert moe.act_per_token - plain.act_per_token == 69120


def test_vllm_sampler_rows_per_sequence():
    f = facts("gpt-oss-120b")
    assert coefficients(f, "vllm").act_per_sequence == VLLM_SAMPLER_BYTES_PER_VOCAB * 201088
    assert coefficients(f, "arbiter").act_per_sequence == 4 * 201088


def _report_values(**more: object) -> dict[str, object]:
    return {
        **facts("llama-3.1-8b"),
        "device.memory_mib": 23034,
        "build_config.max_num_tokens": 2048,
        "build_config.max_batch_size": 256,
        "build_config.max_seq_len": 8192,
        **more,
    }


def test_the_report_names_a_block_a_sequence_and_beams():
    values = _report_values()
    # the whole-device form (vLLM, SGLang, MLC and the engine-neutral "estimate" terms)
    block = shortfall(values, "estimate", tokens=16)
    assert "+ KV of one block (16 tokens) 2.0 MiB = " in block
    assert "+ KV of one 8192-token sequence 1.0 GiB = " in shortfall(values, "estimate")
    beams = shortfall(_report_values(**{"build_config.max_beam_width": 4}), "estimate")
    assert "+ KV of 4 beams x 8192 tokens 4.0 GiB = " in beams
    assert block.startswith("weights 15.0 GiB + workspace ")
    # TensorRT-LLM's (the default terms): its fraction of what the weights leave free
    trt = shortfall(values, tokens=16)
    assert trt.startswith("22.5 GiB - weights 15.0 GiB - workspace ")
    assert "free after loading; KV of one block (16 tokens) 2.0 MiB <= " in trt
