"""vLLM's expert-parallel group (tp x dp ranks with --enable-expert-parallel) reaches the
GPU-count rules: a group larger than the GPUs is refused, one that fits is accepted."""

from __future__ import annotations

from pathlib import Path

from arbiter.engines.vllm.native import check_vllm

MIXTRAL = Path(__file__).parents[3] / "fixtures" / "models" / "mixtral-8x7b.json"
EP = {"tensor-parallel-size": 8, "data-parallel-size": 2, "enable-expert-parallel": True}


def test_an_expert_group_larger_than_the_gpus_is_refused():
    verdict = check_vllm(EP, model=MIXTRAL, device="H100-80GB", gpus=8)
    assert verdict.verdict == "reject"
    # tp 8 x dp 2 is 16 GPUs both as the expert group and as data-parallel replicas;
    # the minimal conflict names one of the two GPU-count rules
    assert {
        "experts.vllm-expert-ranks-fit-devices",
        "machine.vllm-dp-replicas-fit-devices",
    } & set(verdict.rules)


def test_an_expert_group_that_fits_is_accepted_with_tp_x_dp_ranks():
    verdict = check_vllm(EP, model=MIXTRAL, device="H100-80GB", gpus=16)
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("parallel_config.moe_expert_parallel_used") == 16


def test_without_expert_parallel_there_is_one_expert_rank():
    verdict = check_vllm({"tensor-parallel-size": 4}, model=MIXTRAL, device="H100-80GB", gpus=4)
    assert verdict.verdict == "accept", verdict.reasons
    assert verdict.resolution.value("parallel_config.moe_expert_parallel_used") == 1
