"""The option schema: sections as pydantic models, composed into `EngineConfig`.

Names follow TensorRT-LLM's `PluginConfig`, `KvCacheConfig`, `BuildConfig`,
`SchedulerConfig`, speculative configs and `QuantConfig`. Every option is annotated with a
domain (see `domains.py`) and has a default; `device` and `model` are read-only facts that
setup claims fix. `lookup(path)` and `options()` expose domain, default and description of
every dotted path; an unknown path raises `UnknownPath` with close matches.

Defaults are the ones the current TensorRT-LLM release ends up using, with two noted
exceptions: `use_fp8_context_fmha` starts False (the engine switches it off without an FP8
workflow anyway) and `build_config.max_seq_len` is derived from the model's
`max_position_embeddings`, as TensorRT-LLM deduces it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .domains import BoolDomain, Domain, EnumDomain, FractionDomain, IntDomain
from .errors import DomainError, UnknownPath

BOOL = BoolDomain()
MAX_TOKENS = 1 << 22  # bound of every token-count option (4M tokens)

QUANT_ALGOS = (
    None,
    "FP8",
    "FP8_BLOCK_SCALES",
    "FP8_PER_CHANNEL_PER_TOKEN",
    "NVFP4",
    "W4A8_AWQ",
    "W4A16_AWQ",
    "W4A16_GPTQ",
    "W4A16",
    "W8A16",
    "W8A8_SQ_PER_CHANNEL",
    "MXFP4",
)
KV_QUANT_ALGOS = (None, "FP8", "INT8", "NVFP4")
SPEC_MODES = (
    "none",
    "draft_tokens_external",
    "medusa",
    "lookahead_decoding",
    "explicit_draft_tokens",
    "eagle",
)
DECODING_TYPES = (
    "none",
    "Medusa",
    "Eagle",
    "Lookahead",
    "MTP",
    "DraftTarget",
    # PyTorch-backend decoding types of the 1.x LLM API (appended; see dialects/fields)
    "NGram",
    "UserProvided",
    "PARD",
    "AUTO",
    "SaveState",
)
MOE_BACKENDS = ("AUTO", "CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA", "TRITON")
CAPACITY_POLICIES = ("GUARANTEED_NO_EVICT", "MAX_UTILIZATION", "STATIC_BATCH")
CHUNKING_POLICIES = ("FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS")
DTYPES = ("float16", "bfloat16", "float32")
PLUGIN_DTYPES = (None, "auto", "float16", "bfloat16", "float32")
ARCHITECTURES = (
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Gemma2ForCausalLM",
    "MedusaForCausalLM",
    "Qwen2ForCausalLM",
    "MambaForCausalLM",
    "RecurrentGemmaForCausalLM",
    "RwkvForCausalLM",
    "Rwkv5ForCausalLM",
    "Rwkv6ForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Llama4ForConditionalGeneration",
    "other",
)
RWKV_ARCHITECTURES = ("RwkvForCausalLM", "Rwkv5ForCausalLM", "Rwkv6ForCausalLM")
RECURRENT_ARCHITECTURES = ("MambaForCausalLM", "RecurrentGemmaForCausalLM", *RWKV_ARCHITECTURES)


class _Section(BaseModel):
    """A group of options; assignment is validated so a config can never hold a bad value."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _opt(default: Any, description: str) -> Any:
    return Field(default, description=description)


class PluginConfig(_Section):
    """Build-time plugin switches (TensorRT-LLM `PluginConfig`)."""

    context_fmha: Annotated[bool, BOOL] = _opt(
        True, "Fused multi-head attention in the context phase."
    )
    use_paged_context_fmha: Annotated[bool, BOOL] = _opt(
        True, "Context FMHA reads the paged KV cache (needed by block reuse and chunked context)."
    )
    use_fp8_context_fmha: Annotated[bool, BOOL] = _opt(
        False, "Context FMHA in FP8 (FP8 quantization workflows on Ada/Hopper only)."
    )
    streamingllm: Annotated[bool, BOOL] = _opt(
        False, "StreamingLLM: sink tokens plus a sliding window."
    )
    paged_kv_cache: Annotated[bool, BOOL] = _opt(True, "Store the KV cache in fixed-size blocks.")
    remove_input_padding: Annotated[bool, BOOL] = _opt(True, "Pack requests without padding.")
    gemm_plugin: Annotated[
        str | None,
        EnumDomain((None, "auto", "float16", "bfloat16", "float32", "fp8", "nvfp4"), nullable=True),
    ] = _opt(None, "GEMM plugin data type; None disables the plugin.")
    gemm_swiglu_plugin: Annotated[str | None, EnumDomain((None, "fp8"), nullable=True)] = _opt(
        None, "Fused GEMM + SwiGLU plugin (FP8 only)."
    )
    low_latency_gemm_swiglu_plugin: Annotated[
        str | None, EnumDomain((None, "fp8"), nullable=True)
    ] = _opt(None, "Low-latency fused GEMM + SwiGLU plugin (FP8 only).")
    use_fused_mlp: Annotated[bool, BOOL] = _opt(True, "Fuse the two MLP input GEMMs.")
    multiple_profiles: Annotated[bool, BOOL] = _opt(
        False, "Build several TensorRT optimisation profiles."
    )
    reduce_fusion: Annotated[bool, BOOL] = _opt(
        False, "Fuse the all-reduce with the following norm."
    )
    user_buffer: Annotated[bool, BOOL] = _opt(
        False, "All-reduce through user buffers (needs reduce_fusion)."
    )
    norm_quant_fusion: Annotated[bool, BOOL] = _opt(False, "Fuse RMSNorm with NVFP4 quantization.")
    manage_weights: Annotated[bool, BOOL] = _opt(False, "Let the runtime manage weight memory.")
    nccl_plugin: Annotated[str | None, EnumDomain(PLUGIN_DTYPES, nullable=True)] = _opt(
        None, "NCCL plugin data type; None on one GPU (the builder clears it there)."
    )
    gpt_attention_plugin: Annotated[str | None, EnumDomain(PLUGIN_DTYPES, nullable=True)] = _opt(
        "auto", "GPT attention plugin data type; None disables the plugin."
    )
    lora_plugin: Annotated[str | None, EnumDomain(PLUGIN_DTYPES, nullable=True)] = _opt(
        None, "LoRA plugin data type; None disables the plugin."
    )
    low_latency_gemm_plugin: Annotated[str | None, EnumDomain((None, "fp8"), nullable=True)] = _opt(
        None, "Low-latency GEMM plugin (FP8 only)."
    )
    fp8_rowwise_gemm_plugin: Annotated[str | None, EnumDomain(PLUGIN_DTYPES, nullable=True)] = _opt(
        None, "FP8 row-wise GEMM plugin data type."
    )
    bert_context_fmha_fp32_acc: Annotated[bool, BOOL] = _opt(
        False, "Accumulate BERT context FMHA in FP32."
    )
    pp_reduce_scatter: Annotated[bool, BOOL] = _opt(
        False, "Reduce-scatter between pipeline stages (Mixtral only)."
    )
    paged_state: Annotated[bool, BOOL] = _opt(
        False, "Paged recurrent state (Mamba, RecurrentGemma); off for attention-only models."
    )


class KvCacheConfig(_Section):
    """Runtime KV-cache settings (TensorRT-LLM `KvCacheConfig`)."""

    enable_block_reuse: Annotated[bool, BOOL] = _opt(
        True, "Reuse KV blocks of shared prompt prefixes."
    )
    enable_partial_reuse: Annotated[bool, BOOL] = _opt(
        True, "Reuse a block whose tokens match only in part."
    )
    copy_on_partial_reuse: Annotated[bool, BOOL] = _opt(
        True, "Copy a partially matched block instead of sharing it while it is in use."
    )
    tokens_per_block: Annotated[int, IntDomain(1, MAX_TOKENS)] = _opt(
        32, "Token slots per KV block."
    )
    max_tokens: Annotated[int | None, IntDomain(1, MAX_TOKENS, nullable=True)] = _opt(
        None, "Cap on the tokens the KV pool holds; None means as many as memory allows."
    )
    free_gpu_memory_fraction: Annotated[float, FractionDomain(0.0, 1.0, 1000)] = _opt(
        0.9, "Share of free device memory given to the KV pool."
    )
    max_attention_window: Annotated[int | None, IntDomain(1, MAX_TOKENS, nullable=True)] = _opt(
        None, "Sliding attention window in tokens; None means full attention."
    )
    sink_token_length: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "Tokens at the start of a sequence always kept in the window (StreamingLLM)."
    )
    host_cache_size: Annotated[int, IntDomain(0, 1 << 42)] = _opt(
        0, "Bytes of host memory for offloaded KV blocks; 0 disables offload."
    )
    onboard_blocks: Annotated[bool, BOOL] = _opt(
        True, "Copy offloaded blocks back to the device to reuse them."
    )
    dtype: Annotated[str, EnumDomain(("auto", "float16", "bfloat16", "float32", "fp8"))] = _opt(
        "auto", "KV cache data type; auto follows the model, or the KV quantization."
    )
    cross_kv_cache_fraction: Annotated[
        float | None, FractionDomain(0.0, 1.0, 1000, nullable=True)
    ] = _opt(None, "Share of the KV pool for cross attention (encoder-decoder models only).")


class BuildConfig(_Section):
    """Engine limits and build switches (TensorRT-LLM `BuildConfig`)."""

    max_batch_size: Annotated[int, IntDomain(1, 1 << 16)] = _opt(2048, "Most requests in one step.")
    max_input_len: Annotated[int, IntDomain(1, MAX_TOKENS)] = _opt(
        1024, "Longest prompt in tokens."
    )
    max_seq_len: Annotated[int | None, IntDomain(1, MAX_TOKENS, nullable=True)] = _opt(
        None, "Longest prompt plus output in tokens; None takes model.max_position_embeddings."
    )
    max_num_tokens: Annotated[int, IntDomain(1, MAX_TOKENS)] = _opt(
        8192, "Most tokens packed in one step."
    )
    opt_num_tokens: Annotated[int | None, IntDomain(1, MAX_TOKENS, nullable=True)] = _opt(
        None, "Token count the engine is tuned for; None lets the builder choose."
    )
    max_beam_width: Annotated[int, IntDomain(1, 1024)] = _opt(
        1, "Beams per request; > 1 is beam search."
    )
    max_draft_len: Annotated[int, IntDomain(0, 1024)] = _opt(
        0, "Draft tokens per step for speculative decoding."
    )
    gather_context_logits: Annotated[bool, BOOL] = _opt(
        False, "Return logits of every prompt token."
    )
    gather_generation_logits: Annotated[bool, BOOL] = _opt(
        False, "Return logits of every generated token."
    )
    speculative_decoding_mode: Annotated[str, EnumDomain(SPEC_MODES)] = _opt(
        "none", "Speculative decoding mode the engine is built for."
    )
    dtype: Annotated[str, EnumDomain(("auto",) + DTYPES)] = _opt(
        "auto", "Compute data type; auto follows model.dtype."
    )
    strongly_typed: Annotated[bool, BOOL] = _opt(True, "Build a strongly typed network.")
    kv_cache_type: Annotated[str, EnumDomain(("PAGED", "CONTINUOUS", "DISABLED"))] = _opt(
        "PAGED", "KV cache layout the engine is built for."
    )


class SchedulerConfig(_Section):
    """Request scheduling (TensorRT-LLM `SchedulerConfig` plus `enable_chunked_prefill`)."""

    capacity_scheduler_policy: Annotated[str, EnumDomain(CAPACITY_POLICIES)] = _opt(
        "GUARANTEED_NO_EVICT", "How requests are admitted against the KV pool."
    )
    context_chunking_policy: Annotated[str, EnumDomain(CHUNKING_POLICIES)] = _opt(
        "FIRST_COME_FIRST_SERVED", "How prompt chunks share a step's token budget."
    )
    enable_chunked_context: Annotated[bool, BOOL] = _opt(
        False, "Split long prompts over several steps."
    )


class SpeculativeConfig(_Section):
    """Speculative decoding (the decoding-type configs of TensorRT-LLM's LLM API)."""

    decoding_type: Annotated[str, EnumDomain(DECODING_TYPES)] = _opt(
        "none", "Speculative decoding method."
    )
    num_medusa_heads: Annotated[int, IntDomain(1, 64)] = _opt(4, "Medusa heads (Medusa only).")
    num_eagle_layers: Annotated[int, IntDomain(1, 64)] = _opt(4, "Draft layers (Eagle only).")
    max_window_size: Annotated[int, IntDomain(1, 64)] = _opt(4, "Lookahead window size W.")
    max_ngram_size: Annotated[int, IntDomain(1, 64)] = _opt(3, "Lookahead n-gram size N.")
    max_verification_set_size: Annotated[int, IntDomain(0, 64)] = _opt(
        4, "Lookahead verification set size V."
    )
    num_nextn_predict_layers: Annotated[int, IntDomain(1, 16)] = _opt(1, "MTP modules (MTP only).")
    eagle3: Annotated[bool, BOOL] = _opt(False, "EAGLE-3 draft heads (Eagle only).")
    eagle3_one_model: Annotated[bool, BOOL] = _opt(
        True, "EAGLE-3 target and draft in one engine (Eagle with eagle3 only)."
    )
    use_dynamic_tree: Annotated[bool, BOOL] = _opt(False, "EAGLE dynamic draft tree.")
    dynamic_tree_max_topk: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "Top-k expanded per layer of a dynamic draft tree."
    )
    max_total_draft_tokens: Annotated[int, IntDomain(0, 1024)] = _opt(
        0, "Draft tokens in a dynamic tree; 0 when no dynamic tree."
    )
    max_matching_ngram_size: Annotated[int, IntDomain(0, 1024)] = _opt(
        2, "NGram: longest token pattern searched for a draft (1.2 default 2; 1.0 default 0)."
    )


class QuantConfig(_Section):
    """Weight and KV-cache quantization (TensorRT-LLM `QuantConfig`)."""

    quant_algo: Annotated[str | None, EnumDomain(QUANT_ALGOS, nullable=True)] = _opt(
        None, "Weight/activation quantization algorithm; None keeps model.dtype."
    )
    kv_cache_quant_algo: Annotated[str | None, EnumDomain(KV_QUANT_ALGOS, nullable=True)] = _opt(
        None, "KV cache quantization; None keeps the compute type."
    )


class ParallelConfig(_Section):
    """Model parallelism."""

    tensor_parallel_size: Annotated[int, IntDomain(1, 64)] = _opt(1, "Tensor-parallel ranks.")
    pipeline_parallel_size: Annotated[int, IntDomain(1, 64)] = _opt(1, "Pipeline stages.")
    moe_expert_parallel_size: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "MoE expert-parallel ranks; 0 when not given (the engine derives it)."
    )
    moe_tensor_parallel_size: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "MoE tensor-parallel ranks; 0 when not given (the engine derives it)."
    )
    moe_cluster_parallel_size: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "MoE cluster-parallel ranks; 0 when not given (the engine uses 1)."
    )
    enable_attention_dp: Annotated[bool, BOOL] = _opt(
        False, "Attention data parallelism: attention runs data-parallel over the TP ranks."
    )
    moe_expert_parallel_used: Annotated[int, IntDomain(1, 64)] = _opt(
        1, "MoE expert-parallel ranks the engine uses (given, or derived from the others)."
    )
    moe_tensor_parallel_used: Annotated[int, IntDomain(1, 64)] = _opt(
        1, "MoE tensor-parallel ranks the engine uses (given, or derived from the others)."
    )


class RuntimeConfig(_Section):
    """Runtime choices of the LLM API (backend, sampler, batching) and MLC's prefill mode."""

    backend: Annotated[str, EnumDomain(("tensorrt", "pytorch"))] = _opt(
        "pytorch",
        "Execution backend: the PyTorch backend (tensorrt_llm.LLM in 1.x), or a built TensorRT"
        " engine; profiles set it.",
    )
    attn_backend: Annotated[
        str, EnumDomain(("TRTLLM", "FLASHINFER", "FLASHINFER_STAR_ATTENTION", "VANILLA"))
    ] = _opt("TRTLLM", "Attention backend of the PyTorch backend.")
    sampler_type: Annotated[str, EnumDomain(("auto", "TorchSampler", "TRTLLMSampler"))] = _opt(
        "auto", "Sampler of the PyTorch backend."
    )
    disable_overlap_scheduler: Annotated[bool, BOOL] = _opt(
        False, "Turn off overlapping the scheduler with the forward pass."
    )
    batching_type: Annotated[str, EnumDomain(("INFLIGHT", "STATIC"))] = _opt(
        "INFLIGHT", "In-flight batching, or static batches."
    )
    enable_lora: Annotated[bool, BOOL] = _opt(False, "Serve LoRA adapters.")
    prefill_mode: Annotated[str, EnumDomain(("hybrid", "chunked"))] = _opt(
        "chunked",
        "MLC prefill mode: chunked, or hybrid (split-fuse prefill with decode; MLC's default,"
        " set by the mlc profile).",
    )
    max_history_size: Annotated[int, IntDomain(0, 1 << 20)] = _opt(
        0, "MLC: steps of recurrent state kept for rollback; 0 for KV-cache models."
    )


class DeviceFacts(_Section):
    """Facts of the accelerator (read-only; fixed by setup claims). Defaults: H100-80GB."""

    sm: Annotated[int, IntDomain(0, 200)] = _opt(
        90, "Compute capability as an int (80 = Ampere A100)."
    )
    memory_mib: Annotated[int, IntDomain(0, 1 << 24)] = _opt(81559, "Device memory in MiB.")
    host_memory_mib: Annotated[int, IntDomain(0, 1 << 30)] = _opt(
        0, "Host memory in MiB; 0 when unknown (host-pool checks are skipped)."
    )
    count: Annotated[int, IntDomain(1, 1024)] = _opt(
        1, "GPUs per node the engine may use; no solve adds any."
    )
    nodes: Annotated[int, IntDomain(1, 1024)] = _opt(1, "Nodes, each with `count` GPUs.")


class ModelFacts(_Section):
    """Facts of the model (read-only; fixed by setup claims). Defaults: Llama-3-8B's shape."""

    num_layers: Annotated[int, IntDomain(1, 1024)] = _opt(32, "Decoder layers.")
    num_attention_heads: Annotated[int, IntDomain(1, 1024)] = _opt(32, "Query heads.")
    num_kv_heads: Annotated[int, IntDomain(1, 1024)] = _opt(
        8, "Key/value heads (grouped-query attention)."
    )
    head_dim: Annotated[int, IntDomain(1, 1024)] = _opt(128, "Size of one attention head.")
    hidden_size: Annotated[int, IntDomain(1, 1 << 17)] = _opt(4096, "Hidden size.")
    vocab_size: Annotated[int, IntDomain(1, 1 << 22)] = _opt(128256, "Vocabulary size.")
    max_position_embeddings: Annotated[int, IntDomain(1, MAX_TOKENS)] = _opt(
        8192, "Longest position the model knows."
    )
    dtype: Annotated[str, EnumDomain(DTYPES)] = _opt("bfloat16", "Data type of the checkpoint.")
    architecture: Annotated[str, EnumDomain(ARCHITECTURES)] = _opt(
        "LlamaForCausalLM", "Model class from config.json; `other` when not listed."
    )
    intermediate_size: Annotated[int, IntDomain(1, 1 << 20)] = _opt(14336, "MLP inner size.")
    num_params: Annotated[int, IntDomain(0, 1 << 42)] = _opt(
        0, "Parameter count; 0 means computed from the shape facts."
    )
    tie_word_embeddings: Annotated[bool, BOOL] = _opt(
        False, "The output projection shares the embedding matrix."
    )
    sliding_window: Annotated[int, IntDomain(0, MAX_TOKENS)] = _opt(
        0, "The model's own attention window in tokens; 0 for full attention."
    )
    is_encoder_decoder: Annotated[bool, BOOL] = _opt(
        False, "Encoder-decoder model (cross attention)."
    )
    num_experts: Annotated[int, IntDomain(1, 4096)] = _opt(
        1, "Routed experts of an MoE layer; 1 for a dense model."
    )
    kv_elements_per_token: Annotated[int, IntDomain(0, 1 << 30)] = _opt(
        0,
        "KV elements one token adds over the full-attention layers (MLA: the latent); 0 with"
        " the next two also 0 means 2 x layers x kv_heads x head_dim.",
    )
    window_kv_elements_per_token: Annotated[int, IntDomain(0, 1 << 30)] = _opt(
        0, "KV elements per token of the sliding/chunked layers, kept for sliding_window tokens."
    )
    state_bytes: Annotated[int, IntDomain(0, 1 << 40)] = _opt(
        0, "Recurrent (Mamba, RWKV, linear-attention) state of one sequence, in bytes."
    )
    kv_replicated: Annotated[bool, BOOL] = _opt(
        False, "Every tensor-parallel rank keeps the whole KV (MLA's latent has no heads to split)."
    )
    asymmetric_kv: Annotated[bool, BOOL] = _opt(
        False, "K and V rows differ in width (v_head_dim apart from head_dim; not MLA)."
    )
    weight_bytes: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Bytes of a pre-quantized checkpoint's weights as stored; 0: from num_params."
    )
    mtp_layers: Annotated[int, IntDomain(0, 64)] = _opt(
        0, "Multi-token-prediction layers (num_nextn_predict_layers); 0: none or not known."
    )
    vllm_cudagraph_bytes: Annotated[int, IntDomain(0, 1 << 40)] = _opt(
        0,
        "CUDA-graph memory vLLM takes from its KV budget for this model and its capture"
        " sizes, per GPU (set by the vllm dialect; 0: none).",
    )
    vllm_draft_heads: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0,
        "Attention heads of the separate draft model vLLM would load (its config.json, where"
        " speculative_config.model names a local folder; set by the vllm dialect; 0: none"
        " or not readable).",
    )
    expert_params: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Parameters of the routed experts (all MoE layers); 0 for a dense model."
    )
    attention_params: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Parameters of the attention (and linear-attention) projections; 0: not known."
    )
    expert_weight_bytes: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Bytes of the routed experts as a pre-quantized checkpoint stores them; 0: none."
    )
    attention_weight_bytes: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Bytes of the attention projections as a pre-quantized checkpoint stores them."
    )
    experts_per_token: Annotated[int, IntDomain(1, 4096)] = _opt(
        1, "Routed experts each token is sent to (top-k); 1 for a dense model."
    )
    moe_intermediate_size: Annotated[int, IntDomain(0, 1 << 20)] = _opt(
        0, "Intermediate size of one routed expert; 0 for a dense model."
    )
    moe_layers: Annotated[int, IntDomain(0, 1 << 12)] = _opt(
        0, "Layers holding routed experts (a pipeline stage holds at most this many); 0: dense."
    )
    embedding_weight_bytes: Annotated[int, IntDomain(0, 1 << 44)] = _opt(
        0, "Bytes of the input embedding as a pre-quantized checkpoint stores it; 0: none."
    )
    mxfp4_experts: Annotated[bool, BOOL] = _opt(
        False, "The checkpoint stores its routed experts in MXFP4 (gpt-oss)."
    )


class CudaGraphConfig(_Section):
    """CUDA graphs of the PyTorch backend (TensorRT-LLM `CudaGraphConfig`)."""

    enabled: Annotated[bool, BOOL] = _opt(
        True, "CUDA graphs for decode steps; off when cuda_graph_config is null."
    )
    max_batch_size: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "Largest batch with a CUDA graph; 0 when not given (the engine uses 128)."
    )
    batch_sizes_max: Annotated[int, IntDomain(0, 1 << 16)] = _opt(
        0, "The largest of cuda_graph_config.batch_sizes; 0 when no list is given."
    )
    enable_padding: Annotated[bool, BOOL] = _opt(
        False, "Pad a batch up to the next captured batch size."
    )


class MoeConfig(_Section):
    """Mixture-of-experts runtime choices (TensorRT-LLM `MoeConfig`)."""

    backend: Annotated[str, EnumDomain(MOE_BACKENDS)] = _opt(
        "AUTO", "MoE kernel backend (1.2 default AUTO; 1.0 default CUTLASS)."
    )
    load_balancer: Annotated[bool, BOOL] = _opt(
        False, "An expert load balancer is configured (moe_config.load_balancer given)."
    )


class AttentionDpConfig(_Section):
    """Load balancing of attention data parallelism (TensorRT-LLM `AttentionDpConfig`)."""

    enable_balance: Annotated[bool, BOOL] = _opt(False, "Balance requests across DP ranks.")
    timeout_iters: Annotated[int, IntDomain(-(1 << 20), 1 << 20)] = _opt(
        50, "Iterations before balancing gives up waiting."
    )
    batching_wait_iters: Annotated[int, IntDomain(-(1 << 20), 1 << 20)] = _opt(
        10, "Iterations to wait for a batch."
    )


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


SGLANG_SPECULATIVE = (
    None,
    "EAGLE",
    "EAGLE3",
    "NEXTN",
    "STANDALONE",
    "NGRAM",
    "DFLASH",
    "DSPARK",
    "FROZEN_KV_MTP",
    "UNO",
)
SGLANG_ATTENTION = (
    None,
    "aiter",
    "ascend",
    "compressed",
    "cutedsl_mla",
    "dsa",
    "dsv4",
    "fa3",
    "fa4",
    "flashinfer",
    "flashmla",
    "flex_attention",
    "hpc_ops",
    "intel_amx",
    "intel_xpu",
    "llada2_cfg_flashinfer",
    "minicpm_flashattn",
    "minicpm_flashinfer",
    "nsa",
    "qsa",
    "tokenspeed_mla",
    "torch_native",
    "triton",
    "trtllm_mha",
    "trtllm_mla",
    "wave",
)


# sglang 0.5.23 ServerArgs.kv_cache_dtype choices (arg_groups/fields/model.py)
SGLANG_KV_CACHE_DTYPES = (
    "auto",
    "bf16",
    "bfloat16",
    "fp4_mx_block16",
    "fp8_e4m3",
    "fp8_e5m2",
    "mxfp8",
    "nvfp4",
)


class SglangConfig(_Section):
    """SGLang `ServerArgs` fields with no shared counterpart, as the user wrote them (or
    as SGLang derives them when unset). Where SGLang resolves a written value into an
    effective one, the effective value lives in the shared option (the per-rank chunk in
    `build_config.max_num_tokens`, the page size in `kv_cache_config.tokens_per_block`,
    the radix cache in `kv_cache_config.enable_block_reuse`, the overlap schedule in
    `runtime_config.disable_overlap_scheduler`) and the `sglang.*` rules tie the two.
    Choices from sglang 0.5.23 (`arbiter/dialects/fields/sglang-0.5.yaml`)."""

    attn_dp_size: Annotated[int, IntDomain(1, 64)] = _opt(1, "Attention data-parallel groups.")
    dp_size: Annotated[int, IntDomain(1, 64)] = _opt(1, "Data-parallel replicas.")
    attn_cp_size: Annotated[int, IntDomain(1, 64)] = _opt(1, "Attention context-parallel size.")
    chunked_prefill_size: Annotated[int, IntDomain(-1, MAX_TOKENS)] = _opt(
        8192, "Prefill chunk of the whole server as written (<= 0: chunked prefill off)."
    )
    page_size: Annotated[int, IntDomain(1, 1024)] = _opt(1, "KV page size as written.")
    disable_radix_cache: Annotated[bool, BOOL] = _opt(False, "Radix cache off, as written.")
    disable_overlap_schedule: Annotated[bool, BOOL] = _opt(
        False, "Overlap schedule off, as written."
    )
    enable_hierarchical_cache: Annotated[bool, BOOL] = _opt(False, "HiCache (host KV tier).")
    enable_deterministic_inference: Annotated[bool, BOOL] = _opt(
        False, "Deterministic inference (batch-invariant kernels, a restricted backend set)."
    )
    disaggregation_mode: Annotated[str, EnumDomain(("null", "prefill", "decode"))] = _opt(
        "null", "Prefill/decode disaggregation role."
    )
    disaggregation_decode_enable_radix_cache: Annotated[bool, BOOL] = _opt(
        False, "A decode server keeps the radix cache."
    )
    disaggregation_transfer_backend: Annotated[
        str, EnumDomain(("ascend", "fake", "mooncake", "mooncake_tcp", "mori", "nixl"))
    ] = _opt("mooncake", "KV transfer backend between prefill and decode servers.")
    attention_backend: Annotated[str | None, EnumDomain(SGLANG_ATTENTION, nullable=True)] = _opt(
        None, "Attention backend (None: SGLang picks one for the device and model)."
    )
    speculative_algorithm: Annotated[str | None, EnumDomain(SGLANG_SPECULATIVE, nullable=True)] = (
        _opt(None, "Speculative decoding algorithm.")
    )
    speculative_eagle_topk: Annotated[int, IntDomain(1, 1024)] = _opt(1, "Draft branching.")
    speculative_num_steps: Annotated[int, IntDomain(1, 64)] = _opt(3, "Draft steps.")
    speculative_num_draft_tokens: Annotated[int, IntDomain(1, 1024)] = _opt(
        4, "Draft tokens verified per step, as written."
    )
    enable_multi_layer_eagle: Annotated[bool, BOOL] = _opt(False, "Multi-layer EAGLE drafts.")
    enable_mixed_chunk: Annotated[bool, BOOL] = _opt(False, "Mix prefill chunks into decode.")
    prefill_chunk_pages: Annotated[int, IntDomain(0, MAX_TOKENS)] = _opt(
        8192, "The per-rank prefill chunk counted in pages (SGLang asserts a whole number)."
    )
    lora_paths_given: Annotated[bool, BOOL] = _opt(False, "lora_paths names an adapter.")
    lora_shape_given: Annotated[bool, BOOL] = _opt(
        False, "max_lora_rank and lora_target_modules are both given."
    )
    prefill_attention_backend: Annotated[
        str | None, EnumDomain(SGLANG_ATTENTION, nullable=True)
    ] = _opt(None, "Prefill attention backend (None: attention_backend's).")
    decode_attention_backend: Annotated[str | None, EnumDomain(SGLANG_ATTENTION, nullable=True)] = (
        _opt(None, "Decode attention backend (None: attention_backend's).")
    )
    kv_cache_dtype: Annotated[str, EnumDomain(SGLANG_KV_CACHE_DTYPES)] = _opt(
        "auto",
        "KV cache dtype as written (quant_config.kv_cache_quant_algo holds FP8 for both FP8"
        " kinds; SGLang's MLA and fa3 backends tell fp8_e4m3 and fp8_e5m2 apart).",
    )
    speculative_eagle_topk_given: Annotated[bool, BOOL] = _opt(
        False,
        "speculative_eagle_topk is written (SGLang picks the default attention backend"
        " before it derives an unset one).",
    )
    attention_backend_given: Annotated[bool, BOOL] = _opt(
        False,
        "attention_backend is written (a model's own backend check runs before SGLang's"
        " default fills an unset one).",
    )
    prefill_kv_cache_dequant_dtype: Annotated[str, EnumDomain(("auto", "fp8_e4m3", "nvfp4"))] = (
        _opt(
            "auto",
            "What prefill reads an nvfp4 KV cache as (fp8_e4m3: flashinfer prefill; nvfp4:"
            " trtllm_mha prefill; auto: by the backend written, else by the GPU).",
        )
    )
    disable_hybrid_swa_memory: Annotated[bool, BOOL] = _opt(
        False,
        "No separate sliding-window KV pool for hybrid SWA models, as written (SGLang sets it"
        " for Gemma 2 / 3).",
    )


FACT_SECTIONS = ("device", "model")


class MemoryPolicyConfig(_Section):
    """What the engine does when its KV cache cannot hold one whole sequence: TensorRT-LLM
    clamps the attention window to what fits, unless told to fail instead (`TrtLlmArgs.
    fail_fast_on_attention_window_too_large`, a top-level LLM-API field)."""

    fail_fast_on_attention_window_too_large: Annotated[bool, BOOL] = _opt(
        False, "Fail instead of clamping the attention window when one sequence does not fit."
    )


class EngineConfig(BaseModel):
    """All sections; a solved one is the arbiter's output."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    plugin_config: PluginConfig = Field(default_factory=PluginConfig)
    kv_cache_config: KvCacheConfig = Field(default_factory=KvCacheConfig)
    build_config: BuildConfig = Field(default_factory=BuildConfig)
    scheduler_config: SchedulerConfig = Field(default_factory=SchedulerConfig)
    speculative_config: SpeculativeConfig = Field(default_factory=SpeculativeConfig)
    quant_config: QuantConfig = Field(default_factory=QuantConfig)
    parallel_config: ParallelConfig = Field(default_factory=ParallelConfig)
    runtime_config: RuntimeConfig = Field(default_factory=RuntimeConfig)
    device: DeviceFacts = Field(default_factory=DeviceFacts)
    model: ModelFacts = Field(default_factory=ModelFacts)
    cuda_graph_config: CudaGraphConfig = Field(default_factory=CudaGraphConfig)
    moe_config: MoeConfig = Field(default_factory=MoeConfig)
    attention_dp_config: AttentionDpConfig = Field(default_factory=AttentionDpConfig)
    vllm_config: VllmConfig = Field(default_factory=VllmConfig)
    sglang_config: SglangConfig = Field(default_factory=SglangConfig)
    memory_policy: MemoryPolicyConfig = Field(default_factory=MemoryPolicyConfig)

    @model_validator(mode="after")
    def _derive(self) -> EngineConfig:
        if self.build_config.max_seq_len is None:
            self.build_config.max_seq_len = self.model.max_position_embeddings
        return self

    def get(self, path: str) -> Any:
        """The value at a dotted path."""
        section, name = _split(lookup(path).path)
        return getattr(getattr(self, section), name)

    def flat(self) -> dict[str, Any]:
        """Every option as {path: value}."""
        return {spec.path: self.get(spec.path) for spec in options()}

    @classmethod
    def from_flat(cls, values: dict[str, Any]) -> EngineConfig:
        """Build a config from {path: value}; unnamed options keep their defaults."""
        nested: dict[str, dict[str, Any]] = {}
        for path, value in values.items():
            section, name = _split(lookup(path).path)
            nested.setdefault(section, {})[name] = value
        return cls.model_validate(nested)


@dataclass(frozen=True)
class OptionSpec:
    """Everything known about one option: path, domain, default and description."""

    path: str
    section: str
    name: str
    domain: Domain
    default: Any
    description: str
    fact: bool
    derived_default: Callable[[dict[str, Any]], Any] | None = None

    def default_for(self, facts: dict[str, Any]) -> Any:
        """The default, once derived defaults have read the facts they depend on."""
        if self.derived_default is not None:
            return self.derived_default(facts)
        return self.default

    def check(self, value: Any) -> Any:
        """Normalise a value to the domain, or raise DomainError naming this path."""
        return self.domain.check(value, self.path)

    def describe(self) -> str:
        default = self.default if self.derived_default is None else "(derived) " + str(self.default)
        kind = "fact" if self.fact else "option"
        return (
            f"{self.path}: {kind}, {self.domain.describe()}, default {default}. {self.description}"
        )


_DERIVED: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "build_config.max_seq_len": (
        lambda facts: facts["model.max_position_embeddings"],
        "model.max_position_embeddings",
    ),
}


@cache
def _registry() -> dict[str, OptionSpec]:
    specs: dict[str, OptionSpec] = {}
    for section, field in EngineConfig.model_fields.items():
        model_cls = field.annotation
        for name, info in model_cls.model_fields.items():
            domain = next(m for m in info.metadata if isinstance(m, Domain))
            path = f"{section}.{name}"
            derived = _DERIVED.get(path)
            default = info.default
            if derived is not None:
                domain = type(domain)(**{**domain.__dict__, "nullable": False})
                default = derived[1]
            specs[path] = OptionSpec(
                path=path,
                section=section,
                name=name,
                domain=domain,
                default=default,
                description=info.description or "",
                fact=section in FACT_SECTIONS,
                derived_default=derived[0] if derived else None,
            )
    return specs


def options() -> tuple[OptionSpec, ...]:
    """Every option and fact, in schema order."""
    return tuple(_registry().values())


def lookup(path: str) -> OptionSpec:
    """The spec of a dotted path, or UnknownPath with close matches."""
    spec = _registry().get(path)
    if spec is None:
        raise UnknownPath(path, suggest(path))
    return spec


def suggest(path: str, n: int = 3) -> tuple[str, ...]:
    """Paths close to `path`, for "did you mean" messages."""
    paths = list(_registry())
    found = difflib.get_close_matches(path, paths, n=n, cutoff=0.6)
    if not found and "." in path:
        # a right option name under the wrong section is a common slip
        tail = path.rsplit(".", 1)[1]
        found = [p for p in paths if p.endswith("." + tail)][:n]
    if not found:
        found = difflib.get_close_matches(path.rsplit(".", 1)[-1], paths, n=n, cutoff=0.5)
    return tuple(found)


def fact_defaults() -> dict[str, Any]:
    """Default value of every fact path."""
    return {s.path: s.default for s in options() if s.fact}


def _split(path: str) -> tuple[str, str]:
    section, name = path.split(".", 1)
    return section, name


__all__ = [
    "SGLANG_ATTENTION",
    "SGLANG_KV_CACHE_DTYPES",
    "SGLANG_SPECULATIVE",
    "SglangConfig",
    "AttentionDpConfig",
    "BuildConfig",
    "CudaGraphConfig",
    "DeviceFacts",
    "DomainError",
    "EngineConfig",
    "KvCacheConfig",
    "ModelFacts",
    "MoeConfig",
    "OptionSpec",
    "ParallelConfig",
    "PluginConfig",
    "QuantConfig",
    "RuntimeConfig",
    "SchedulerConfig",
    "SpeculativeConfig",
    "UnknownPath",
    "VllmConfig",
    "fact_defaults",
    "lookup",
    "options",
    "suggest",
]
