"""vLLM's own rules (0.33 line), on its option surface as the `vllm` dialect maps it.

Every rule is re-authored from vLLM 0.33.0's code (vllm-project/vllm, tag v0.33.0, read
from the installed wheel) and scoped `Scope("vllm", since="0.33")`. Options with a shared
meaning use the shared paths (`build_config.max_num_tokens` is vLLM's
`max_num_batched_tokens`, `build_config.max_batch_size` its `max_num_seqs`,
`build_config.max_seq_len` its `max_model_len`, `build_config.max_draft_len` its
`num_speculative_tokens`, `scheduler_config.enable_chunked_context` its
`enable_chunked_prefill`); the rest live in `vllm_config`.

Hard rules are what vLLM refuses with an error. What vLLM adjusts without an error
(CUDA-graph sizes) are default rules: they give way to an explicit value, and the
dialect reports "vLLM would change X to Y because ...".

Rules in scope for vLLM that are not in this module: `parallel.heads-divisible-by-tp`
(vLLM's `ModelConfig.verify_with_parallel_config`), the memory rules and
`machine.parallel-fits-devices`, and vLLM's compatibility-matrix pairs (`pairs.v29.*`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.expr import Expr, Prod, all_of, any_of, eq, ge, gt, implies, le, ne, one_of, ref
from constraints.rules.base import Computed, Rule, Scope, Source
from constraints.schema import fact_defaults

SCOPE = Scope("vllm", since="0.33")
RELEASE = "0.33.0"

B = "build_config."
V = "vllm_config."
BUDGET = B + "max_num_tokens"
SEQS = B + "max_batch_size"
LEN = B + "max_seq_len"
DRAFT = B + "max_draft_len"
CHUNKED = "scheduler_config.enable_chunked_context"
TP = "parallel_config.tensor_parallel_size"
DCP = V + "decode_context_parallel_size"
PCP = V + "prefill_context_parallel_size"
DP = V + "data_parallel_size"
EP = V + "enable_expert_parallel"
EPLB = V + "enable_eplb"
TYPE = "speculative_config.decoding_type"
LORA = "runtime_config.enable_lora"
REUSE = "kv_cache_config.enable_block_reuse"  # vLLM's enable_prefix_caching
MAMBA_BLOCK = V + "mamba_block_size"
HEADS = "model.num_attention_heads"
KV_HEADS = "model.num_kv_heads"
MLA = "model.kv_replicated"
EXPERTS = "model.num_experts"
EAGLE3 = "speculative_config.eagle3"
EAGLE3_TARGET = V + "eagle3_target"
MTP_LAYERS = "model.mtp_layers"
MTP_TARGET = V + "mtp_target"
RUNNER_V1 = V + "model_runner_v1"
VOCAB_DIFFERS = V + "draft_vocab_differs"
HETERO = V + "use_heterogeneous_vocab"
DRAFT_SAMPLE = V + "draft_sample_method"
LOCAL_ARGMAX = V + "use_local_argmax_reduction"
SPECULATIVE = "vllm/config/speculative.py"
MAX_DRAFT = 1024  # the schema's bound on build_config.max_draft_len
GRAPH_MAX = V + "max_cudagraph_capture_size"
EAGER = V + "enforce_eager"
PP = "parallel_config.pipeline_parallel_size"
ASYNC = V + "async_scheduling"
METHOD = V + "speculative_method"
PADDED_OFF = V + "disable_padded_drafter_batch"
ADAPTIVE = V + "enable_adaptive_verification"
LM_HEAD_QUANT = V + "draft_lm_head_quantization"
SHARDED_SAMPLING = V + "enable_batch_sharded_sampling"
VLLM_CONFIG = "vllm/config/vllm.py"
# VllmConfig.__post_init__ (async scheduling): the methods the V1 model runner schedules
# asynchronously: EagleModelTypes (eagle, eagle3, extract_hidden_states, the MTP types,
# dflash), NgramGPUTypes (ngram_gpu), draft_model and dspark; "none": no speculation
V1_ASYNC_METHODS = (
    "none",
    "eagle",
    "eagle3",
    "extract_hidden_states",
    "mtp",
    "dflash",
    "ngram_gpu",
    "draft_model",
    "dspark",
)
# SpeculativeConfig._verify_args: the methods whose lm_head a draft may quantize
LM_HEAD_QUANT_METHODS = ("eagle", "eagle3", "mtp")
QUANT_WRITTEN = V + "quantization_method"
CHECKPOINT_QUANT = V + "checkpoint_quant_method"
# ModelConfig._verify_quantization (vllm/config/model.py, v0.33.0): the --quantization
# values a checkpoint's quant_method takes: its own, or an override method whose
# override_quantization_method claims it (auto_gptq for gptq, gptq_marlin, auto_gptq;
# auto_awq on a GPU for awq, awq_marlin, auto_awq; moe_wna16 when asked for, on a 4-bit
# AWQ or 4/8-bit GPTQ checkpoint; humming whenever asked for)
CHECKPOINT_ACCEPTS: dict[str, tuple[str, ...]] = {
    "fp8": ("fp8", "humming"),
    "fbgemm_fp8": ("fbgemm_fp8", "humming"),
    "awq": ("awq", "auto_awq", "awq_marlin", "moe_wna16", "humming"),
    "gptq": ("gptq", "auto_gptq", "gptq_marlin", "moe_wna16", "humming"),
    "compressed-tensors": ("compressed-tensors", "humming"),
}
# the methods vLLM applies to an unquantized checkpoint when it loads it (online); every
# other method reads the checkpoint's quantization config (model_loader/weight_utils.py
# get_quant_config: "Cannot find the config file for ...")
ONLINE_QUANT = (
    "fp8",
    "online",
    "fp8_per_tensor",
    "fp8_per_block",
    "fp8_per_channel",
    "int8_per_channel_weight_only",
    "nvfp4_per_token",
    "mxfp8",
    "experts_int8",
    "torchao",
    "inc",
)
DRAFT_HEADS = "model.vllm_draft_heads"
DRAFT_TP = V + "draft_tensor_parallel_size"


def _draft_heads_divisible(facts: Mapping[str, Any]) -> Expr:
    """The draft's TP (draft_tensor_parallel_size, or the target's TP when it is 0, not
    given) one of the divisors of the draft's heads (none known: no limit)."""
    heads = int(_fact(facts, DRAFT_HEADS))
    if heads <= 0:
        return ge(DRAFT_TP, 0)
    divisors = [t for t in range(1, 65) if heads % t == 0]
    return any_of(all_of(eq(DRAFT_TP, 0), one_of(TP, divisors)), one_of(DRAFT_TP, divisors))


# LoRAConfig.max_lora_rank: MaxLoRARanks (vllm/config/lora.py)
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def src(file: str, where: str) -> Source:
    return Source("vLLM", file, where, RELEASE)


SCHEDULER = "vllm/config/scheduler.py"
PARALLEL = "vllm/config/parallel.py"


def _fact(facts: Mapping[str, Any], path: str) -> Any:

    value = facts.get(path)
    return value if value is not None else fact_defaults()[path]


def _dcp_sizes(facts: Mapping[str, Any]) -> Expr:
    """(tp, dcp) pairs vLLM takes for a GQA/MQA model: tp above the KV heads, dcp at most
    tp // kv_heads, and the query heads per KV head divisible by dcp (MLA: no limit)."""
    if bool(_fact(facts, MLA)):
        return ge(DCP, 1)  # MLA: the latent KV is not split by heads
    heads, kv = int(_fact(facts, HEADS)), int(_fact(facts, KV_HEADS))
    q_per_kv = heads // kv if kv else 0
    cases = []
    for tp in range(kv + 1, 65):
        sizes = [d for d in range(2, tp // kv + 1) if q_per_kv and q_per_kv % d == 0]
        if sizes:
            cases.append(all_of(eq(TP, tp), one_of(DCP, sizes)))
    return implies(gt(DCP, 1), any_of(*cases) if cases else eq(DCP, 1))


def _mtp_tokens(facts: Mapping[str, Any]) -> Expr:
    """k <= n, or k a multiple of n, for the model's n MTP layers (none known: no limit)."""
    n = int(_fact(facts, MTP_LAYERS))
    if n <= 1:
        return ge(DRAFT, 0)
    return implies(
        eq(TYPE, "MTP"), one_of(DRAFT, [k for k in range(MAX_DRAFT + 1) if k <= n or k % n == 0])
    )


def _dcp_divides_tp() -> Expr:
    return all_of(
        *(implies(eq(DCP, d), one_of(TP, [t for t in range(d, 65, d)])) for d in range(2, 65))
    )


RULES = [
    # ---------------------------------------------------------------- scheduler budgets
    Rule(
        id="vllm.scheduler.budget-holds-seqs",
        text="max_num_batched_tokens must be at least max_num_seqs (one token per sequence)",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=ge(BUDGET, ref(SEQS)),
        feasible={BUDGET: 256, SEQS: 256},
        infeasible={BUDGET: 128, SEQS: 256},
    ),
    Rule(
        id="vllm.scheduler.budget-holds-model-len-without-chunking",
        text="with chunked prefill off, max_num_batched_tokens must be at least max_model_len",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=implies(eq(CHUNKED, False), ge(BUDGET, ref(LEN))),
        feasible={CHUNKED: True, BUDGET: 2048, LEN: 8192},
        infeasible={CHUNKED: False, BUDGET: 2048, LEN: 8192},
    ),
    Rule(
        id="vllm.scheduler.active-seqs-within-seqs",
        text="max_num_active_seqs cannot be greater than max_num_seqs",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=le(V + "max_num_active_seqs", ref(SEQS)),
        feasible={V + "max_num_active_seqs": 64, SEQS: 64},
        infeasible={V + "max_num_active_seqs": 128, SEQS: 64},
    ),
    Rule(
        id="vllm.scheduler.long-prefill-within-model-len",
        text="long_prefill_token_threshold cannot be greater than max_model_len",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=le(V + "long_prefill_token_threshold", ref(LEN)),
        feasible={V + "long_prefill_token_threshold": 4096, LEN: 4096},
        infeasible={V + "long_prefill_token_threshold": 8192, LEN: 4096},
    ),
    # ---------------------------------------------------------------- prefix caching
    Rule(
        id="vllm.cache.mamba-block-size-needs-prefix-caching",
        text="mamba_block_size can only be set with enable_prefix_caching (a value equal to"
        " max_model_len counts as unset)",
        source=src("vllm/config/vllm.py", "VllmConfig.validate_mamba_block_size"),
        scope=SCOPE,
        expr=implies(all_of(gt(MAMBA_BLOCK, 0), ne(ref(MAMBA_BLOCK), ref(LEN))), eq(REUSE, True)),
        feasible={MAMBA_BLOCK: 256, LEN: 8192, REUSE: True},
        infeasible={MAMBA_BLOCK: 256, LEN: 8192, REUSE: False},
    ),
    # ---------------------------------------------------------------- model
    Rule(
        id="vllm.model.len-within-positions",
        text="max_model_len cannot exceed the model's max_position_embeddings"
        " (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)",
        source=src("vllm/config/model.py", "ModelConfig.get_and_verify_max_len"),
        scope=SCOPE,
        expr=le(LEN, ref("model.max_position_embeddings")),
        feasible={LEN: 131072, "model.max_position_embeddings": 131072},
        infeasible={LEN: 262144, "model.max_position_embeddings": 131072},
    ),
    # ---------------------------------------------------------------- parallelism
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
        source=src("vllm/config/model.py", "ModelConfig.verify_with_parallel_config"),
        scope=SCOPE,
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
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
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
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
        expr=implies(gt(V + "num_redundant_experts", 0), eq(EPLB, True)),
        feasible={V + "num_redundant_experts": 8, EPLB: True},
        infeasible={V + "num_redundant_experts": 8, EPLB: False},
    ),
    Rule(
        id="vllm.parallel.expert-parallel-needs-moe",
        text="enable_expert_parallel needs a mixture-of-experts model (more than one routed"
        " expert)",
        source=src(
            "vllm/config/model.py",
            "ModelConfig.verify_with_parallel_config -> _verify_with_expert_parallelism",
        ),
        scope=SCOPE,
        expr=implies(eq(EP, True), gt(EXPERTS, 1)),
        feasible={EP: True, EXPERTS: 8},
        infeasible={EP: True, EXPERTS: 1},
    ),
    Rule(
        id="vllm.parallel.numa-lists-need-bind",
        text="numa_bind_nodes and numa_bind_cpus require numa_bind",
        source=src(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=SCOPE,
        expr=implies(eq(V + "numa_bind_lists", True), eq(V + "numa_bind", True)),
        feasible={V + "numa_bind_lists": True, V + "numa_bind": True},
        infeasible={V + "numa_bind_lists": True, V + "numa_bind": False},
    ),
    # ---------------------------------------------------------------- LoRA
    Rule(
        id="vllm.lora.cpu-cache-holds-batch",
        text="max_cpu_loras must be at least max_loras",
        source=src("vllm/config/lora.py", "LoRAConfig._validate_lora_config"),
        scope=SCOPE,
        expr=implies(
            eq(LORA, True),
            any_of(eq(V + "max_cpu_loras", 0), ge(V + "max_cpu_loras", ref(V + "max_loras"))),
        ),
        feasible={LORA: True, V + "max_loras": 4, V + "max_cpu_loras": 4},
        infeasible={LORA: True, V + "max_loras": 4, V + "max_cpu_loras": 2},
    ),
    Rule(
        id="vllm.lora.rank-allowed",
        text="max_lora_rank must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512",
        source=src("vllm/config/lora.py", "LoRAConfig.max_lora_rank (MaxLoRARanks)"),
        scope=SCOPE,
        expr=one_of(V + "max_lora_rank", LORA_RANKS),
        feasible={V + "max_lora_rank": 64},
        infeasible={V + "max_lora_rank": 48},
    ),
    Rule(
        id="vllm.lora.budget-holds-speculative-tokens",
        text="with LoRA and speculative decoding, max_num_batched_tokens must hold"
        " max_num_seqs x (num_speculative_tokens + 1)",
        source=src("vllm/engine/arg_utils.py", "EngineArgs.create_engine_config"),
        scope=SCOPE,
        expr=implies(
            all_of(eq(LORA, True), ne(TYPE, "none")),
            ge(ref(BUDGET), Prod(ref(SEQS), ref(DRAFT) + 1)),
        ),
        feasible={LORA: True, TYPE: "NGram", SEQS: 256, DRAFT: 4, BUDGET: 1280},
        infeasible={LORA: True, TYPE: "NGram", SEQS: 256, DRAFT: 4, BUDGET: 1024},
    ),
    # ---------------------------------------------------------------- speculative
    Rule(
        id="vllm.spec.ngram-bounds",
        text="for ngram speculation prompt_lookup_min must be at most prompt_lookup_max",
        source=src("vllm/config/speculative.py", "SpeculativeConfig.__post_init__ (ngram)"),
        scope=SCOPE,
        expr=implies(
            eq(TYPE, "NGram"),
            le(V + "prompt_lookup_min", ref("speculative_config.max_matching_ngram_size")),
        ),
        feasible={
            TYPE: "NGram",
            V + "prompt_lookup_min": 2,
            "speculative_config.max_matching_ngram_size": 4,
        },
        infeasible={
            TYPE: "NGram",
            V + "prompt_lookup_min": 4,
            "speculative_config.max_matching_ngram_size": 2,
        },
    ),
    Rule(
        id="vllm.spec.draft-tp-one-or-target",
        text="draft_tensor_parallel_size must be 1 or the target's tensor_parallel_size",
        source=src(
            "vllm/config/speculative.py",
            "SpeculativeConfig._verify_and_get_draft_tp",
        ),
        scope=SCOPE,
        expr=any_of(
            one_of(V + "draft_tensor_parallel_size", (0, 1)),
            all_of(
                ge(V + "draft_tensor_parallel_size", ref(TP)),
                le(V + "draft_tensor_parallel_size", ref(TP)),
            ),
        ),
        feasible={V + "draft_tensor_parallel_size": 1, TP: 4},
        infeasible={V + "draft_tensor_parallel_size": 2, TP: 4},
    ),
    Rule(
        id="vllm.spec.eagle3-target-supported",
        text="EAGLE-3 needs a target model whose architecture implements vLLM's EAGLE-3"
        " interface (auxiliary hidden states; vllm_eagle3.EAGLE3_TARGETS)",
        source=src(
            "vllm/v1/worker/gpu_model_runner.py",
            "GPUModelRunner._setup_eagle3_aux_hidden_state_outputs (supports_eagle3,"
            " model_executor/models/interfaces.py SupportsEagle3)",
        ),
        scope=SCOPE,
        expr=implies(all_of(eq(TYPE, "Eagle"), eq(EAGLE3, True)), eq(EAGLE3_TARGET, True)),
        feasible={TYPE: "Eagle", EAGLE3: True, EAGLE3_TARGET: True},
        infeasible={TYPE: "Eagle", EAGLE3: True, EAGLE3_TARGET: False},
    ),
    Rule(
        id="vllm.spec.mtp-target-supported",
        text="MTP speculation needs a target family vLLM drafts MTP from (its model type or"
        " architecture maps to an MTP draft; vllm_mtp.FAMILIES)",
        source=src(
            "vllm/config/speculative.py",
            "SpeculativeConfig.hf_config_override and __post_init__ (MTPModelTypes)",
        ),
        scope=SCOPE,
        expr=implies(eq(TYPE, "MTP"), eq(MTP_TARGET, True)),
        feasible={TYPE: "MTP", MTP_TARGET: True},
        infeasible={TYPE: "MTP", MTP_TARGET: False},
    ),
    Rule(
        id="vllm.spec.mtp-tokens-multiple-of-layers",
        text="MTP: num_speculative_tokens above the model's MTP layers (n_predict ="
        " num_nextn_predict_layers) must be a multiple of them",
        source=src("vllm/config/speculative.py", "SpeculativeConfig.__post_init__ (n_predict)"),
        scope=SCOPE,
        expr=Computed(
            "num_speculative_tokens fits the MTP layers",
            _mtp_tokens,
            frozenset({TYPE, DRAFT, MTP_LAYERS}),
        ),
        feasible={TYPE: "MTP", MTP_LAYERS: 2, DRAFT: 4},
        infeasible={TYPE: "MTP", MTP_LAYERS: 2, DRAFT: 3},
    ),
    Rule(
        id="vllm.spec.draft-vocab-matches-target",
        text="a draft model (method draft_model) must have the target's vocab_size unless"
        " speculative_config.use_heterogeneous_vocab is set",
        source=src(
            SPECULATIVE,
            "SpeculativeConfig._verify_args -> verify_equal_vocab_size_if_draft_model",
        ),
        scope=SCOPE,
        expr=implies(all_of(eq(TYPE, "DraftTarget"), eq(HETERO, False)), eq(VOCAB_DIFFERS, False)),
        feasible={TYPE: "DraftTarget", HETERO: True, VOCAB_DIFFERS: True},
        infeasible={TYPE: "DraftTarget", HETERO: False, VOCAB_DIFFERS: True},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-needs-draft-model",
        text="use_heterogeneous_vocab only works with method draft_model",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(TYPE, "DraftTarget")),
        feasible={HETERO: True, TYPE: "DraftTarget"},
        infeasible={HETERO: True, TYPE: "NGram"},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-greedy",
        text="use_heterogeneous_vocab supports only greedy draft sampling"
        " (draft_sample_method greedy)",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(DRAFT_SAMPLE, "greedy")),
        feasible={HETERO: True, DRAFT_SAMPLE: "greedy"},
        infeasible={HETERO: True, DRAFT_SAMPLE: "probabilistic"},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-full-logits",
        text="use_heterogeneous_vocab is not compatible with use_local_argmax_reduction"
        " (the token-level intersection needs the full draft logits)",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(LOCAL_ARGMAX, False)),
        feasible={HETERO: True, LOCAL_ARGMAX: False},
        infeasible={HETERO: True, LOCAL_ARGMAX: True},
    ),
    Rule(
        id="vllm.spec.tokens-given",
        text="speculative decoding needs num_speculative_tokens (at least 1)",
        source=src("vllm/config/speculative.py", "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(ne(TYPE, "none"), ge(DRAFT, 1)),
        feasible={TYPE: "NGram", DRAFT: 3},
        infeasible={TYPE: "NGram", DRAFT: 0},
    ),
    Rule(
        id="vllm.spec.draft-heads-divisible-by-draft-tp",
        text="a draft model's attention heads must be divisible by its tensor-parallel size"
        " (draft_tensor_parallel_size, by default the target's)",
        source=src(
            SPECULATIVE,
            "SpeculativeConfig.__post_init__ -> draft_model_config.verify_with_parallel_config"
            " (ModelConfig.verify_with_parallel_config)",
        ),
        scope=SCOPE,
        expr=Computed(
            "the draft's TP divides its heads",
            _draft_heads_divisible,
            frozenset({DRAFT_HEADS, DRAFT_TP, TP}),
        ),
        feasible={DRAFT_HEADS: 14, DRAFT_TP: 0, TP: 2},
        infeasible={DRAFT_HEADS: 14, DRAFT_TP: 0, TP: 4},
    ),
    Rule(
        id="vllm.spec.draft-lm-head-quantization-methods",
        text="draft_lm_head_quantization is supported only for methods eagle, eagle3 and mtp",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(LM_HEAD_QUANT, True), one_of(METHOD, LM_HEAD_QUANT_METHODS)),
        feasible={LM_HEAD_QUANT: True, METHOD: "eagle3"},
        infeasible={LM_HEAD_QUANT: True, METHOD: "draft_model"},
    ),
    Rule(
        id="vllm.spec.adaptive-verification-without-lora",
        text="adaptive draft verification (enable_adaptive_verification) is not compatible"
        " with LoRA",
        source=src(VLLM_CONFIG, "VllmConfig._validate_adaptive_verification"),
        scope=SCOPE,
        expr=implies(eq(ADAPTIVE, True), eq(LORA, False)),
        feasible={ADAPTIVE: True, LORA: False},
        infeasible={ADAPTIVE: True, LORA: True},
    ),
    Rule(
        id="vllm.spec.adaptive-verification-without-pp",
        text="adaptive draft verification is not compatible with pipeline parallelism",
        source=src(VLLM_CONFIG, "VllmConfig._validate_adaptive_verification"),
        scope=SCOPE,
        expr=implies(eq(ADAPTIVE, True), eq(PP, 1)),
        feasible={ADAPTIVE: True, PP: 1},
        infeasible={ADAPTIVE: True, PP: 2},
    ),
    # ---------------------------------------------------------------- quantization
    Rule(
        id="vllm.quant.matches-checkpoint",
        text="--quantization must be the checkpoint's quant_method or a method that overrides"
        " it (gptq: gptq, auto_gptq, gptq_marlin, moe_wna16; awq: awq, auto_awq,"
        " awq_marlin, moe_wna16; any: humming)",
        source=src("vllm/config/model.py", "ModelConfig._verify_quantization"),
        scope=SCOPE,
        expr=all_of(
            *(
                implies(
                    all_of(eq(CHECKPOINT_QUANT, ckpt), ne(QUANT_WRITTEN, "none")),
                    one_of(QUANT_WRITTEN, accepts),
                )
                for ckpt, accepts in CHECKPOINT_ACCEPTS.items()
            )
        ),
        feasible={CHECKPOINT_QUANT: "gptq", QUANT_WRITTEN: "gptq_marlin"},
        infeasible={CHECKPOINT_QUANT: "fp8", QUANT_WRITTEN: "gptq"},
    ),
    Rule(
        id="vllm.quant.offline-needs-checkpoint-config",
        text="on a checkpoint without a quantization_config, --quantization must be a method"
        " vLLM applies when loading (fp8, the online fp8/int8/nvfp4/mxfp8 shorthands,"
        " experts_int8, torchao, inc)",
        source=src(
            "vllm/model_executor/model_loader/weight_utils.py",
            "get_quant_config (ModelConfig._verify_quantization keeps the argument)",
        ),
        scope=SCOPE,
        expr=implies(
            all_of(eq(CHECKPOINT_QUANT, "none"), ne(QUANT_WRITTEN, "none")),
            one_of(QUANT_WRITTEN, ONLINE_QUANT),
        ),
        feasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "fp8"},
        infeasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "awq"},
    ),
    # ---------------------------------------------------------------- sampling
    Rule(
        id="vllm.parallel.batch-sharded-sampling-needs-tp",
        text="enable_batch_sharded_sampling needs tensor_parallel_size above 1 (nothing to"
        " shard otherwise)",
        source=src(VLLM_CONFIG, "VllmConfig._validate_batch_sharded_sampling"),
        scope=SCOPE,
        expr=implies(eq(SHARDED_SAMPLING, True), gt(TP, 1)),
        feasible={SHARDED_SAMPLING: True, TP: 2},
        infeasible={SHARDED_SAMPLING: True, TP: 1},
    ),
    Rule(
        id="vllm.parallel.batch-sharded-sampling-seqs-cover-tp",
        text="enable_batch_sharded_sampling needs max_num_seqs at least tensor_parallel_size"
        " (requests go to ranks whole)",
        source=src(VLLM_CONFIG, "VllmConfig._validate_batch_sharded_sampling"),
        scope=SCOPE,
        expr=implies(eq(SHARDED_SAMPLING, True), ge(SEQS, ref(TP))),
        feasible={SHARDED_SAMPLING: True, TP: 4, SEQS: 4},
        infeasible={SHARDED_SAMPLING: True, TP: 4, SEQS: 2},
    ),
    # ---------------------------------------------------------------- V1 model runner
    # vLLM runs its V1 model runner when the arguments ask for what V2 lacks
    # (model_runner_v1, derived by the dialect from VllmConfig.use_v2_model_runner); then
    # it refuses what only V2 serves, and an explicit async_scheduling V1 cannot run
    Rule(
        id="vllm.runner.v1-async-without-pp",
        text="on vLLM's V1 model runner, async scheduling (async_scheduling true) is not"
        " supported with pipeline parallelism",
        source=src(
            VLLM_CONFIG,
            "VllmConfig.__post_init__ (async scheduling), _get_v1_model_runner_unsupported_features",
        ),
        scope=SCOPE,
        expr=implies(all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), eq(PP, 1)),
        feasible={RUNNER_V1: True, ASYNC: True, PP: 1},
        infeasible={RUNNER_V1: True, ASYNC: True, PP: 2},
    ),
    Rule(
        id="vllm.runner.v1-async-speculation-method",
        text="on vLLM's V1 model runner, async scheduling supports only EAGLE, EAGLE-3, MTP,"
        " DFlash, DSpark, ngram_gpu, draft_model and extract_hidden_states speculation (not"
        " ngram, suffix or custom_class)",
        source=src(VLLM_CONFIG, "VllmConfig.__post_init__ (async scheduling)"),
        scope=SCOPE,
        expr=implies(
            all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), one_of(METHOD, V1_ASYNC_METHODS)
        ),
        feasible={RUNNER_V1: True, ASYNC: True, METHOD: "draft_model"},
        infeasible={RUNNER_V1: True, ASYNC: True, METHOD: "ngram"},
    ),
    Rule(
        id="vllm.runner.v1-async-padded-drafter-batch",
        text="on vLLM's V1 model runner, async scheduling is not supported with"
        " disable_padded_drafter_batch",
        source=src(VLLM_CONFIG, "VllmConfig.__post_init__ (async scheduling)"),
        scope=SCOPE,
        expr=implies(all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), eq(PADDED_OFF, False)),
        feasible={RUNNER_V1: True, ASYNC: True, PADDED_OFF: False},
        infeasible={RUNNER_V1: True, ASYNC: True, PADDED_OFF: True},
    ),
    Rule(
        id="vllm.runner.v1-no-dspark",
        text="DSpark speculative decoding runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), ne(METHOD, "dspark")),
        feasible={RUNNER_V1: False, METHOD: "dspark"},
        infeasible={RUNNER_V1: True, METHOD: "dspark"},
    ),
    Rule(
        id="vllm.runner.v1-no-adaptive-verification",
        text="adaptive draft verification runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(ADAPTIVE, False)),
        feasible={RUNNER_V1: False, ADAPTIVE: True},
        infeasible={RUNNER_V1: True, ADAPTIVE: True},
    ),
    Rule(
        id="vllm.runner.v1-no-draft-lm-head-quantization",
        text="draft lm_head quantization runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(LM_HEAD_QUANT, False)),
        feasible={RUNNER_V1: False, LM_HEAD_QUANT: True},
        infeasible={RUNNER_V1: True, LM_HEAD_QUANT: True},
    ),
    Rule(
        id="vllm.runner.v1-no-batch-sharded-sampling",
        text="batch-sharded sampling runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(SHARDED_SAMPLING, False)),
        feasible={RUNNER_V1: False, SHARDED_SAMPLING: True},
        infeasible={RUNNER_V1: True, SHARDED_SAMPLING: True},
    ),
    # ---------------------------------------------------------------- CUDA graphs (adjusted)
    Rule(
        id="vllm.cudagraph.ceiling-within-budget",
        text="the largest CUDA-graph capture size is capped at max_num_batched_tokens",
        source=src("vllm/config/vllm.py", "VllmConfig._set_cudagraph_sizes"),
        scope=SCOPE,
        kind="default",
        expr=le(GRAPH_MAX, ref(BUDGET)),
        feasible={GRAPH_MAX: 2048, BUDGET: 8192},
        infeasible={GRAPH_MAX: 2048, BUDGET: 1024},
    ),
    Rule(
        id="vllm.cudagraph.none-when-eager",
        text="enforce_eager captures no CUDA graphs (a capture size is ignored)",
        source=src("vllm/config/vllm.py", "VllmConfig._set_cudagraph_sizes"),
        scope=SCOPE,
        kind="default",
        expr=implies(eq(EAGER, True), eq(GRAPH_MAX, 0)),
        feasible={EAGER: True, GRAPH_MAX: 0},
        infeasible={EAGER: True, GRAPH_MAX: 512},
    ),
]
