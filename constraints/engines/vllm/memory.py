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
(`VllmMemoryTerms.expert_shards`, over `VLLM_DP`); MXFP4 experts are padded to the MoE
kernel's tiles (`vllm_padded`, mxfp4.py), at the intermediate-size shares a layout can
have on the machine (`vllm_expert_partitions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...facts.memory import (
    ARBITER_FIXED_BYTES,
    Coefficients,
    MemoryTerms,
    WeightParts,
    estimate_coefficients,
    fact,
)
from .mxfp4 import vllm_padded

VLLM_DP = "vllm_config.data_parallel_size"
EP = "vllm_config.enable_expert_parallel"

# vLLM 0.33's dummy sampler run (gpu_model_runner.py _dummy_sampler_run, one row per
# sequence, max_num_seqs rows, top-k and top-p on): the logits in the model's dtype
# (compute_logits, 2 bytes), the float32 copy Sampler.forward samples from (4), the
# softmax probabilities (4) and the exponential noise of random_sample (4), per
# vocabulary entry; top-k/top-p mask in place (topk_topp_triton.py, one row per SM)
VLLM_SAMPLER_BYTES_PER_VOCAB = 14


def vllm_moe_workspace_per_token(facts: Mapping[str, Any]) -> int:
    """Bytes per batched token of vLLM's fused-MoE workspaces (16-bit): each token's
    top-k expert rows of max(I, H) and max(2 I, H) elements (TritonExperts.workspace_shapes,
    vllm/model_executor/layers/fused_moe/experts/triton_moe.py, v0.33.0; the MXFP4 Triton
    experts of gpt_oss_triton_kernels_moe.py hold I and 2 I per row); 0 for a dense model.
    Not divided over tensor-parallel ranks (H is whole on every rank): an upper bound."""
    inter = int(fact(facts, "model.moe_intermediate_size"))
    if not inter:
        return 0
    h = int(fact(facts, "model.hidden_size"))
    topk = int(fact(facts, "model.experts_per_token"))
    return 2 * topk * (max(inter, h) + max(2 * inter, h))


# The data-parallel replicas whose batched tokens one rank's MoE layers take in at once:
# vLLM 0.24 and 0.33 dispatch a MoE layer's input under --data-parallel-size > 1 (with or
# without --enable-expert-parallel) by all-gathering every replica's tokens over the
# data-parallel group (the default all2all_backend "allgather_reducescatter",
# vllm/config/parallel.py; AgRsAll2AllManager.dispatch, vllm/distributed/
# device_communicators/all2all.py; MoEPrepareAndFinalizeNaiveDPEPModular.prepare,
# fused_moe/prepare_finalize/naive_dp_ep.py), and the modular kernel sizes its workspaces
# for all of them, unchunked (FusedMoEKernel._allocate_buffers(M_full, M_full),
# fused_moe/modular_kernel.py). The profile run gives every replica max_num_batched_tokens
# (gpu_model_runner.py profile_run -> _dummy_run(max_num_tokens), coordinated across DP).
# Read at v0.33.0 and v0.24.0 (the same code in both). `GATHERED_REPLICAS` overrides the
# data-parallel size where the memory rule counts the workspace at another size than the
# weights (shared/rules/memory.py `fits` and `checked_layout`, through
# `VllmMemoryTerms.gathering`).
GATHERED_REPLICAS = "memory.gathered_replicas"


def gathered_replicas(values: Mapping[str, Any]) -> int:
    """The data-parallel replicas whose tokens one rank's vLLM MoE layers gather:
    `GATHERED_REPLICAS` when given, else `--data-parallel-size` (1 without DP)."""
    given = values.get(GATHERED_REPLICAS)
    return max(1, int(given if given is not None else (values.get(VLLM_DP) or 1)))


def vllm_dispatch_bytes_per_token(facts: Mapping[str, Any]) -> int:
    """Bytes per gathered token of the MoE input vLLM all-gathers under data parallelism
    (naive_dp_ep.py prepare, v0.33.0): the hidden state (counted in 16 bits, an upper
    bound: a block-FP8 checkpoint dispatches 1 byte an element plus a float32 scale per
    128), the top-k weights (float32) and the top-k expert ids (int32); 0 for a dense model."""
    if not int(fact(facts, "model.moe_intermediate_size")):
        return 0
    h = int(fact(facts, "model.hidden_size"))
    return 2 * h + 8 * int(fact(facts, "model.experts_per_token"))


def vllm_expert_partitions(facts: Mapping[str, Any]) -> tuple[int, ...]:
    """The tensor-parallel shares of an expert's intermediate size a vLLM layout can
    have on the machine: tp x dp up to its GPUs (up to 64 when they are not given), 1
    with expert parallelism."""
    gpus = (
        int(facts["device.count"]) * int(facts["device.nodes"])
        if "device.count" in facts and "device.nodes" in facts
        else 64
    )
    return tuple(range(1, max(1, gpus) + 1))


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

    def expert_shards(self, values: Mapping[str, Any]) -> int:
        """vLLM: the MoE layers of all `--data-parallel-size` replicas form one group of
        tp x dp ranks, tensor-parallel without `--enable-expert-parallel` and
        expert-parallel with it (`FusedMoEParallelConfig.make` with
        `flatten_tp_across_dp_and_pcp`, vllm/model_executor/layers/fused_moe/config.py,
        v0.33.0), so each GPU holds 1 / (tp x dp) of the experts either way, while the
        rest of the model is whole in every replica."""
        return max(1, int(values.get(VLLM_DP) or 1))

    def gathering(self, values: Mapping[str, Any], replicas: int) -> dict[str, Any]:
        """`values` with the MoE layers gathering the tokens of `replicas` data-parallel
        replicas (`GATHERED_REPLICAS`, read by `gathered_replicas`)."""
        return {**values, GATHERED_REPLICAS: replicas}

    def padded(
        self, parts: WeightParts, facts: Mapping[str, Any], partitions: Iterable[int]
    ) -> WeightParts:
        return vllm_padded(parts, facts, partitions)

    def expert_partitions(self, values: Mapping[str, Any], tp: int) -> tuple[int, ...]:
        # expert parallelism keeps each expert whole; without it the tp x dp ranks of the
        # MoE group split every expert's intermediate size
        return (1,) if values.get(EP) else (tp * self.expert_shards(values),)

    def layout_partitions(self, facts: Mapping[str, Any]) -> tuple[int, ...]:
        return vllm_expert_partitions(facts)


TERMS = VllmMemoryTerms()
