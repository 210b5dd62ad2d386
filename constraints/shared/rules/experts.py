"""Expert parallelism against tensor parallelism and the GPUs there are, per engine.

`parallel_config.moe_expert_parallel_used` is the number of expert-parallel ranks an
engine uses (given, or derived by the dialect); `moe_tensor_parallel_used` the ranks each
expert is split over. How they relate to the tensor-parallel size and to the machine
differs by engine:

- TensorRT-LLM (`tensorrt_llm/mapping.py`): the MoE grid is the tensor-parallel group,
  moe_tp x moe_ep x moe_cluster == tp_size (`moe.grid-equals-tensor-parallel` in
  torch_llm_args.py); the world is tp x pp (x cp) ranks, so the expert ranks fit the GPUs
  through `machine.parallel-fits-devices`. No rule of its own here.
- vLLM (`vllm/model_executor/layers/fused_moe/config.py`, `FusedMoEParallelConfig.make`,
  read at vllm-project/vllm@00c1c6a2): with `--enable-expert-parallel` the tensor-parallel
  ranks of every data-parallel replica are flattened into one expert group,
  ep_size = dp_size x tp_size, one device per rank, and no expert is split (moe tp 1).
  That tie to vLLM's own options (`experts.vllm-expert-ranks-are-tensor-times-data-ranks`)
  reads `vllm_config`, so it is in vLLM's pack (constraints/engines/vllm/rules/parallel.py).
  The expert group therefore counts GPUs of its own (data-parallel replicas are GPUs too):
  `experts.vllm-expert-ranks-fit-devices`, and it is a whole number of tensor-parallel
  groups: `experts.vllm-expert-ranks-span-tensor-groups`.
- SGLang (`docs/advanced_features/expert_parallelism.md`, read at sgl-project/sglang@
  03f83cae; `moe_tp_size = tp_size // moe_ep_size` in `python/sglang/srt/distributed/
  parallel_state.py`): `--ep-size` partitions the tensor-parallel ranks into expert groups
  (ep_size == tp_size with DeepEP/Mooncake, ep_size < tp_size for hybrid EP+TP), so
  ep x moe_tp == tp: `experts.sglang-expert-ranks-divide-tensor-ranks`. SGLang's world is
  tp x pp ranks, so the GPU count follows from `machine.parallel-fits-devices`.
"""

from __future__ import annotations

from constraints.expr import Cmp, Prod, all_of, eq, gt, implies, one_of, ref
from constraints.paths import MODEL
from constraints.rules.base import Rule, Scope, Source

P = "parallel_config."
TP, PP = P + "tensor_parallel_size", P + "pipeline_parallel_size"
EP_USED, MTP_USED = P + "moe_expert_parallel_used", P + "moe_tensor_parallel_used"
COUNT, NODES = "device.count", "device.nodes"
EXPERTS = MODEL.num_experts
MAX_RANKS = 64  # the schema's bound on every parallel size

VLLM_MOE = Source(
    "vLLM",
    "vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make",
    "ep_size = dp_size x tp_size when enable_expert_parallel (vllm-project/vllm@00c1c6a2)",
    "0.x",
)
SGLANG_EP = Source(
    "SGLang",
    "docs/advanced_features/expert_parallelism.md; python/sglang/srt/distributed/parallel_state.py",
    "ep_size partitions the tp ranks; moe_tp_size = tp_size // ep_size (sgl-project/sglang@03f83cae)",
    "0.5",
)


def _multiple_of_tp() -> list:
    """For each tensor-parallel size t: the expert ranks are a multiple of t."""
    return [
        implies(eq(TP, t), one_of(EP_USED, list(range(t, MAX_RANKS + 1, t))))
        for t in range(2, MAX_RANKS + 1)
    ]


RULES = [
    Rule(
        id="experts.vllm-expert-ranks-fit-devices",
        text="vLLM: expert-parallel ranks (tensor x data-parallel ranks, one GPU each) times pipeline stages must fit the GPUs there are (device.count per node x device.nodes)",
        source=VLLM_MOE,
        scope=Scope(engine="vllm"),
        expr=Cmp(Prod(ref(COUNT), ref(NODES)), ">=", Prod(ref(EP_USED), ref(PP))),
        feasible={COUNT: 8, NODES: 2, EP_USED: 16, PP: 1},
        infeasible={COUNT: 8, NODES: 1, EP_USED: 16, PP: 1},
    ),
    Rule(
        id="experts.vllm-expert-ranks-span-tensor-groups",
        text="vLLM: with expert parallelism the expert group is data_parallel_size whole tensor-parallel groups (a multiple of tensor_parallel_size) and no expert is split (moe tensor parallel 1)",
        source=VLLM_MOE,
        scope=Scope(engine="vllm"),
        expr=implies(gt(EP_USED, 1), all_of(eq(MTP_USED, 1), *_multiple_of_tp())),
        feasible={TP: 4, EP_USED: 8, MTP_USED: 1},
        infeasible={TP: 4, EP_USED: 6, MTP_USED: 1},
    ),
    Rule(
        id="experts.sglang-expert-ranks-divide-tensor-ranks",
        text="SGLang: for a MoE model, ep_size partitions the tensor-parallel ranks: ep_size x moe tensor-parallel size == tp_size (ep_size divides tp_size)",
        source=SGLANG_EP,
        scope=Scope(engine="sglang"),
        expr=implies(gt(EXPERTS, 1), eq(ref(MTP_USED) * ref(EP_USED), ref(TP))),
        feasible={EXPERTS: 64, TP: 8, EP_USED: 4, MTP_USED: 2},
        infeasible={EXPERTS: 64, TP: 8, EP_USED: 3, MTP_USED: 2},
    ),
]

__all__ = ["RULES"]
