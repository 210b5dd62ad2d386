"""vLLM's section of the option schema (`vllm_config`): the options only vLLM has, with
their closed sets, composed into `constraints.schema.EngineConfig`. Shared options
(parallel sizes, KV cache, scheduler limits) stay in the shared sections."""

from __future__ import annotations

from typing import Annotated

from ... import paths as _paths
from ...domains import EnumDomain, IntDomain
from ...sections import BOOL, MAX_TOKENS
from ...sections import Section as _Section
from ...sections import opt as _opt

# vLLM 0.33.0 SpeculativeMethod (vllm/config/speculative.py), the MTP model types read as
# "mtp" (SpeculativeConfig.__post_init__); "medusa", no method of 0.33, as the dialect reads it
VLLM_SPECULATIVE_METHODS = (
    "none",
    "ngram",
    "ngram_gpu",
    "draft_model",
    "suffix",
    "custom_class",
    "eagle",
    "eagle3",
    "extract_hidden_states",
    "mtp",
    "dflash",
    "dspark",
    "medusa",
)


# vLLM 0.33.0 QuantizationMethods (vllm/model_executor/layers/quantization/__init__.py);
# "none": --quantization not given
VLLM_QUANTIZATION_METHODS = (
    "none",
    "awq",
    "auto_awq",
    "fp8",
    "fbgemm_fp8",
    "fp_quant",
    "modelopt",
    "modelopt_fp4",
    "modelopt_mxfp8",
    "modelopt_mixed",
    "auto_gptq",
    "gptq",
    "gptq_marlin",
    "awq_marlin",
    "humming",
    "compressed-tensors",
    "experts_int8",
    "quark",
    "moe_wna16",
    "torchao",
    "inc",
    "mxfp4",
    "gpt_oss_mxfp4",
    "deepseek_v4_fp8",
    "online",
    "fp8_per_tensor",
    "fp8_per_block",
    "fp8_per_channel",
    "int8_per_channel_weight_only",
    "nvfp4_per_token",
    "mxfp8",
)
# a checkpoint's quantization_config.quant_method as the model facts read it; "none": no
# quantization_config; "unknown": no model given, or a method the rule does not model
VLLM_CHECKPOINT_QUANT = (
    "unknown",
    "none",
    "fp8",
    "fbgemm_fp8",
    "awq",
    "gptq",
    "compressed-tensors",
)


class VllmConfig(_Section):
    """vLLM options with no shared counterpart (`vllm serve` of 0.33; the shared ones map
    onto the other sections: max_num_seqs -> build_config.max_batch_size, ...). A 0 in a
    count vLLM leaves unset (None) means "not given": vLLM derives it."""

    enforce_eager: Annotated[bool, BOOL] = _opt(False, "No CUDA graphs (eager mode only).")
    max_cudagraph_capture_size: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "Largest CUDA-graph capture size in tokens; 0: vLLM derives it."
    )
    decode_context_parallel_size: Annotated[int, IntDomain(1, 64)] = _opt(
        1, "Decode context parallel group size (reuses the TP ranks)."
    )
    prefill_context_parallel_size: Annotated[int, IntDomain(1, 64)] = _opt(
        1, "Prefill context parallel size."
    )
    data_parallel_size: Annotated[int, IntDomain(1, 1024)] = _opt(1, "Data-parallel replicas.")
    enable_expert_parallel: Annotated[bool, BOOL] = _opt(
        False, "Expert parallelism for MoE layers instead of tensor parallelism."
    )
    enable_eplb: Annotated[bool, BOOL] = _opt(False, "Expert-parallel load balancing.")
    num_redundant_experts: Annotated[int, IntDomain(0, 4096)] = _opt(
        0, "Redundant experts for EPLB (eplb_config.num_redundant_experts)."
    )
    max_num_active_seqs: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "Sequences active in one step; 0: as many as max_num_seqs."
    )
    long_prefill_token_threshold: Annotated[int, IntDomain(0, MAX_TOKENS)] = _opt(
        0, "Prompt length above which a prefill counts as long; 0: off."
    )
    max_loras: Annotated[int, IntDomain(1, 1024)] = _opt(1, "LoRA adapters in one batch.")
    max_cpu_loras: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "LoRA adapters cached in host memory; 0: as many as max_loras."
    )
    max_lora_rank: Annotated[int, IntDomain(1, 1024)] = _opt(16, "Largest LoRA rank served.")
    prompt_lookup_min: Annotated[int, IntDomain(0, 1024)] = _opt(
        0, "Shortest n-gram the ngram proposer matches; 0: not given."
    )
    draft_tensor_parallel_size: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "Tensor-parallel size of the draft model; 0: the target's."
    )
    numa_bind: Annotated[bool, BOOL] = _opt(False, "Bind workers to NUMA nodes.")
    numa_bind_lists: Annotated[bool, BOOL] = _opt(
        False, "numa_bind_nodes or numa_bind_cpus is given."
    )
    eagle3_target: Annotated[bool, BOOL] = _opt(
        True,
        "The target model's architecture implements vLLM's EAGLE-3 interface (from"
        " config.json's architectures; True when no model is given).",
    )
    mtp_target: Annotated[bool, BOOL] = _opt(
        True,
        "vLLM drafts MTP from the target's own layers (its model type or architecture is"
        " an MTP family of SpeculativeConfig.hf_config_override; True when no model is"
        " given).",
    )
    model_runner_v1: Annotated[bool, BOOL] = _opt(
        False,
        "vLLM falls back to its V1 model runner: the arguments ask for a feature its V2"
        " runner lacks (VllmConfig._get_v2_model_runner_unsupported_features).",
    )
    draft_vocab_differs: Annotated[bool, BOOL] = _opt(
        False,
        "The draft model's vocab_size differs from the target's (both read off their"
        " config.json; False when either cannot be read).",
    )
    use_heterogeneous_vocab: Annotated[bool, BOOL] = _opt(
        False,
        "speculative_config.use_heterogeneous_vocab: a draft model with its own vocabulary,"
        " mapped onto the target's shared tokens.",
    )
    draft_sample_method: Annotated[str, EnumDomain(("greedy", "probabilistic"))] = _opt(
        "greedy", "speculative_config.draft_sample_method: how draft tokens are chosen."
    )
    use_local_argmax_reduction: Annotated[bool, BOOL] = _opt(
        False,
        "speculative_config.use_local_argmax_reduction: vocab-parallel argmax of the draft logits.",
    )
    mamba_block_size: Annotated[int, IntDomain(0, MAX_TOKENS)] = _opt(
        0, "Tokens per Mamba cache block (--mamba-block-size); 0: not given."
    )
    async_scheduling: Annotated[bool, BOOL] = _opt(
        False,
        "--async-scheduling set true (unset, vLLM decides, and turns it off where its model"
        " runner cannot run it).",
    )
    speculative_method: Annotated[str, EnumDomain(VLLM_SPECULATIVE_METHODS)] = _opt(
        "none",
        "speculative_config.method as vLLM resolves it (an MTP model type reads as mtp);"
        " none: no speculation.",
    )
    disable_padded_drafter_batch: Annotated[bool, BOOL] = _opt(
        False, "speculative_config.disable_padded_drafter_batch."
    )
    enable_adaptive_verification: Annotated[bool, BOOL] = _opt(
        False, "speculative_config.enable_adaptive_verification."
    )
    draft_lm_head_quantization: Annotated[bool, BOOL] = _opt(
        False, "speculative_config.draft_lm_head_quantization is given (fp8 or nvfp4)."
    )
    enable_batch_sharded_sampling: Annotated[bool, BOOL] = _opt(
        False, "--enable-batch-sharded-sampling (sampling sharded over the TP ranks by request)."
    )
    quantization_method: Annotated[str, EnumDomain(VLLM_QUANTIZATION_METHODS)] = _opt(
        "none", "--quantization as written; none: not given (the checkpoint's method)."
    )
    checkpoint_quant_method: Annotated[str, EnumDomain(VLLM_CHECKPOINT_QUANT)] = _opt(
        "unknown",
        "The checkpoint's quantization_config.quant_method (none: unquantized; unknown: no"
        " model given, or a method the vLLM rules do not model).",
    )


# the pack's sections, composed into constraints.schema.EngineConfig (named vllm_...)
SECTIONS = {"vllm_config": VllmConfig}
# its options as checked paths (VLLM_CONFIG.x == "vllm_config.x"); after SECTIONS, which
# the check reads
VLLM_CONFIG = _paths.Section("vllm_config")

__all__ = [
    "SECTIONS",
    "VLLM_CONFIG",
    "VLLM_CHECKPOINT_QUANT",
    "VLLM_QUANTIZATION_METHODS",
    "VLLM_SPECULATIVE_METHODS",
    "VllmConfig",
]
