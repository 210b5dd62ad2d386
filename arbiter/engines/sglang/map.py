"""The SGLang dialect's map: which `ServerArgs` fields become which options.

Fields with a shared option (`SHARED`), fields kept as written on `sglang_config`
(`OWN`), written fields SGLang resolves into a shared option (`RESOLVED`, with the rules
that decide it), explicit values SGLang rewrites (`ADJUSTABLE`), and the value maps of
`kv_cache_dtype` and `quantization` (SGLang 0.5.23 choices -> our enums).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.rules.base import release_key
from constraints.schema import lookup

from ...json_types import expect_choice

S = "sglang_config."
# SGLang field -> our option path (same meaning)
SHARED = {
    "tp_size": "parallel_config.tensor_parallel_size",
    "pp_size": "parallel_config.pipeline_parallel_size",
    "max_running_requests": "build_config.max_batch_size",
    "context_length": "build_config.max_seq_len",
    "mem_fraction_static": "kv_cache_config.free_gpu_memory_fraction",
    "max_total_tokens": "kv_cache_config.max_tokens",
    "enable_lora": "runtime_config.enable_lora",
    "kv_cache_dtype": "quant_config.kv_cache_quant_algo",
    "quantization": "quant_config.quant_algo",
}
# SGLang fields kept as written on sglang_config
OWN = (
    "attn_dp_size",
    "dp_size",
    "attn_cp_size",
    "chunked_prefill_size",
    "page_size",
    "disable_radix_cache",
    "disable_overlap_schedule",
    "enable_hierarchical_cache",
    "enable_deterministic_inference",
    "disaggregation_mode",
    "disaggregation_decode_enable_radix_cache",
    "disaggregation_transfer_backend",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "speculative_algorithm",
    "speculative_eagle_topk",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "enable_multi_layer_eagle",
    "enable_mixed_chunk",
    "disable_hybrid_swa_memory",
    "prefill_kv_cache_dequant_dtype",
)
# written field -> (the option SGLang resolves it into, the rules that decide it)
RESOLVED = {
    "chunked_prefill_size": ("build_config.max_num_tokens", ("sglang.attn-dp-divides-chunk",)),
    "page_size": (
        "kv_cache_config.tokens_per_block",
        ("sglang.backend-page-size", "sglang.fa4-page-128-on-blackwell"),
    ),
    "disable_radix_cache": (
        "kv_cache_config.enable_block_reuse",
        ("sglang.pd-decode-radix", "sglang.deterministic-radix-off"),
    ),
    "disable_overlap_schedule": (
        "runtime_config.disable_overlap_scheduler",
        ("sglang.pp-disables-overlap",),
    ),
}
# the options of RESOLVED as a report's text names them: each shares its field's name with
# the field's own option, and may read the other way round (the radix cache on is
# `enable_block_reuse` True, where `disable_radix_cache` True is off), so a number or a
# rule text that holds both names what SGLang runs (`arbiter.dialects.words.Words.text`)
OPTION_WORDS = {
    "kv_cache_config.enable_block_reuse": "the radix cache SGLang runs",
    "build_config.max_num_tokens": "the chunked prefill size SGLang runs",
    "kv_cache_config.tokens_per_block": "the page size SGLang runs",
    "runtime_config.disable_overlap_scheduler": "the overlap schedule SGLang turns off",
}
# explicit values SGLang rewrites: perf claims a rule may override
ADJUSTABLE = ("speculative_num_draft_tokens", "enable_mixed_chunk", "disable_hybrid_swa_memory")
KV_DTYPES = {
    "auto": None,
    "bf16": None,
    "bfloat16": None,
    "fp8_e4m3": "FP8",
    "fp8_e5m2": "FP8",
    "nvfp4": "NVFP4",
}
QUANTIZATION = {
    "fp8": "FP8",
    "w8a8_fp8": "FP8",
    "modelopt_fp8": "FP8",
    "awq": "W4A16_AWQ",
    "awq_marlin": "W4A16_AWQ",
    "gptq": "W4A16_GPTQ",
    "gptq_marlin": "W4A16_GPTQ",
    "modelopt_fp4": "NVFP4",
    "mxfp4": "MXFP4",
}

# methods SGLang's parser offers (arg_groups/choices.py QUANTIZATION_CHOICES) that its
# registry does not hold on a CUDA GPU: ModelConfig refuses them as unknown
# (python/sglang/srt/layers/quantization/__init__.py BASE_QUANTIZATION_METHODS registers
# plain `gptq` on NPU, CPU and XPU only; configs/model_config.py
# `_verify_quantization`: "Unknown quantization method"; v0.5.23). SGLang 0.5.16 still
# registers plain gptq (GPTQConfig) in BASE_QUANTIZATION_METHODS on every platform
# (python/sglang/srt/layers/quantization/__init__.py, v0.5.16): `release` before 0.5.23
# refuses none of them
NOT_ON_CUDA = {
    "gptq": (
        "SGLang 0.5.23 has no plain gptq method on a CUDA GPU (it registers gptq on NPU,"
        " CPU and XPU only; model_config.py refuses it as an unknown quantization"
        " method): use gptq_marlin"
    ),
}


def requirement_for(
    name: str, value: Any, values: Mapping[str, Any], release: str = "0.5.23"
) -> dict[str, Any] | None:
    """{option path: value} for one SGLang field, or None when arbiter has no option for
    it (the field is carried through); `release`: the SGLang release read against."""
    if value is None:
        return None
    if name == "kv_cache_dtype":
        # as written (the backends tell fp8_e4m3 and fp8_e5m2 apart), and the shared KV
        # precision where arbiter has one for it
        written = {S + name: lookup(S + name).check(value)}
        return {SHARED[name]: KV_DTYPES[value], **written} if value in KV_DTYPES else written
    if name == "attention_backend" and fa3_runs_triton(value, values):
        return {S + name: "triton"}
    if name == "quantization":
        expect_choice(value, QUANTIZATION, key=name, file=None)  # an object or a list: named
        if value in NOT_ON_CUDA and release_key(release) >= release_key("0.5.23"):
            raise ValueError(NOT_ON_CUDA[value])
        return {SHARED[name]: QUANTIZATION[value]} if value in QUANTIZATION else None
    if name == "speculative_algorithm":
        value = str(value).upper()
        if value == "NEXTN":
            value = "EAGLE"  # _resolve_speculative_algorithm_alias
    if name == "mem_fraction_static" and isinstance(value, float):
        value = round(value, 3)
    if name in SHARED:
        path = SHARED[name]
    elif name in OWN:
        path = S + name
    else:
        return None
    return {path: lookup(path).check(value)}


def split_same(values: Mapping[str, Any]) -> bool:
    """Prefill and decode backends both written and equal: SGLang takes that backend as
    attention_backend (overrides._attention_backend_default)."""
    prefill = values.get("prefill_attention_backend")
    return prefill is not None and prefill == values.get("decode_attention_backend")


def fa3_runs_triton(backend: Any, values: Mapping[str, Any]) -> bool:
    """SGLang runs triton for an fa3 attention_backend (written or its default) with an
    fp8_e5m2 KV cache (overrides._attention_backend_fa3_fp8_fallback; the rule
    sglang.fa3-fp8-e5m2-runs-triton), unless the split backends override it."""
    return (
        backend == "fa3" and values.get("kv_cache_dtype") == "fp8_e5m2" and not split_same(values)
    )


def split_fa3_runs_triton(values: Mapping[str, Any]) -> bool:
    """The prefill and decode backends both name fa3 with an fp8_e5m2 KV cache: SGLang
    sets attention_backend to fa3 from them (overrides._attention_backend_default), then
    its fa3 fallback makes it triton (overrides._attention_backend_fa3_fp8_fallback, run
    later by server_args.py _handle_attention_backend_compatibility; v0.5.16 and v0.5.23
    alike); the phases, named, still run fa3."""
    return (
        split_same(values)
        and values.get("prefill_attention_backend") == "fa3"
        and values.get("kv_cache_dtype") == "fp8_e5m2"
    )


def option_fields() -> dict[str, str]:
    """Option path -> the SGLang field that sets it (the reverse of SHARED, OWN and
    RESOLVED; the field written first wins where two resolve into one option)."""
    out = {path: name for name, path in SHARED.items()}
    out.update({S + name: name for name in OWN})
    for name, (path, _) in RESOLVED.items():
        out.setdefault(path, name)
    return out


def field_value(name: str, values: Mapping[str, Any]) -> Any:
    if name in SHARED:
        value = values[SHARED[name]]
        if name == "kv_cache_dtype":
            return {None: "auto", "FP8": "fp8_e4m3", "NVFP4": "nvfp4"}.get(value, value)
        if name == "quantization":
            back = {
                "FP8": "fp8",
                "W4A16_AWQ": "awq",
                "W4A16_GPTQ": "gptq",
                "NVFP4": "modelopt_fp4",
                "MXFP4": "mxfp4",
            }
            return back.get(value, value)
        return value
    return values[S + name]


__all__ = [
    "ADJUSTABLE",
    "OPTION_WORDS",
    "KV_DTYPES",
    "OWN",
    "QUANTIZATION",
    "RESOLVED",
    "S",
    "SHARED",
    "fa3_runs_triton",
    "field_value",
    "option_fields",
    "requirement_for",
    "split_fa3_runs_triton",
    "split_same",
]
