"""Which `vllm serve` fields are arbiter options, how their values translate, and back.

A field with the same meaning as a shared option maps onto it (max_num_seqs ->
build_config.max_batch_size, ...); a field only vLLM has maps onto `vllm_config`; every
other field is carried through untouched ("not arbitrated", with the reason). Sub-config
fields (speculative_config, eplb_config, compilation_config) map some of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constraints.engines.vllm.rules import ONLINE_QUANT as RULE_ONLINE_QUANT
from constraints.engines.vllm.schema import VLLM_SPECULATIVE_METHODS
from constraints.paths import SPECULATIVE_CONFIG

from ...json_types import as_int, expect_choice
from .fields import Given

V = "vllm_config."
TOP: dict[str, str] = {
    "max_num_seqs": "build_config.max_batch_size",
    "max_num_batched_tokens": "build_config.max_num_tokens",
    "max_model_len": "build_config.max_seq_len",
    "enable_prefix_caching": "kv_cache_config.enable_block_reuse",
    "enable_chunked_prefill": "scheduler_config.enable_chunked_context",
    "block_size": "kv_cache_config.tokens_per_block",
    "gpu_memory_utilization": "kv_cache_config.free_gpu_memory_fraction",
    "tensor_parallel_size": "parallel_config.tensor_parallel_size",
    "pipeline_parallel_size": "parallel_config.pipeline_parallel_size",
    "kv_cache_dtype": "kv_cache_config.dtype",
    "dtype": "build_config.dtype",
    "quantization": "quant_config.quant_algo",
    "enable_lora": "runtime_config.enable_lora",
    **{
        name: V + name
        for name in (
            "enforce_eager",
            "max_cudagraph_capture_size",
            "decode_context_parallel_size",
            "prefill_context_parallel_size",
            "data_parallel_size",
            "enable_expert_parallel",
            "enable_eplb",
            "max_num_active_seqs",
            "long_prefill_token_threshold",
            "max_loras",
            "max_cpu_loras",
            "max_lora_rank",
            "numa_bind",
            "mamba_block_size",
            "async_scheduling",
            "enable_batch_sharded_sampling",
        )
    },
}
# speculative_config keys -> options
SPEC: dict[str, str] = {
    "num_speculative_tokens": "build_config.max_draft_len",
    "prompt_lookup_max": "speculative_config.max_matching_ngram_size",
    "prompt_lookup_min": V + "prompt_lookup_min",
    "draft_tensor_parallel_size": V + "draft_tensor_parallel_size",
    "use_heterogeneous_vocab": V + "use_heterogeneous_vocab",
    "draft_sample_method": V + "draft_sample_method",
    "use_local_argmax_reduction": V + "use_local_argmax_reduction",
    "disable_padded_drafter_batch": V + "disable_padded_drafter_batch",
    "enable_adaptive_verification": V + "enable_adaptive_verification",
    "draft_lm_head_quantization": V + "draft_lm_head_quantization",
}
# the speculative_config keys above that are a flag or a name, not a count
SPEC_AS_GIVEN = (
    "use_heterogeneous_vocab",
    "draft_sample_method",
    "use_local_argmax_reduction",
    "disable_padded_drafter_batch",
    "enable_adaptive_verification",
    "draft_lm_head_quantization",
)
# the speculative_config keys above whose option says only whether a value is given
SPEC_GIVEN_ONLY = ("draft_lm_head_quantization",)
# speculative_config.method as written -> vllm_config.speculative_method (the method vLLM
# resolves: SpeculativeConfig.__post_init__ reads every MTP model type as "mtp")
METHOD_NAME = "speculative_config.method_name"
SPEC_METHOD = V + "speculative_method"
# speculative_config.method -> (decoding_type, EAGLE-3 heads)
METHODS: dict[str, tuple[str, bool]] = {
    "ngram": ("NGram", False),
    "eagle": ("Eagle", False),
    "eagle3": ("Eagle", True),
    "mtp": ("MTP", False),
    "draft_model": ("DraftTarget", False),
    "medusa": ("Medusa", False),
}
TYPE = SPECULATIVE_CONFIG.decoding_type
EAGLE3 = SPECULATIVE_CONFIG.eagle3
# kv_cache_dtype -> kv_cache_config.dtype (the FP8 spellings all store one byte)
KV_DTYPES = {
    "auto": "auto",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",
}
# dtype -> build_config.dtype (ModelConfig.dtype: half is float16, float is float32)
DTYPES = {
    "auto": "auto",
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "float32": "float32",
}
# quantization -> quant_config.quant_algo, where the weights' precision is ours too
QUANT = {
    "fp8": "FP8",
    "fp8_per_tensor": "FP8",
    "fp8_per_channel": "FP8_PER_CHANNEL_PER_TOKEN",
    "fp8_per_block": "FP8_BLOCK_SCALES",
    "awq": "W4A16_AWQ",
    "awq_marlin": "W4A16_AWQ",
    "auto_awq": "W4A16_AWQ",
    "gptq": "W4A16_GPTQ",
    "gptq_marlin": "W4A16_GPTQ",
    "auto_gptq": "W4A16_GPTQ",
    "modelopt_fp4": "NVFP4",
    "mxfp4": "MXFP4",
    "gpt_oss_mxfp4": "MXFP4",
}
# quantization methods vLLM applies to an unquantized checkpoint (online): the rules' list
# (rule vllm.quant.offline-needs-checkpoint-config)
ONLINE_QUANT = RULE_ONLINE_QUANT
QUANT_METHOD = V + "quantization_method"


@dataclass
class Reading:
    """What a vLLM argument set means for arbitration: option values (field -> (path,
    value)), the fields carried through (field -> reason), and notes."""

    values: dict[str, tuple[str, Any]] = field(default_factory=dict)
    carried: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def reading(given: Mapping[str, Given]) -> Reading:
    """Split the given fields into option values and carried fields."""
    out = Reading()
    for name, g in given.items():
        value = g.value
        if name == "speculative_config":
            _speculative(value or {}, out)
        elif name == "eplb_config":
            redundant = (value or {}).get("num_redundant_experts")
            if redundant is not None:
                out.values["eplb_config.num_redundant_experts"] = (
                    V + "num_redundant_experts",
                    int(redundant),
                )
            out.carried[name] = "EPLB tuning (only num_redundant_experts is arbitrated)"
        elif name == "compilation_config":
            _compilation(value or {}, out)
        elif name in ("numa_bind_nodes", "numa_bind_cpus"):
            if value is not None:
                out.values[name] = (V + "numa_bind_lists", True)
        elif name == "kv_cache_dtype":
            if value in KV_DTYPES:
                out.values[name] = (TOP[name], KV_DTYPES[value])
            else:
                out.carried[name] = f"{value}: no KV precision of arbiter's memory model"
        elif name == "dtype":
            if value in DTYPES:
                out.values[name] = (TOP[name], DTYPES[value])
            else:
                out.carried[name] = f"{value}: no compute dtype of arbiter's model"
        elif name == "quantization":
            if value is None:
                continue
            # the method as written, checked against the checkpoint by the rules; a name
            # outside vLLM's list is out of the option's domain (vLLM: "Unknown
            # quantization method")
            out.values["quantization_method"] = (QUANT_METHOD, value)
            if value in QUANT:
                out.values[name] = (TOP[name], QUANT[value])
            else:
                out.carried[name] = f"{value}: no weight precision of arbiter's model"
        elif name in TOP:
            if value is None:
                continue  # vLLM derives it
            if name == "max_cpu_loras" and value is None:
                continue
            if name == "gpu_memory_utilization":
                value = round(float(value), 3)
            out.values[name] = (TOP[name], value)
        else:
            out.carried[name] = "no arbiter option: written back as given"
    return out


def _speculative(spec: Mapping[str, Any], out: Reading) -> None:
    method = expect_choice(spec.get("method"), METHODS, key="speculative_config.method", file=None)
    model = str(spec.get("model") or "")
    if method is None and model:
        # SpeculativeConfig.__post_init__ infers the method from the draft model's name
        method = (
            "eagle3"
            if "eagle3" in model.lower()
            else ("eagle" if "eagle" in model.lower() else "draft_model")
        )
    if method is None and spec.get("num_speculative_tokens") is not None:
        method = "ngram" if "prompt_lookup_max" in spec or "prompt_lookup_min" in spec else None
    name = "mtp" if isinstance(method, str) and method.endswith("_mtp") else method
    if name in VLLM_SPECULATIVE_METHODS:
        out.values[METHOD_NAME] = (SPEC_METHOD, name)
    if method in METHODS:
        kind, eagle3 = METHODS[method]
        out.values["speculative_config.method"] = (TYPE, kind)
        if kind == "Eagle":
            out.values["speculative_config.eagle3"] = (EAGLE3, eagle3)
    elif method is not None:
        out.notes.append(f"speculative_config.method {method}: carried, not arbitrated")
    lo, hi = spec.get("prompt_lookup_min"), spec.get("prompt_lookup_max")
    if method == "ngram":
        # SpeculativeConfig.__post_init__: both unset -> 5 and 5; one unset -> the other
        if lo is None and hi is None:
            lo = hi = 5
        lo = hi if lo is None else lo
        hi = lo if hi is None else hi
    for key, path in SPEC.items():
        value = {"prompt_lookup_min": lo, "prompt_lookup_max": hi}.get(key, spec.get(key))
        if key in SPEC_GIVEN_ONLY:
            value = value is not None or None
        if value is not None:
            count = key not in SPEC_AS_GIVEN
            number = as_int(value, key=f"speculative_config.{key}", file=None) if count else value
            out.values[f"speculative_config.{key}"] = (path, number)
    out.carried["speculative_config"] = "draft model and its other settings: written back as given"


def _compilation(cfg: Mapping[str, Any], out: Reading) -> None:
    # an explicit capture ceiling only: the ceiling of explicit capture sizes is vLLM's
    # largest size within the budget, which the dialect derives (native.capture_sizes)
    size = cfg.get("max_cudagraph_capture_size")
    if size is not None:
        out.values["compilation_config.max_cudagraph_capture_size"] = (
            V + "max_cudagraph_capture_size",
            int(size),
        )
    out.carried["compilation_config"] = "compiler settings (only the capture ceiling is arbitrated)"


def back(name: str, path: str, value: Any, given: Any) -> Any:
    """A solved option value in the field's own terms (`given`: what the user wrote, kept
    when it means the same)."""
    if name == "kv_cache_dtype" and KV_DTYPES.get(given) == value:
        return given
    if name == "dtype" and DTYPES.get(given) == value:
        return given
    if name == "quantization":
        if QUANT.get(given) == value:
            return given
        reverse = {v: k for k, v in QUANT.items()}
        return reverse.get(value, value)
    return value


def option_fields() -> dict[str, str]:
    """Option path -> the vLLM field (dotted for a sub-config key) that sets it."""
    out = {path: name for name, path in TOP.items()}
    out.update({path: f"speculative_config.{key}" for key, path in SPEC.items()})
    out[TYPE] = "speculative_config.method"
    out[SPEC_METHOD] = "speculative_config.method"
    out[QUANT_METHOD] = "quantization"
    out[V + "num_redundant_experts"] = "eplb_config.num_redundant_experts"
    out[V + "numa_bind_lists"] = "numa_bind_nodes"
    return out


__all__ = [
    "KV_DTYPES",
    "METHODS",
    "ONLINE_QUANT",
    "QUANT",
    "Reading",
    "SPEC",
    "TOP",
    "back",
    "option_fields",
    "reading",
]
