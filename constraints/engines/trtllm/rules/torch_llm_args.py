"""Rules of TensorRT-LLM's 1.x LLM API that the field lists alone do not say: CUDA graph
sizes, the MoE parallel grid and expert placement, attention-DP balancing, which decoding
types each backend runs, and the TensorRT backend's KV dtype.

Each rule is scoped to the engine, backend and releases whose source it was read from
(`arbiter/engines/trtllm/fields-<release>.yaml` names the llm_args.py versions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.expr import Expr, all_of, any_of, eq, ge, gt, implies, le, one_of, ref
from constraints.paths import BUILD_CONFIG, SPECULATIVE_CONFIG
from constraints.rules.base import Computed, Rule, Scope, Source


def llm_args(ref: str, version: str = "1.2") -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/llmapi/llm_args.py", ref, version)


MAPPING = Source(
    "TensorRT-LLM", "tensorrt_llm/mapping.py Mapping.__init__", "moe_world_size checks", "1.x"
)
FUSED_MOE = Source(
    "TensorRT-LLM",
    "tensorrt_llm/_torch/modules/fused_moe/interface.py MoE.__init__",
    "no load balancer: num_experts % ep_size == 0",
    "1.x",
)

# the 1.0 recipe's MoE backend support matrix (B200/GB200 with an FP8 checkpoint:
# DEEPGEMM) and "the default moe backend is CUTLASS, so for the combination which is not
# supported by CUTLASS, one must set the moe_config.backend explicitly"
MOE_MATRIX = Source(
    "TensorRT-LLM",
    "docs/source/deployment-guide/quick-start-recipe-for-deepseek-r1-on-trtllm.md "
    "(MoE Backend Support Matrix)",
    "0d2a785611268f394ce467cc43d372b04a55a2ba (release:1.0.0rc6 container)",
    "1.0",
)

PYTORCH_10 = Scope(engine="trtllm", backends=("pytorch",), since="1.0", until="1.0")
PYTORCH_12 = Scope(engine="trtllm", backends=("pytorch",), since="1.2")
PYTORCH = Scope(engine="trtllm", backends=("pytorch",), since="1.0")
TENSORRT = Scope(engine="trtllm", backends=("tensorrt",), since="1.0")
TRTLLM = Scope(engine="trtllm", since="1.0")

CG = "cuda_graph_config."
P = "parallel_config."
TP, EP, MTP, CLUSTER = (
    P + "tensor_parallel_size",
    P + "moe_expert_parallel_size",
    P + "moe_tensor_parallel_size",
    P + "moe_cluster_parallel_size",
)
EP_USED, MTP_USED = P + "moe_expert_parallel_used", P + "moe_tensor_parallel_used"
TYPE = SPECULATIVE_CONFIG.decoding_type
DRAFT = BUILD_CONFIG.max_draft_len
ADP = "attention_dp_config."
MAX_RANKS = 64  # the schema's bound on every parallel size

# decoding types by backend (supports_backend of each decoding config, llm_args.py 1.0-1.2)


def _experts_rule(facts: Mapping[str, Any]) -> Expr:
    experts = int(facts.get("model.num_experts", 0) or 0)
    if experts <= 1:  # a dense model: no experts to place
        return all_of()
    allowed = [d for d in range(1, MAX_RANKS + 1) if experts % d == 0]
    return implies(eq("moe_config.load_balancer", False), one_of(EP_USED, allowed))


SINGLE_CLUSTER = le(CLUSTER, 1)

RULES = [
    Rule(
        id="cuda-graph.max-batch-size-matches-batch-sizes",
        text="cuda_graph_config: when batch_sizes and max_batch_size are both given, max_batch_size must equal max(batch_sizes)",
        source=llm_args("T60 BaseCudaGraphConfig validator"),
        scope=PYTORCH_12,
        expr=implies(
            all_of(gt(CG + "batch_sizes_max", 0), gt(CG + "max_batch_size", 0)),
            eq(ref(CG + "max_batch_size"), ref(CG + "batch_sizes_max")),
        ),
        feasible={CG + "batch_sizes_max": 64, CG + "max_batch_size": 64},
        infeasible={CG + "batch_sizes_max": 64, CG + "max_batch_size": 128},
    ),
    Rule(
        id="moe.grid-equals-tensor-parallel",
        text="given MoE sizes: moe tensor x expert x cluster parallel sizes must multiply to tensor_parallel_size (a size not given is derived from the others; cluster > 1 needs expert parallelism 1)",
        source=MAPPING,
        scope=TRTLLM,
        expr=implies(
            any_of(gt(EP, 0), gt(MTP, 0), gt(CLUSTER, 0)),
            all_of(
                implies(gt(EP, 0), eq(ref(EP_USED), ref(EP))),
                implies(gt(MTP, 0), eq(ref(MTP_USED), ref(MTP))),
                implies(all_of(eq(EP, 0), eq(MTP, 0)), eq(EP_USED, 1)),
                implies(SINGLE_CLUSTER, eq(ref(MTP_USED) * ref(EP_USED), ref(TP))),
                implies(
                    gt(CLUSTER, 1),
                    all_of(eq(EP_USED, 1), eq(ref(MTP_USED) * ref(CLUSTER), ref(TP))),
                ),
            ),
        ),
        feasible={TP: 8, EP: 4, MTP: 2},
        infeasible={TP: 8, EP: 3, MTP: 0, CLUSTER: 1},
    ),
    Rule(
        id="moe.experts-divisible-by-expert-parallel",
        text="without a load balancer, the model's expert count must be a multiple of the expert-parallel ranks",
        source=FUSED_MOE,
        scope=PYTORCH,
        expr=Computed(
            "model.num_experts % moe_expert_parallel_used == 0",
            _experts_rule,
            frozenset({"model.num_experts", EP_USED, "moe_config.load_balancer"}),
        ),
        feasible={"model.num_experts": 64, EP_USED: 8},
        infeasible={"model.num_experts": 60, EP_USED: 8, "moe_config.load_balancer": False},
    ),
    Rule(
        id="attention-dp.balance-needs-nonnegative-waits",
        text="attention_dp_config.enable_balance needs timeout_iters >= 0 and batching_wait_iters >= 0",
        source=llm_args("AttentionDpConfig.validate_attention_dp_config"),
        scope=PYTORCH_12,
        expr=implies(
            eq(ADP + "enable_balance", True),
            all_of(ge(ADP + "timeout_iters", 0), ge(ADP + "batching_wait_iters", 0)),
        ),
        feasible={ADP + "enable_balance": True, ADP + "timeout_iters": 0},
        infeasible={ADP + "enable_balance": True, ADP + "timeout_iters": -1},
    ),
    Rule(
        id="speculative.ngram-needs-draft-and-pattern-lengths",
        text="NGram decoding needs max_draft_len > 0 and max_matching_ngram_size > 0",
        source=llm_args("T48 NGramDecodingConfig validator", "1.0-1.2"),
        scope=TRTLLM,
        expr=implies(
            eq(TYPE, "NGram"),
            all_of(gt(DRAFT, 0), gt("speculative_config.max_matching_ngram_size", 0)),
        ),
        feasible={TYPE: "NGram", DRAFT: 4},
        infeasible={TYPE: "NGram", DRAFT: 0, "speculative_config.max_matching_ngram_size": 2},
    ),
    Rule(
        id="speculative.pard-needs-draft-len",
        text="PARD decoding needs max_draft_len > 0",
        source=llm_args("T48 TorchLlmArgs.validate_speculative_config"),
        scope=PYTORCH_12,
        expr=implies(eq(TYPE, "PARD"), gt(DRAFT, 0)),
        feasible={TYPE: "PARD", DRAFT: 3},
        infeasible={TYPE: "PARD", DRAFT: 0},
    ),
    Rule(
        id="kv.tensorrt-backend-dtype-auto",
        text="TensorRT engines take kv_cache_config.dtype auto only (the KV type is built in)",
        source=llm_args("T52 TrtLlmArgs.validate_kv_cache_dtype", "1.0-1.2"),
        scope=TENSORRT,
        expr=eq("kv_cache_config.dtype", "auto"),
        feasible={"kv_cache_config.dtype": "auto"},
        infeasible={"kv_cache_config.dtype": "fp8"},
    ),
    Rule(
        id="moe.fp8-block-scales-not-cutlass-on-blackwell",
        text="an MoE model with FP8 block-scale weights on Blackwell (sm 100-119) cannot run the CUTLASS MoE backend (1.0's default); DEEPGEMM is the supported one",
        source=MOE_MATRIX,
        scope=PYTORCH_10,
        expr=implies(
            all_of(
                gt("model.num_experts", 1),
                eq("quant_config.quant_algo", "FP8_BLOCK_SCALES"),
                ge("device.sm", 100),
                le("device.sm", 119),
            ),
            ~eq("moe_config.backend", "CUTLASS"),
        ),
        feasible={
            "model.num_experts": 256,
            "quant_config.quant_algo": "FP8_BLOCK_SCALES",
            "device.sm": 100,
            "moe_config.backend": "DEEPGEMM",
        },
        infeasible={
            "model.num_experts": 256,
            "quant_config.quant_algo": "FP8_BLOCK_SCALES",
            "device.sm": 100,
            "moe_config.backend": "CUTLASS",
        },
    ),
]
