"""vLLM 0.33's rules on the parallel layout (tensor, pipeline, data, context and expert
parallelism), and the vLLM-only rules that apply the shared arithmetic of
`constraints.shared.rules` (data-parallel replicas on the GPUs, the expert group) to vLLM's
own options."""

from __future__ import annotations

from constraints.expr import all_of, any_of, eq, gt, implies, ref
from constraints.rules.base import Computed, Rule, Scope, Source
from constraints.shared.rules.experts import EP_USED, MTP_USED, VLLM_MOE
from constraints.shared.rules.memory import COUNT, NODES, replicas_fit

from ..schema import VLLM_CONFIG
from . import (
    BOTH,
    DCP,
    DP,
    EP,
    EPLB,
    EXPERTS,
    HEADS,
    KV_HEADS,
    MLA,
    PARALLEL,
    PCP,
    PP,
    RUNNER_V1,
    SCOPE,
    TP,
    _dcp_divides_tp,
    _dcp_sizes,
    both,
    src,
)

RULES = [
    Rule(
        id="vllm.parallel.dcp-divides-tp",
        text="tensor_parallel_size must be divisible by decode_context_parallel_size"
        " (prefill context parallelism off)",
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
        expr=implies(eq(PCP, 1), _dcp_divides_tp()),
        feasible={TP: 4, DCP: 2, PCP: 1},
        infeasible={TP: 4, DCP: 3, PCP: 1},
    ),
    Rule(
        id="vllm.parallel.dcp-within-kv-heads",
        text="decode context parallelism on a GQA/MQA model needs tensor_parallel_size above"
        " the KV heads, decode_context_parallel_size at most tp // kv_heads, and the query"
        " heads per KV head divisible by it",
        source=both("vllm/config/model.py", "ModelConfig.verify_with_parallel_config"),
        scope=BOTH,
        expr=Computed(
            "decode_context_parallel_size fits the KV heads",
            _dcp_sizes,
            frozenset({TP, DCP, HEADS, KV_HEADS, MLA}),
        ),
        feasible={HEADS: 32, KV_HEADS: 8, TP: 16, DCP: 2},
        infeasible={HEADS: 32, KV_HEADS: 8, TP: 8, DCP: 2},
    ),
    Rule(
        id="vllm.parallel.dcp-with-pcp",
        text="with prefill context parallelism, decode_context_parallel_size must be 1, the"
        " prefill context parallel size, or tensor x prefill context parallel size",
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
        expr=implies(
            gt(PCP, 1),
            any_of(eq(DCP, 1), eq(ref(DCP), ref(PCP)), eq(ref(DCP), ref(TP) * ref(PCP))),
        ),
        feasible={TP: 2, PCP: 2, DCP: 4},
        infeasible={TP: 4, PCP: 2, DCP: 4},
    ),
    Rule(
        id="vllm.parallel.pcp-needs-model-runner-v2",
        text="prefill context parallelism runs only on vLLM's V2 model runner: a feature"
        " that makes vLLM fall back to V1 (suffix or custom-class speculation, EAGLE"
        " parallel drafting, a heterogeneous-vocabulary draft, dual batch overlap, PP with"
        " external_launcher) refuses it",
        source=src(
            "vllm/config/vllm.py",
            "VllmConfig.use_v2_model_runner, _get_v2_model_runner_unsupported_features,"
            " _validate_v1_model_runner",
        ),
        scope=SCOPE,
        expr=implies(gt(PCP, 1), eq(RUNNER_V1, False)),
        feasible={PCP: 2, RUNNER_V1: False},
        infeasible={PCP: 2, RUNNER_V1: True},
    ),
    Rule(
        id="vllm.parallel.eplb-needs-expert-parallel",
        text="expert-parallel load balancing (enable_eplb) needs enable_expert_parallel",
        source=both(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=BOTH,
        expr=implies(eq(EPLB, True), eq(EP, True)),
        feasible={EPLB: True, EP: True},
        infeasible={EPLB: True, EP: False},
    ),
    Rule(
        id="vllm.parallel.eplb-needs-several-ranks",
        text="EPLB needs tensor, prefill-context or data parallelism (TP x PCP x DP > 1)",
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
        expr=implies(eq(EPLB, True), any_of(gt(TP, 1), gt(PCP, 1), gt(DP, 1))),
        feasible={EPLB: True, TP: 2, PCP: 1, DP: 1},
        infeasible={EPLB: True, TP: 1, PCP: 1, DP: 1},
    ),
    Rule(
        id="vllm.parallel.redundant-experts-need-eplb",
        text="eplb_config.num_redundant_experts needs enable_eplb",
        source=both(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=BOTH,
        expr=implies(gt(VLLM_CONFIG.num_redundant_experts, 0), eq(EPLB, True)),
        feasible={VLLM_CONFIG.num_redundant_experts: 8, EPLB: True},
        infeasible={VLLM_CONFIG.num_redundant_experts: 8, EPLB: False},
    ),
    Rule(
        id="vllm.parallel.expert-parallel-needs-moe",
        text="enable_expert_parallel needs a mixture-of-experts model (more than one routed"
        " expert)",
        source=both(
            "vllm/config/model.py",
            "ModelConfig.verify_with_parallel_config -> _verify_with_expert_parallelism",
        ),
        scope=BOTH,
        expr=implies(eq(EP, True), gt(EXPERTS, 1)),
        feasible={EP: True, EXPERTS: 8},
        infeasible={EP: True, EXPERTS: 1},
    ),
    Rule(
        id="vllm.parallel.numa-lists-need-bind",
        text="numa_bind_nodes and numa_bind_cpus require numa_bind",
        source=both(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=BOTH,
        expr=implies(eq(VLLM_CONFIG.numa_bind_lists, True), eq(VLLM_CONFIG.numa_bind, True)),
        feasible={VLLM_CONFIG.numa_bind_lists: True, VLLM_CONFIG.numa_bind: True},
        infeasible={VLLM_CONFIG.numa_bind_lists: True, VLLM_CONFIG.numa_bind: False},
    ),
    # the rules below apply shared arithmetic to vLLM's own options (vllm_config), so they
    # live in this pack rather than in constraints/shared/rules (which reads no pack's
    # section); their scope is the whole vllm engine, as it was there
    Rule(
        id="machine.vllm-dp-replicas-fit-devices",
        text="vLLM: data_parallel_size engine replicas of tensor_parallel_size x pipeline_parallel_size GPUs each must fit the GPUs there are (tp x pp x dp <= device.count x device.nodes)",
        source=Source(
            "vLLM",
            "vllm/config/parallel.py ParallelConfig.world_size_across_dp"
            " (world_size x data_parallel_size, world_size = pp x tp x pcp: one GPU per rank)",
            "v0.33.0",
            "0.33.0",
        ),
        scope=Scope(engine="vllm"),
        expr=all_of(*replicas_fit(DP)),
        feasible={COUNT: 8, NODES: 1, TP: 4, PP: 1, DP: 2},
        infeasible={COUNT: 4, NODES: 1, TP: 4, PP: 1, DP: 2},
    ),
    Rule(
        id="experts.vllm-expert-ranks-are-tensor-times-data-ranks",
        text="vLLM: with --enable-expert-parallel the expert-parallel group is every tensor- and data-parallel rank (ep = tp x dp, experts unsplit); without it there is no expert parallelism",
        source=VLLM_MOE,
        scope=Scope(engine="vllm"),
        expr=all_of(
            implies(
                eq(EP, True),
                all_of(eq(ref(EP_USED), ref(TP) * ref(DP)), eq(MTP_USED, 1)),
            ),
            implies(eq(EP, False), eq(EP_USED, 1)),
        ),
        feasible={EP: True, TP: 4, DP: 2, EP_USED: 8, MTP_USED: 1},
        infeasible={EP: True, TP: 4, DP: 2, EP_USED: 4, MTP_USED: 1},
    ),
]
