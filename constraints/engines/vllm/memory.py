"""vLLM's memory terms: `gpu_memory_utilization` of the whole device holds the weights, the
profiled peak of a dummy run and the CUDA graphs, and the KV cache takes the rest
(vllm/v1/worker/gpu_worker.py `Worker.determine_available_memory`, v0.33.0).

The workspace is what vLLM 0.33's profile run (gpu_model_runner.py `profile_run`) holds
at its peak: the engine-neutral per-token estimate plus the fused-MoE workspace per token
(`vllm_moe_workspace_per_token`), for the tokens of every data-parallel replica under
`--data-parallel-size` (`gathered_replicas`: the MoE input is all-gathered over the DP
group, with its own copy of the hidden states, `vllm_dispatch_bytes_per_token`), its
sampler's rows per sequence
(`VLLM_SAMPLER_BYTES_PER_VOCAB` x vocab) and `model.vllm_cudagraph_bytes`, the CUDA-graph
estimate the vllm dialect works out for the capture sizes
(arbiter/engines/vllm/defaults.py cudagraph_memory). The extra layers of an uneven
pipeline split go to the stages before the last (get_pp_indices,
vllm/distributed/utils.py, v0.33.0); data-parallel replicas share the routed experts
(`expert_shards`); MXFP4 experts are padded to the MoE kernel's tiles (`vllm_padded`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...facts.memory import (
    ARBITER_FIXED_BYTES,
    VLLM_DP,
    VLLM_SAMPLER_BYTES_PER_VOCAB,
    Coefficients,
    MemoryTerms,
    WeightParts,
    estimate_coefficients,
    expert_shards,
    fact,
    gathered_replicas,
    vllm_dispatch_bytes_per_token,
    vllm_moe_workspace_per_token,
    vllm_padded,
)

EP = "vllm_config.enable_expert_parallel"


class VllmMemoryTerms(MemoryTerms):
    """vLLM 0.33: the whole device x gpu_memory_utilization."""

    name = "vllm"
    engine = "vllm"
    layouts = "experts-over-dp"
    layout_path = VLLM_DP
    # `--data-parallel-size` engine replicas of tp x pp GPUs each
    # (ParallelConfig.world_size_across_dp; rule machine.vllm-dp-replicas-fit-devices)
    replicas_path = VLLM_DP
    replicas_rule = "machine.vllm-dp-replicas-fit-devices"
    source = "vllm-project/vllm vllm/v1/worker/gpu_worker.py determine_available_memory v0.33.0"

    def coefficients(self, facts: Mapping[str, Any]) -> Coefficients:
        base = estimate_coefficients(facts)
        vocab = int(fact(facts, "model.vocab_size"))
        graphs = int(facts.get("model.vllm_cudagraph_bytes") or 0)
        moe = vllm_moe_workspace_per_token(facts)
        # every replica's batched tokens reach each rank's MoE layers under DP (0.33.0
        # and 0.24.0: all-gather dispatch, workspaces sized for all of them, unchunked)
        replicas = gathered_replicas(facts) if moe else 1
        if replicas > 1:
            moe = replicas * (moe + vllm_dispatch_bytes_per_token(facts))
        return Coefficients(
            base.act_per_token + moe,
            VLLM_SAMPLER_BYTES_PER_VOCAB * vocab,
            ARBITER_FIXED_BYTES + graphs,
            0,
        )

    def stage_layers(self, layers: int, pp: int) -> tuple[int, ...]:
        pp = max(1, pp)
        base, extra = divmod(layers, pp)
        counts = [base] * pp
        for i in range(2, extra + 2):
            counts[-i] += 1
        return tuple(counts)

    def padded(
        self, parts: WeightParts, facts: Mapping[str, Any], partitions: Iterable[int]
    ) -> WeightParts:
        return vllm_padded(parts, facts, partitions)

    def expert_partitions(self, values: Mapping[str, Any], tp: int) -> tuple[int, ...]:
        # expert parallelism keeps each expert whole; without it the tp x dp ranks of the
        # MoE group split every expert's intermediate size
        return (1,) if values.get(EP) else (tp * expert_shards(values),)


TERMS = VllmMemoryTerms()
