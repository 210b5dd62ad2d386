"""Expert parallelism against tensor parallelism and the machine, per engine: the rules
hold only for their engine and refuse layouts the engine refuses."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, arbitrate, func, setup
from constraints.profiles import PROFILES
from constraints.rules import every_rule, rules_for

P = "parallel_config."


def _rules(engine: str):
    return [r for r in every_rule() if r.kind == "hard" and r.scope.applies(engine)]


def _solve(engine: str, machine: dict, layout: dict):
    claims = [setup("machine", machine), func("layout", layout)]
    return arbitrate(claims, rules=_rules(engine))


def test_each_rule_is_scoped_to_its_engine_and_none_to_tensorrt_llm():
    # the shared pack's, and the one in vLLM's pack (it reads vllm_config)
    engines = {r.id: r.scope.engine for r in every_rule() if r.id.startswith("experts.")}
    assert engines == {
        "experts.vllm-expert-ranks-are-tensor-times-data-ranks": "vllm",
        "experts.vllm-expert-ranks-fit-devices": "vllm",
        "experts.vllm-expert-ranks-span-tensor-groups": "vllm",
        "experts.sglang-expert-ranks-divide-tensor-ranks": "sglang",
    }
    trt_ids = {r.id for p in PROFILES.values() if p.engine == "trtllm" for r in rules_for(p)}
    assert not trt_ids & set(engines)  # TensorRT-LLM's grid rule lives in torch_llm_args


def test_vllm_expert_group_counts_gpus_of_its_own():
    machine = {"device.count": 8, "device.nodes": 1, "model.num_experts": 256}
    # TP 8 x DP 2 with expert parallelism: 16 expert ranks need 16 GPUs
    with pytest.raises(ConflictError) as err:
        _solve("vllm", machine, {P + "tensor_parallel_size": 8, P + "moe_expert_parallel_used": 16})
    # 16 expert ranks are tp 8 x dp 2, so the data-parallel replicas need 16 GPUs too:
    # the minimal conflict names one of the two GPU-count rules
    gpu_rules = {"experts.vllm-expert-ranks-fit-devices", "machine.vllm-dp-replicas-fit-devices"}
    assert any(gpu_rules & set(c.rules) for c in err.value.conflicts)
    two_nodes = {**machine, "device.nodes": 2}
    r = _solve(
        "vllm", two_nodes, {P + "tensor_parallel_size": 8, P + "moe_expert_parallel_used": 16}
    )
    assert r.value(P + "moe_tensor_parallel_used") == 1  # no expert is split under EP
    # an expert group that is not whole tensor-parallel groups
    with pytest.raises(ConflictError):
        _solve(
            "vllm", two_nodes, {P + "tensor_parallel_size": 4, P + "moe_expert_parallel_used": 6}
        )


def test_sglang_expert_ranks_partition_the_tensor_ranks():
    machine = {"device.count": 8, "device.nodes": 1, "model.num_experts": 64}
    r = _solve(
        "sglang", machine, {P + "tensor_parallel_size": 8, P + "moe_expert_parallel_used": 4}
    )
    assert r.value(P + "moe_tensor_parallel_used") == 2  # moe_tp_size = tp_size // ep_size
    with pytest.raises(ConflictError) as err:
        _solve(
            "sglang", machine, {P + "tensor_parallel_size": 8, P + "moe_expert_parallel_used": 3}
        )
    assert any(
        "experts.sglang-expert-ranks-divide-tensor-ranks" in c.rules for c in err.value.conflicts
    )
    # a dense model has no experts to place: the rule says nothing
    dense = {**machine, "model.num_experts": 1}
    assert _solve("sglang", dense, {P + "tensor_parallel_size": 8})
