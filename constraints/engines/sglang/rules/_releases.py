"""The SGLang rules re-authored from 0.5.23 against SGLang 0.5.16's own code: for each,
whether 0.5.16 holds it too (`BOTH`: the place in 0.5.16 that does) or only 0.5.23 does
(`ONLY_0_5_23`: why not, and the 0.5.16 rule standing in for it where there is one, in
`release_0_5_16.py`). `scoped` gives the rules of a module their release range.

Read against the sglang 0.5.16 wheel (python/sglang/srt/server_args.py, whose
`ServerArgs.__post_init__` resolves the arguments, and arg_groups/overrides.py,
arg_groups/speculative_hook.py, arg_groups/pd_disaggregation_hook.py of that release),
and checked by the differential replay of 0.5.16's own resolution
(benchmarks/oracle_replay_sglang.py --release 0.5.16).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from constraints.rules.base import Rule, Scope

V16 = "python/sglang/srt/server_args.py ServerArgs"
OVR = "python/sglang/srt/arg_groups/overrides.py"
SPEC = "python/sglang/srt/arg_groups/speculative_hook.py"
PD = "python/sglang/srt/arg_groups/pd_disaggregation_hook.py handle_pd_disaggregation"

# rule id -> where SGLang 0.5.16 holds the same rule (v0.5.16)
BOTH: dict[str, str] = {
    "machine.sglang-dp-replicas-fit-devices": "python/sglang/srt/managers/"
    "data_parallel_controller.py DataParallelController.launch_dp_schedulers (base_gpu_id"
    " advances tp_size x pp_size x gpu_id_step a replica)",
    "sglang.attn-dp-divides-tp": f"{V16}._handle_data_parallelism (assert tp_size % dp_size"
    " == 0 under --enable-dp-attention, read as attn_dp_size dp_size)",
    "sglang.heads-divisible-by-attn-tp": "python/sglang/srt/models/llama.py LlamaAttention."
    "__init__ (heads % get_parallel().tp_size; attention TP width: layers/dp_attention.py"
    " compute_dp_attention_world_info)",
    "sglang.attn-dp-no-dp-replicas": "layers/dp_attention.py compute_dp_attention_world_info"
    " (under --enable-dp-attention dp_size is the attention DP size: no replicas beside it)",
    "sglang.attn-dp-divides-chunk": f"{V16}._handle_data_parallelism (chunked_prefill_size"
    " //= dp_size)",
    "sglang.chunk-multiple-of-page": f"{V16}.check_server_args (chunked_prefill_size %"
    " page_size, not on a decode server)",
    "sglang.chunk-switches-chunked-prefill": "python/sglang/srt/managers/scheduler.py"
    " Scheduler.init_chunked_prefill",
    "sglang.attn-cp-divides-tp": f"{V16}._handle_context_parallelism",
    "sglang.ranks-divide-over-nodes": f"{V16}.check_server_args",
    "sglang.dp-replicas-single-node": f"{V16}.check_server_args (multi-node data parallel"
    " only with dp attention)",
    "sglang.eagle-topk1-draft-tokens": f"{SPEC} _handle_eagle_family",
    "sglang.eagle-topk-page-tree-backend": f"{SPEC} _handle_eagle_family"
    " (_PAGE_TREE_SPEC_BACKENDS)",
    "sglang.trtllm-mha-spec-topk1": f"{SPEC} _handle_eagle_family",
    "sglang.ngram-topk-page-flashinfer": f"{SPEC} _handle_ngram",
    "sglang.ngram-no-attn-dp": f"{SPEC} _handle_ngram",
    "sglang.standalone-no-attn-dp": f"{SPEC} _handle_eagle_family",
    "sglang.spec-max-running-requests": f"{SPEC} _handle_eagle_family / _handle_ngram",
    "sglang.lora-needs-adapters-or-shape": f"{V16}.check_lora_server_args",
    "sglang.pp-disables-overlap": f"{OVR} _pipeline_parallel_overlap_disable",
    "sglang.hicache-needs-radix": f"{V16}._handle_cache_compatibility",
    "sglang.radix-cache-as-written": f"{PD}; {V16}._handle_deterministic_inference",
    "sglang.pd-decode-radix": PD,
    "sglang.pd-decode-radix-not-fake": PD,
    "sglang.fa4-page-128-on-blackwell": f"{OVR} _fa4_page_constraint",
    "sglang.backend-disables-cuda-graph": f"{V16}._handle_attention_backend_compatibility",
    "sglang.flex-attention-no-speculative": f"{V16}._handle_attention_backend_compatibility",
    "sglang.cutedsl-mla-decode-only-sm100": f"{OVR} _cutedsl_prefill_backend_fill",
    "sglang.trtllm-mla-needs-blackwell": f"{OVR} _mla_kv_cache_dtype_checks"
    " (is_blackwell_supported)",
    "sglang.context-length-within-model": "python/sglang/srt/configs/model_config.py"
    " ModelConfig._derive_context_length",
    "sglang.fa3-fp8-e5m2-runs-triton": f"{OVR} _attention_backend_fa3_fp8_fallback",
    # 0.5.16's list adds fp4_e2m1, which 0.5.23 lacks (release_values.py)
    "sglang.trtllm-mla-kv-dtype": f"{OVR} _mla_kv_cache_dtype_checks",
    "sglang.cutedsl-mla-kv-dtype": f"{OVR} _cutedsl_prefill_backend_fill",
    "sglang.mxfp8-kv-needs-blackwell": f"{V16}._handle_mxfp8_kv_cache_compatibility",
    # implied there: 0.5.16 prefills on trtllm_mha only on SM100 at all
    "sglang.trtllm-mha-sm120-prefill-no-fp8-e4m3": f"{V16}._handle_attention_backend_compatibility",
    "sglang.default-backend-mla": f"{V16}._get_default_attn_backend (MLA: fa3 on Hopper,"
    " flashinfer on SM100, triton elsewhere)",
    "sglang.gpt-oss-default-backend": f"{OVR} _gpt_oss_overrides",
    "sglang.gpt-oss-backends": f"{V16}._handle_model_specific_adjustments (GptOssForCausalLM)",
    "sglang.llama4-default-backend": f"{OVR} _llama4_overrides",
    "sglang.llama4-backends": f"{V16}._handle_model_specific_adjustments (Llama4)",
    "sglang.deepseek-v3-sm100-trtllm-mla": f"{OVR} _deepseek_family_overrides",
    "sglang.gemma-no-hybrid-swa-memory": f"{OVR} _gemma2_gemma3_overrides",
    "sglang.nvfp4-kv-needs-blackwell": f"{V16}._handle_kv4_compatibility",
    "sglang.kv4-mha-backends": f"{V16}._handle_kv4_compatibility (KV4_FA4_MHA /"
    " KV4_ATTENTION_MHA_BACKEND_CHOICES)",
    # 0.5.16's lists add cutlass_mla, which 0.5.23 lacks (release_values.py)
    "sglang.kv4-mla-backends": f"{V16}._handle_kv4_compatibility (KV4_FA4_MLA /"
    " KV4_ATTENTION_MLA_BACKEND_CHOICES)",
    "sglang.deterministic-attention-backends": f"{OVR} _deterministic_attention_backend",
    "sglang.deterministic-default-backend": f"{OVR} _deterministic_attention_backend",
    "sglang.deterministic-radix-off": f"{V16}._handle_deterministic_inference"
    " (RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND)",
}

# rule id -> why SGLang 0.5.16 does not hold it (and its own rule, where it has one)
ONLY_0_5_23: dict[str, str] = {
    "sglang.deterministic-absorbed-mla-backends": "0.5.16 admits fa3 and triton only for"
    " DeepSeek-family models (sglang.deterministic-deepseek-backends-0.5.16)",
    "sglang.chunk-by-gpu-memory": "0.5.16 gives the 20-35 GiB tier 2048 tokens"
    " (sglang.chunk-by-gpu-memory-0.5.16)",
    "sglang.spec-mixed-chunk-off": "every 0.5.16 speculative algorithm turns mixed chunked"
    " prefill off, EAGLE's too (sglang.spec-mixed-chunk-off-0.5.16)",
    "sglang.lora-speculative": "0.5.16 runs LoRA only with NGRAM speculative decoding"
    " (sglang.lora-speculative-0.5.16)",
    "sglang.pp-speculative-eagle-only": "0.5.16 runs no speculative decoding with pipeline"
    " parallelism (sglang.pp-no-speculative-0.5.16)",
    "sglang.pp-speculative-prefill-only": "0.5.16 runs no speculative decoding with pipeline"
    " parallelism (sglang.pp-no-speculative-0.5.16)",
    "sglang.backend-page-size": "0.5.16 takes trtllm_mha pages of 16-64 tokens only and has"
    " no hpc_ops backend (sglang.backend-page-size-0.5.16)",
    "sglang.trtllm-mha-needs-hopper-or-blackwell": "0.5.16 prefills on trtllm_mha only on"
    " SM100 (sglang.trtllm-mha-needs-hopper-or-blackwell-0.5.16)",
    "sglang.uno-needs-fa3": "0.5.16 has no UNO speculative algorithm",
    "sglang.default-backend-mha": "0.5.16 picks trtllm_mha on SM100 for K and V rows of"
    " different widths too (no fa4 case) and makes no exception for DFLASH"
    " (sglang.default-backend-mha-0.5.16)",
    "sglang.nvfp4-kv-phases": "0.5.16 has no prefill_kv_cache_dequant_dtype and no NVFP4"
    " phase split",
    "sglang.dequant-dtype-needs-nvfp4": "0.5.16 has no prefill_kv_cache_dequant_dtype",
    "sglang.nvfp4-trtllm-mha-speculative": "0.5.16 has no uses_sm100_trtllm_nvfp4 checks",
    "sglang.nvfp4-trtllm-mha-no-transfer": "0.5.16 has no uses_sm100_trtllm_nvfp4 checks",
    "sglang.cutlass-mla-until-0.5.16": "0.5.16 has the cutlass_mla backend (server_args.py"
    " ATTENTION_BACKEND_CHOICES; release_values.py)",
    "sglang.fp4-e2m1-kv-until-0.5.16": "0.5.16's parser has fp4_e2m1 and refuses it at"
    " KV-cache setup (sglang.fp4-e2m1-kv-deprecated-0.5.16)",
}

# rule id -> the 0.5.16 check arbiter models with no 0.5.23 form, and why (release_0_5_16.py)
ONLY_0_5_16: dict[str, str] = {
    "sglang.deterministic-deepseek-backends-0.5.16": "0.5.23's form of the check admits"
    " ascend and fa4 too (sglang.deterministic-absorbed-mla-backends)",
}

SINCE_0_5_23 = Scope(engine="sglang", since="0.5.23")
UNTIL_0_5_16 = Scope(engine="sglang", since="0.5", until="0.5.16")


def scoped(rules: Iterable[Rule]) -> list[Rule]:
    """`rules` with the rules 0.5.16 does not hold scoped to 0.5.23 on."""
    return [replace(r, scope=SINCE_0_5_23) if r.id in ONLY_0_5_23 else r for r in rules]
