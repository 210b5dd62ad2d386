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

A section only one engine has lives in that engine's pack: its
`constraints/engines/<engine>/schema.py` declares `SECTIONS` ({name: section model}, each
name starting with `<engine>_`, built on `constraints.sections`). `EngineConfig` is composed
when first used, with pydantic's `create_model`, from the shared sections here and the
sections of every engine the profiles register (`constraints.profiles.ENGINES`); no shared
module names a pack's section. `lookup(path)` reads one section and imports at most the
pack owning it, so building one profile's rules imports no other engine's pack.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from .domains import Domain, EnumDomain, FractionDomain, IntDomain
from .errors import DomainError, OutOfScope, SchemaError, UnknownPath
from .profiles import ENGINES
from .sections import BOOL, MAX_TOKENS
from .sections import Section as _Section
from .sections import opt as _opt

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
    # PyTorch-backend decoding types of the 1.x LLM API (appended; see the field lists arbiter/engines/trtllm/fields-*.yaml)
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
    weight_block_n: Annotated[int, IntDomain(0, 1 << 12)] = _opt(
        0, "Output rows of one weight-scale block of a block-scaled FP8 checkpoint; 0: none."
    )
    weight_block_k: Annotated[int, IntDomain(0, 1 << 12)] = _opt(
        0, "Input columns of one weight-scale block of a block-scaled FP8 checkpoint; 0: none."
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


FACT_SECTIONS = ("device", "model")


class MemoryPolicyConfig(_Section):
    """What the engine does when its KV cache cannot hold one whole sequence: TensorRT-LLM
    clamps the attention window to what fits, unless told to fail instead (`TrtLlmArgs.
    fail_fast_on_attention_window_too_large`, a top-level LLM-API field)."""

    fail_fast_on_attention_window_too_large: Annotated[bool, BOOL] = _opt(
        False, "Fail instead of clamping the attention window when one sequence does not fit."
    )


_C = TypeVar("_C", bound="_Config")


class _Config(BaseModel):
    """What `EngineConfig` does, whatever sections it is composed of."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    if TYPE_CHECKING:  # the shared sections `_derive` reads (fields of every composition)
        build_config: BuildConfig
        model: ModelFacts

    @model_validator(mode="after")
    def _derive(self: _C) -> _C:
        if self.build_config.max_seq_len is None:
            self.build_config.max_seq_len = self.model.max_position_embeddings
        return self

    def get(self, path: str) -> Any:
        """The value at a dotted path (OutOfScope: an engine section this config lacks)."""
        section, name = _split(lookup(path).path)
        if section not in type(self).model_fields:
            raise out_of_scope(path, self.flat())
        return getattr(getattr(self, section), name)

    def flat(self) -> dict[str, Any]:
        """Every option of this config's sections as {path: value}, in schema order."""
        return {
            path: getattr(getattr(self, spec.section), spec.name)
            for section in type(self).model_fields
            for path, spec in _section_specs(section).items()
        }

    @classmethod
    def from_flat(cls: type[_C], values: dict[str, Any]) -> _C:
        """Build a config from {path: value}; unnamed options keep their defaults."""
        nested: dict[str, dict[str, Any]] = {}
        for path, value in values.items():
            section, name = _split(lookup(path).path)
            nested.setdefault(section, {})[name] = value
        return cls.model_validate(nested)

    def __reduce__(self) -> tuple[Any, ...]:
        # a composed class lives in `_compose`'s cache, not under its name in this module:
        # pickle the scope it was composed for and the state (its sections pickle as usual)
        return (_rebuild, (getattr(type(self), "scope", None), self.__getstate__()))


def _rebuild(scope: Scope | None, state: dict[str, Any]) -> _Config:
    """An `EngineConfig` of `scope` from its pickled state (see `_Config.__reduce__`)."""
    model = _compose(scope)
    config = model.__new__(model)
    config.__setstate__(state)
    return config


class SharedSections(_Config):
    """The sections every engine shares, in `EngineConfig`'s order; the packs' own
    sections are composed in before `_AFTER_PACKS` (see `EngineConfig`)."""

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
    memory_policy: MemoryPolicyConfig = Field(default_factory=MemoryPolicyConfig)


# shared sections that follow the packs' ones, so that the schema order (of `options()`,
# `flat()` and the compiled variables) is the one the sections were first written in
_AFTER_PACKS = ("memory_policy",)


@cache
def pack_sections(engine: str) -> Mapping[str, type[BaseModel]]:
    """The sections `engine`'s pack declares (`SECTIONS` of constraints/engines/<engine>/
    schema.py; none without that module). Each is named `<engine>_...`, so that a path
    names the one pack to import; a bad declaration is a SchemaError naming the module."""
    module = f"{__package__}.engines.{engine}.schema"
    # looked up on the packs' folders, not with find_spec (which imports the package)
    folders = import_module(f"{__package__}.engines").__path__
    if not any((Path(folder) / engine / "schema.py").is_file() for folder in folders):
        return {}
    declared = getattr(import_module(module), "SECTIONS", None)
    if not isinstance(declared, Mapping):
        raise SchemaError(f"{module} declares no SECTIONS mapping {{name: section model}}")
    for name, model in declared.items():
        if not (isinstance(name, str) and name.startswith(f"{engine}_")):
            raise SchemaError(f"{module}: section {name!r} must be named {engine}_...")
        if not (isinstance(model, type) and issubclass(model, _Section)):
            raise SchemaError(f"{module}: section {name!r} is no constraints.sections.Section")
    return dict(declared)


def section_owner(section: str) -> str | None:
    """The engine whose pack holds `section` (by its name's prefix), if any."""
    owners = [e for e in ENGINES if section.startswith(f"{e}_")]
    return max(owners, key=len) if owners else None


def section_model(section: str) -> type[BaseModel] | None:
    """The model of one section: a shared one, or the owning pack's (importing that pack's
    schema only); None for a name that is no section."""
    field = SharedSections.model_fields.get(section)
    if field is not None:
        return field.annotation  # type: ignore[return-value]
    owner = section_owner(section)
    return pack_sections(owner).get(section) if owner is not None else None


Scope = tuple[str, ...]  # engines whose pack sections a schema holds, in `ENGINES` order


@overload
def scope_of(engines: None) -> None: ...
@overload
def scope_of(engines: Iterable[str]) -> Scope: ...
def scope_of(engines: Iterable[str] | None) -> Scope | None:
    """`engines` as a scope (the registered ones, in `ENGINES` order); None stays None,
    the whole schema."""
    if engines is None:
        return None
    chosen = set(engines)
    return tuple(e for e in ENGINES if e in chosen)


def scope_for(paths: Iterable[str]) -> Scope:
    """The smallest scope holding every section `paths` name (engines by section prefix)."""
    owners = {section_owner(section) for section in {p.split(".", 1)[0] for p in paths}}
    return scope_of(o for o in owners if o is not None) or ()


def out_of_scope(path: str, held: Iterable[str]) -> OutOfScope:
    """The error for `path`, an option missing from the config whose paths are `held`."""
    owner = section_owner(path.split(".", 1)[0]) or "?"
    return OutOfScope(path, owner, scope_for(held))


@cache
def _compose(scope: Scope | None) -> type[SharedSections]:
    """`EngineConfig` of the shared sections and the pack sections of `scope`'s engines
    (None: every engine's), in schema order: a subsequence of the whole schema's."""
    fields: dict[str, Any] = {}

    def add(name: str, model: Any) -> None:
        if name in fields:
            raise SchemaError(f"section {name!r} is declared twice")
        fields[name] = (model, Field(default_factory=model))

    shared = SharedSections.model_fields
    for name, info in shared.items():
        if name not in _AFTER_PACKS:
            add(name, info.annotation)
    for engine in ENGINES if scope is None else scope:
        for name, model in pack_sections(engine).items():
            add(name, model)
    for name in _AFTER_PACKS:
        add(name, shared[name].annotation)
    composed = create_model(  # type: ignore[call-overload]
        "EngineConfig",
        __base__=_Config,
        __module__=__name__,
        __doc__="All sections; a solved one is the arbiter's output."
        if scope is None
        else f"The shared sections and those of {', '.join(scope) or 'no engine'}'s pack.",
        **fields,
    )
    composed.scope = scope  # type: ignore[attr-defined]  # read by `__reduce__`
    if scope is None:
        globals()["EngineConfig"] = composed  # later reads skip the module __getattr__
    return cast("type[SharedSections]", composed)


def engine_config(scope: Iterable[str] | None = None) -> type[SharedSections]:
    """`EngineConfig` for a scope: the shared sections and its engines' pack sections,
    importing no other pack (None: every engine's, the module's `EngineConfig`)."""
    return _compose(scope_of(scope))


if TYPE_CHECKING:
    # statically the shared sections (a pack's section is read by path: `get`, `flat`);
    # at run time the composed class (`_compose`), built on first use
    EngineConfig = SharedSections


def __getattr__(name: str) -> Any:
    if name == "EngineConfig":
        return _compose(None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def section_names(scope: Iterable[str] | None = None) -> tuple[str, ...]:
    """Every section of `EngineConfig`, in schema order (None: every pack's, importing
    each pack's schema; else the shared ones and those of the scope's engines)."""
    return tuple(engine_config(scope).model_fields)


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


def _spec(section: str, name: str, info: Any) -> OptionSpec:
    domain = next(m for m in info.metadata if isinstance(m, Domain))
    path = f"{section}.{name}"
    derived = _DERIVED.get(path)
    default = info.default
    if derived is not None:
        domain = type(domain)(**{**domain.__dict__, "nullable": False})
        default = derived[1]
    return OptionSpec(
        path=path,
        section=section,
        name=name,
        domain=domain,
        default=default,
        description=info.description or "",
        fact=section in FACT_SECTIONS,
        derived_default=derived[0] if derived else None,
    )


@cache
def _section_specs(section: str) -> dict[str, OptionSpec]:
    """The specs of one section's options ({} for a name that is no section)."""
    model = section_model(section)
    if model is None:
        return {}
    return {
        f"{section}.{name}": _spec(section, name, info) for name, info in model.model_fields.items()
    }


@cache
def _registry(scope: Scope | None) -> dict[str, OptionSpec]:
    specs: dict[str, OptionSpec] = {}
    for section in section_names(scope):
        specs.update(_section_specs(section))
    return specs


def options(scope: Iterable[str] | None = None) -> tuple[OptionSpec, ...]:
    """Every option and fact, in schema order: of the whole schema (None), or of the
    shared sections and the pack sections of `scope`'s engines (no other pack read)."""
    return _options(scope_of(scope))


@cache
def _options(scope: Scope | None) -> tuple[OptionSpec, ...]:
    return tuple(_registry(scope).values())


def schema_index(scope: Iterable[str] | None = None) -> Mapping[str, int]:
    """{path: position in `options(scope)`}; positions of a scope keep the whole schema's
    order (a scope's options are a subsequence of it)."""
    return _index(scope_of(scope))


@cache
def _index(scope: Scope | None) -> Mapping[str, int]:
    return {spec.path: i for i, spec in enumerate(_options(scope))}


def lookup(path: str) -> OptionSpec:
    """The spec of a dotted path, or UnknownPath with close matches."""
    spec = _section_specs(path.split(".", 1)[0]).get(path)
    if spec is None:
        raise UnknownPath(path, suggest(path))
    return spec


def suggest(path: str, n: int = 3) -> tuple[str, ...]:
    """Paths close to `path`, for "did you mean" messages."""
    paths = list(_registry(None))
    found = difflib.get_close_matches(path, paths, n=n, cutoff=0.6)
    if not found and "." in path:
        # a right option name under the wrong section is a common slip
        tail = path.rsplit(".", 1)[1]
        found = [p for p in paths if p.endswith("." + tail)][:n]
    if not found:
        found = difflib.get_close_matches(path.rsplit(".", 1)[-1], paths, n=n, cutoff=0.5)
    return tuple(found)


def fact_defaults() -> dict[str, Any]:
    """Default value of every fact path (the facts are shared sections: no pack is read)."""
    return {p: s.default for section in FACT_SECTIONS for p, s in _section_specs(section).items()}


def _split(path: str) -> tuple[str, str]:
    section, name = path.split(".", 1)
    return section, name


__all__ = [
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
    "SharedSections",
    "SpeculativeConfig",
    "Scope",
    "UnknownPath",
    "engine_config",
    "out_of_scope",
    "fact_defaults",
    "lookup",
    "options",
    "pack_sections",
    "schema_index",
    "scope_for",
    "scope_of",
    "section_model",
    "section_names",
    "suggest",
]
