"""vLLM's own rules (0.33 line), on its option surface as the `vllm` dialect maps it: one
module per topic (`ORDER`), and here the paths, scope and source helpers they share.

Every rule is re-authored from vLLM 0.33.0's code (vllm-project/vllm, tag v0.33.0, read
from the installed wheel) and scoped `Scope("vllm", since="0.24")`: vLLM 0.24.0's own code
gives the same verdicts on them (`benchmarks/oracle_vllm.py generate` in a 0.24.0 venv,
600 recorded argument sets in `tests/corpus/vllm/oracle/generated-0.24-*.json`, replayed by
`benchmarks/oracle_agreement.py`); a rule whose behaviour differs by release carries its
own scope. Options with a shared
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

from constraints.expr import Expr, all_of, any_of, eq, ge, gt, implies, one_of
from constraints.paths import (
    BUILD_CONFIG,
    KV_CACHE_CONFIG,
    MODEL,
    PARALLEL_CONFIG,
    RUNTIME_CONFIG,
    SCHEDULER_CONFIG,
    SPECULATIVE_CONFIG,
)
from constraints.rules.base import Scope, Source
from constraints.schema import fact_defaults

from ..schema import VLLM_CONFIG

# the pack's scope: rules read from vLLM 0.33.0 that 0.24.0 does not share, or that were
# not compared with it (new options, the model runners' split, kernel and method lists);
# BOTH: the same check in both wheels' code, read side by side (vllm-project/vllm v0.24.0
# and v0.33.0); UNTIL_0_24: 0.24.0's own form of a check that 0.33 changed
# (constraints/engines/vllm/rules/release_0_24.py)
SCOPE = Scope("vllm", since="0.33")
BOTH = Scope("vllm", since="0.24")
UNTIL_0_24 = Scope("vllm", since="0.24", until="0.24")
ORDER = (
    "scheduler",
    "prefix_caching",
    "model",
    "parallel",
    "lora",
    "speculative",
    "quantization",
    "device",
    "sampling",
    "runner",
    "cudagraph",
    "release_0_24",
)
RELEASE = "0.33.0"
RELEASE_0_24 = "0.24.0"

BUDGET = BUILD_CONFIG.max_num_tokens
SEQS = BUILD_CONFIG.max_batch_size
LEN = BUILD_CONFIG.max_seq_len
DRAFT = BUILD_CONFIG.max_draft_len
CHUNKED = SCHEDULER_CONFIG.enable_chunked_context
TP = PARALLEL_CONFIG.tensor_parallel_size
DCP = VLLM_CONFIG.decode_context_parallel_size
PCP = VLLM_CONFIG.prefill_context_parallel_size
DP = VLLM_CONFIG.data_parallel_size
EP = VLLM_CONFIG.enable_expert_parallel
EPLB = VLLM_CONFIG.enable_eplb
TYPE = SPECULATIVE_CONFIG.decoding_type
LORA = RUNTIME_CONFIG.enable_lora
REUSE = KV_CACHE_CONFIG.enable_block_reuse  # vLLM's enable_prefix_caching
MAMBA_BLOCK = VLLM_CONFIG.mamba_block_size
HEADS = MODEL.num_attention_heads
KV_HEADS = MODEL.num_kv_heads
MLA = MODEL.kv_replicated
EXPERTS = MODEL.num_experts
EAGLE3 = SPECULATIVE_CONFIG.eagle3
EAGLE3_TARGET = VLLM_CONFIG.eagle3_target
MTP_LAYERS = MODEL.mtp_layers
MTP_TARGET = VLLM_CONFIG.mtp_target
RUNNER_V1 = VLLM_CONFIG.model_runner_v1
VOCAB_DIFFERS = VLLM_CONFIG.draft_vocab_differs
HETERO = VLLM_CONFIG.use_heterogeneous_vocab
DRAFT_SAMPLE = VLLM_CONFIG.draft_sample_method
LOCAL_ARGMAX = VLLM_CONFIG.use_local_argmax_reduction
SPECULATIVE = "vllm/config/speculative.py"
MAX_DRAFT = 1024  # the schema's bound on build_config.max_draft_len
GRAPH_MAX = VLLM_CONFIG.max_cudagraph_capture_size
EAGER = VLLM_CONFIG.enforce_eager
PP = PARALLEL_CONFIG.pipeline_parallel_size
ASYNC = VLLM_CONFIG.async_scheduling
METHOD = VLLM_CONFIG.speculative_method
PADDED_OFF = VLLM_CONFIG.disable_padded_drafter_batch
ADAPTIVE = VLLM_CONFIG.enable_adaptive_verification
LM_HEAD_QUANT = VLLM_CONFIG.draft_lm_head_quantization
SHARDED_SAMPLING = VLLM_CONFIG.enable_batch_sharded_sampling
VLLM_CONFIG_PY = "vllm/config/vllm.py"
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
QUANT_WRITTEN = VLLM_CONFIG.quantization_method
CHECKPOINT_QUANT = VLLM_CONFIG.checkpoint_quant_method
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
DRAFT_HEADS = MODEL.vllm_draft_heads
DRAFT_TP = VLLM_CONFIG.draft_tensor_parallel_size


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


def both(file: str, where: str) -> Source:
    """A check both releases make alike: the file and function in each."""
    return Source("vLLM", file, where, f"{RELEASE_0_24}, {RELEASE}")


def src_0_24(file: str, where: str) -> Source:
    return Source("vLLM", file, where, RELEASE_0_24)


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
