"""The GPUs a layout needs, per engine: SGLang's data-parallel replicas count (tp x pp x dp
GPUs), its attention data parallelism does not (dp lives inside the tp ranks); the other
engines' GPU-count rules do not read SGLang's dp_size."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, arbitrate
from arbiter.dialects import machine_claims, sglang
from constraints.facts import DeviceSpec
from constraints.profiles import get_profile
from constraints.rules import rules_for

RULE = "machine.sglang-dp-replicas-fit-devices"


def solve_sglang(device: DeviceSpec, config: dict | None = None, serve_args: str = ""):
    parsed = sglang.read(config or {}, serve_args=serve_args or None)
    claims = [*parsed.claims, *machine_claims(None, device)]
    return arbitrate(claims, profile=parsed.profile)


def conflict_rules(device: DeviceSpec, config: dict) -> set[str]:
    with pytest.raises(ConflictError) as err:
        solve_sglang(device, config)
    return {rule for c in err.value.conflicts for rule in c.rules}


def test_data_parallel_replicas_are_gpus_of_their_own():
    # sgl-project/sglang docs: "--dp 2 --tp 2 ... uses 4 GPUs in total"
    r = solve_sglang(DeviceSpec.named("4xH100"), {"tp_size": 2, "dp_size": 2})
    assert r.value("sglang_config.dp_size") == 2
    assert r.value("parallel_config.tensor_parallel_size") == 2
    assert RULE in conflict_rules(DeviceSpec.named("2xH100"), {"tp_size": 2, "dp_size": 2})
    # one replica of tp 2 fits 2 GPUs: the rule counts replicas, not a fixed multiple
    assert solve_sglang(DeviceSpec.named("2xH100"), {"tp_size": 2, "dp_size": 1})


def test_pipeline_stages_and_nodes_count_in_every_replica():
    layout = {"tp_size": 2, "pp_size": 2, "dp_size": 2}  # 8 GPUs
    assert RULE in conflict_rules(DeviceSpec.named("4xH100"), layout)
    r = solve_sglang(DeviceSpec.named("8xH100"), layout)
    assert r.value("parallel_config.pipeline_parallel_size") == 2
    assert r.value("sglang_config.dp_size") == 2
    # SGLang 0.5.23 runs DP replicas on one node only (check_server_args)
    two_nodes = DeviceSpec.named("H100", count=4, nodes=2)
    assert "sglang.dp-replicas-single-node" in conflict_rules(two_nodes, layout)


def test_attention_data_parallelism_lives_inside_the_tensor_parallel_ranks():
    # --dp-size 4 --enable-dp-attention: SGLang reads it as attn_dp_size 4, dp_size 1
    r = solve_sglang(
        DeviceSpec.named("4xH100"), serve_args="--tp-size 4 --dp-size 4 --enable-dp-attention"
    )
    assert r.value("sglang_config.attn_dp_size") == 4
    assert r.value("sglang_config.dp_size") == 1
    assert r.value("device.count") == 4
    r = solve_sglang(DeviceSpec.named("8xH100"), {"tp_size": 8, "attn_dp_size": 8})
    assert r.value("sglang_config.attn_dp_size") == 8


def test_the_rule_is_sglangs_alone():
    ids = {
        name: {r.id for r in rules_for(get_profile(name))}
        for name in ("sglang-0.5", "vllm-0.33", "trtllm-1.2", "mlc")
    }
    assert RULE in ids["sglang-0.5"]
    assert all(RULE not in ids[name] for name in ("vllm-0.33", "trtllm-1.2", "mlc"))
    assert "machine.parallel-fits-devices" in ids["sglang-0.5"]


# vLLM: every data-parallel rank is an engine of its own with tp x pp GPUs
# (vllm/config/parallel.py ParallelConfig.world_size_across_dp, v0.33.0)
VLLM_RULE = "machine.vllm-dp-replicas-fit-devices"


def test_vllm_data_parallel_replicas_need_gpus_of_their_own():
    from arbiter.dialects.vllm import check_vllm

    layout = {"tensor-parallel-size": 4, "data-parallel-size": 2}
    refused = check_vllm(layout, device="H100-80GB", gpus=4)
    assert refused.verdict == "reject"
    assert VLLM_RULE in refused.rules
    served = check_vllm(layout, device="H100-80GB", gpus=8)
    assert served.verdict == "accept", served.reasons


def test_vllm_data_parallel_beyond_the_exact_cases_is_still_counted():
    from arbiter.dialects.vllm import check_vllm

    # 100 replicas of one GPU: checked as at least 65 GPUs, so 64 GPUs refuse it
    refused = check_vllm({"data-parallel-size": 100}, device="H100-80GB", gpus=64)
    assert refused.verdict == "reject"
    assert VLLM_RULE in refused.rules
    assert check_vllm({"data-parallel-size": 100}, device="H100-80GB", gpus=100).verdict == "accept"


def test_vllm_rule_is_only_in_the_vllm_profile():
    for name in ("trtllm-1.2", "sglang-0.5", "mlc"):
        assert VLLM_RULE not in {r.id for r in rules_for(get_profile(name))}
    assert VLLM_RULE in {r.id for r in rules_for(get_profile("vllm-0.33"))}
