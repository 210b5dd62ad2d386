"""vLLM's MoE workspace under data parallelism (engines/vllm/memory.py `gathered_replicas`,
`vllm_dispatch_bytes_per_token`), against the figure vLLM logged
for Qwen3-Coder-480B-A35B-Instruct-FP8 at --data-parallel-size 8 --enable-expert-parallel.

The log (vllm-project/recipes pull request #12, vLLM v0.10.1.dev101, 8 x H20 141 GB, the
recipe's launch without --max-model-len): "the available KV cache memory (48.66 GiB)" at
the default gpu_memory_utilization 0.9 and 55.65 GiB at 0.95. vLLM 0.10.1 gives the KV
cache `total x utilization - non_kv_cache_memory` (v1/worker/gpu_worker.py
determine_available_memory), so the two lines give the GPU's memory,
(55.65 - 48.66) / 0.05 = 139.8 GiB, and what weights and the profiled workspace took:
0.9 x 139.8 - 48.66 = 77.16 GiB a GPU.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.engines.vllm.native import check_vllm
from constraints.engines.vllm.memory import (
    GATHERED_REPLICAS,
    gathered_replicas,
    vllm_dispatch_bytes_per_token,
    vllm_moe_workspace_per_token,
)
from constraints.facts import ModelSpec
from constraints.facts.memory import GIB, coefficients
from constraints.schema import options
from constraints.shared.rules.memory import capacity, checked_layout, excess

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "models"
CODER = "qwen3-coder-480b-a35b-fp8"
# the two log lines of the recipes pull request (GiB of KV available a GPU)
LOGGED_KV = {0.90: 48.66, 0.95: 55.65}
LOGGED_MEMORY = (LOGGED_KV[0.95] - LOGGED_KV[0.90]) / 0.05  # 139.8 GiB
LOGGED_NON_KV = 0.90 * LOGGED_MEMORY - LOGGED_KV[0.90]  # 77.16 GiB


def config(name: str) -> dict:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return data


def facts(name: str, **values: object) -> dict[str, object]:
    defaults = {s.path: s.default for s in options()}
    return {**defaults, **ModelSpec.from_hf_config(config(name)).facts(), **values}


def test_the_log_gives_the_gpu_and_the_non_kv_memory():
    assert LOGGED_MEMORY == pytest.approx(139.8, abs=0.05)
    assert LOGGED_NON_KV == pytest.approx(77.16, abs=0.05)


def test_every_replicas_tokens_reach_the_moe_layers():
    base = facts(CODER)
    moe = vllm_moe_workspace_per_token(base)
    dispatch = vllm_dispatch_bytes_per_token(base)
    # 16-bit rows of max(I, H) and max(2 I, H) per top-k expert; the gathered input: the
    # hidden state (16 bits), top-k weights and ids (4 bytes each)
    assert moe == 2 * 8 * (6144 + 6144)
    assert dispatch == 2 * 6144 + 8 * 8
    one = coefficients({**base, "vllm_config.data_parallel_size": 1}, "vllm")
    eight = coefficients({**base, "vllm_config.data_parallel_size": 8}, "vllm")
    assert one.act_per_token == coefficients(base, "vllm").act_per_token
    assert eight.act_per_token - one.act_per_token == 8 * (moe + dispatch) - moe
    assert eight.act_per_sequence == one.act_per_sequence
    assert eight.act_fixed == one.act_fixed


def test_a_dense_model_gathers_nothing():
    base = facts("llama-3.1-8b")
    one = coefficients(base, "vllm")
    eight = coefficients({**base, "vllm_config.data_parallel_size": 8}, "vllm")
    assert vllm_dispatch_bytes_per_token(base) == 0
    assert eight == one


def test_the_rule_case_counts_the_replicas_at_the_top_of_its_range():
    base = facts(CODER, **{"device.count": 8, "device.nodes": 1})
    for dp, shards, gathered in ((1, 1, 1), (3, 3, 3), (8, 8, 8)):
        checked = checked_layout({**base, "vllm_config.data_parallel_size": dp}, "vllm")
        assert checked["vllm_config.data_parallel_size"] == shards
        assert gathered_replicas(checked) == checked[GATHERED_REPLICAS] == gathered
    # 16 GPUs: 9-15 replicas share the experts as 9 and gather the tokens of 15
    wide = {**base, "device.count": 8, "device.nodes": 2, "vllm_config.data_parallel_size": 12}
    checked = checked_layout(wide, "vllm")
    assert (checked["vllm_config.data_parallel_size"], checked[GATHERED_REPLICAS]) == (9, 15)


def _per_gpu(config_: dict) -> float:
    """GiB of weights and workspace one GPU holds under vLLM 0.33's terms, as check_vllm
    resolves the launch (its defaults: 8192 batched tokens, 1024 sequences)."""
    verdict = check_vllm(config_, model=config(CODER), device="H200", gpus=8, profile="vllm-0.33")
    assert verdict.verdict == "accept", verdict.reasons
    held = capacity(verdict.resolution.values, "vllm")
    return (held.weights + held.activations) / GIB


def test_dp8_ep_is_no_longer_more_optimistic_than_the_log():
    # the recipe's layout at a context that fits, so that the launch solves
    ours = _per_gpu(
        {"data-parallel-size": 8, "enable-expert-parallel": True, "max-model-len": 4096}
    )
    # vLLM 0.24 and 0.33 size the fused-MoE workspace for all 8 x 8192 gathered tokens
    # where 0.10.1, which logged the figure, chunked it at 32768 (VLLM_FUSED_MOE_CHUNK_SIZE,
    # fused_moe.py fused_experts_impl): at or above the log, by at most 10%
    assert LOGGED_NON_KV <= ours <= 1.10 * LOGGED_NON_KV, ours


def test_the_other_terms_match_the_log_with_0_10_1s_moe_workspace():
    """The weights, sampler rows and base workspace of the model, with the MoE terms of
    the release that logged the figure (vLLM 0.10.1.1, read from its wheel): every
    replica's hidden states and router logits gathered (16-bit; naive all2all backend,
    all2all.py dispatch), the output for all of them, and fused_experts_impl's caches for
    min(tokens, 32768) tokens: max(2 I, H) + I 16-bit elements per top-k expert."""
    run = {"data-parallel-size": 8, "enable-expert-parallel": True, "max-model-len": 4096}
    verdict = check_vllm(run, model=config(CODER), device="H200", gpus=8, profile="vllm-0.33")
    values = {**verdict.resolution.values, "model.vllm_cudagraph_bytes": 0}  # captured later
    plain = {**values, GATHERED_REPLICAS: 1}
    held = capacity(plain, "vllm")
    tokens, h, inter, topk, experts = 8 * 8192, 6144, 2560, 8, 160
    ours_moe = vllm_moe_workspace_per_token(values) * values["build_config.max_num_tokens"]
    v0101_moe = (
        min(tokens, 32768) * topk * (max(2 * inter, h) + inter) * 2
        + tokens * (2 * h + 2 * experts)  # gathered hidden states and router logits
        + tokens * 2 * h  # the MoE output for every gathered token
    )
    v0101 = (held.weights + held.activations - ours_moe + v0101_moe) / GIB
    assert v0101 == pytest.approx(LOGGED_NON_KV, rel=0.02), v0101


def _printed_sum(text: str) -> tuple[float, float]:
    """(weights + workspace + KV, the budget) as a vLLM memory note prints them, in GiB."""
    found = re.search(r" = ([\d.]+) GiB (>|<=) [\d.]+ GiB x [\d.]+ = ([\d.]+) GiB", text)
    assert found, text
    return float(found[1]), float(found[3])


@settings(max_examples=8, deadline=None)
@given(
    dp=st.sampled_from([2, 3, 4, 6, 8]),
    tokens=st.sampled_from([2048, 8192, 16384]),
    utilization=st.sampled_from([0.8, 0.9, 0.95]),
    length=st.sampled_from([32768, 131072, 262144]),
)
def test_a_dp_moe_verdict_reads_as_its_printed_numbers(dp, tokens, utilization, length):
    # near where the 480B model stops fitting 8 H200 under DP + EP: a memory refusal prints
    # a sum over its budget, and an accepted launch fits at the layout the rule checks
    run = {
        "data-parallel-size": dp,
        "enable-expert-parallel": True,
        "max-num-batched-tokens": tokens,
        "gpu-memory-utilization": utilization,
        "max-model-len": length,
    }
    verdict = check_vllm(run, model=config(CODER), device="H200", gpus=8, profile="vllm-0.33")
    assert verdict.verdict in ("accept", "adjust", "reject"), verdict
    if verdict.resolution is not None:
        # what was solved (a kept default that does not fit was dropped: vLLM refuses,
        # and the reason names the value that would hold) fits at the checked layout
        assert excess(verdict.resolution.values, "vllm") <= 0
    if verdict.conflict is not None:
        notes = [n.text for c in verdict.conflict.explanation.conflicts for n in c.numbers]
        memory = [t for t in notes if "KV of" in t]
        assert memory or "memory.fits-one-sequence" not in verdict.rules, notes
        for text in memory:
            need, budget = _printed_sum(text)
            assert need > budget, text


def test_the_dp_moe_edge_is_reached():
    # the property above is not vacuous: the full context at 0.9 is refused with a
    # printed sum over its budget, a 32K context at 0.95 accepted
    full = {"data-parallel-size": 8, "enable-expert-parallel": True, "max-model-len": 262144}
    refused = check_vllm(full, model=config(CODER), device="H200", gpus=8, profile="vllm-0.33")
    assert refused.verdict == "reject" and "memory.fits-one-sequence" in refused.rules
    notes = [n.text for c in refused.conflict.explanation.conflicts for n in c.numbers]
    printed = [_printed_sum(t) for t in notes if "KV of" in t]
    assert printed and all(need > budget for need, budget in printed), notes
    short = {**full, "max-model-len": 32768, "gpu-memory-utilization": 0.95}
    kept = check_vllm(short, model=config(CODER), device="H200", gpus=8, profile="vllm-0.33")
    assert kept.verdict == "accept", kept.reasons
