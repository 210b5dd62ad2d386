"""SGLang's section of the option schema (`sglang_config`): the `ServerArgs` options only
SGLang has, with their closed sets, composed into `constraints.schema.EngineConfig`."""

from __future__ import annotations

from typing import Annotated

from ... import paths as _paths
from ...domains import EnumDomain, IntDomain
from ...sections import BOOL, MAX_TOKENS
from ...sections import Section as _Section
from ...sections import opt as _opt

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
    # SGLang 0.5.16 only (server_args.py ATTENTION_BACKEND_CHOICES, v0.5.16); 0.5.23's
    # arg_groups/choices.py ATTENTION_BACKEND_CHOICES no longer lists it
    # (sglang.cutlass-mla-until-0.5.16)
    "cutlass_mla",
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


# sglang 0.5.23 ServerArgs.kv_cache_dtype choices (arg_groups/fields/model.py), with
# fp4_e2m1 of 0.5.16's (server_args.py ServerArgs.kv_cache_dtype, v0.5.16), which 0.5.16
# parses and refuses at KV-cache setup (sglang.fp4-e2m1-kv-deprecated-0.5.16)
SGLANG_KV_CACHE_DTYPES = (
    "auto",
    "bf16",
    "bfloat16",
    "fp4_e2m1",
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
    Choices from sglang 0.5.23 (`arbiter/engines/sglang/fields-0.5.yaml`)."""

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


# the pack's sections, composed into constraints.schema.EngineConfig (named sglang_...)
SECTIONS = {"sglang_config": SglangConfig}
# its options as checked paths (SGLANG_CONFIG.x == "sglang_config.x"); after SECTIONS, which
# the check reads
SGLANG_CONFIG = _paths.Section("sglang_config")

__all__ = [
    "SECTIONS",
    "SGLANG_ATTENTION",
    "SGLANG_CONFIG",
    "SGLANG_KV_CACHE_DTYPES",
    "SGLANG_SPECULATIVE",
    "SglangConfig",
]
