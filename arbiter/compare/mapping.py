"""The intent's features on each engine's own options, in that engine's config shape.

`native(engine, features)` gives a `Mapped`: the native config (TensorRT-LLM LLM-API YAML,
`vllm serve --config` YAML, SGLang `--config` YAML, MLC `EngineConfig` JSON), which native
keys each feature set, and the features the engine has no option for, each with the
reason. The table is documented in docs/engines.md ("Engine-neutral claim vocabulary").

Sources (release lines as the field lists of the engine packs, arbiter/engines/, hold them):
TensorRT-LLM 1.2 `TorchLlmArgs`; vLLM 0.33.0 `EngineArgs` and `SpeculativeConfig`
(vllm/config/speculative.py, `SpeculativeMethod`: ngram, draft_model, eagle3, mtp ...);
SGLang 0.5.23 `ServerArgs` (arg_groups/cuda_graph_hook.py: the per-phase CUDA-graph
switches; speculative_hook.py: with top-k 1 the draft tokens are num_steps + 1;
spec_info.py: STANDALONE is the draft-model algorithm); MLC LLM `EngineConfig`
(python/mlc_llm/serve/config.py: speculative_mode disable / small_draft / eagle / medusa).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialects import DIALECTS
from .vocabulary import Lora, Speculative

ENGINES = tuple(DIALECTS)  # the registry's engines, in its order
LABELS = {
    "trtllm": "TensorRT-LLM 1.2 (PyTorch)",
    "vllm": "vLLM 0.33",
    "sglang": "SGLang 0.5",
    "mlc": "MLC LLM",
}
# the field list each engine's generated config is checked against (None: no list)
SURFACES = {"trtllm": None, "vllm": "vllm-0.33", "sglang": "sglang-0.5", "mlc": None}


@dataclass
class Mapped:
    """An intent's features on one engine: `config` in the engine's own shape, `options`
    (feature -> the native keys it set), `missing` (feature -> why the engine cannot)."""

    engine: str
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


Rule = Callable[[Any, Mapping[str, Any]], "dict[str, Any] | str"]


def _put(config: dict[str, Any], values: Mapping[str, Any]) -> tuple[str, ...]:
    """Merge `values` into `config` (nested mappings merged key by key); the dotted keys."""
    keys = []
    for key, value in values.items():
        if isinstance(value, Mapping) and value and isinstance(config.get(key), dict):
            keys += [f"{key}.{k}" for k in _put(config[key], value)]
        else:
            config[key] = dict(value) if isinstance(value, Mapping) else value
            keys += [f"{key}.{k}" for k in value] if isinstance(value, Mapping) and value else [key]
    return tuple(keys)


def _one(key: str) -> Rule:
    return lambda value, _: {key: value}


def _nested(section: str, key: str) -> Rule:
    return lambda value, _: {section: {key: value}}


def _none(reason: str, allowed: Any = ()) -> Rule:
    """The engine has no option for this feature (`allowed`: values that need none)."""
    return lambda value, _: {} if value in allowed else reason


# ------------------------------------------------------------------------ TensorRT-LLM
TRT_DECODING = {"ngram": "NGram", "eagle3": "Eagle3", "mtp": "MTP", "draft_model": "Draft_Target"}


def _trt_speculative(spec: Speculative, _: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"decoding_type": TRT_DECODING[spec.kind]}
    if spec.kind == "mtp":  # MTP's draft length is its number of next-token layers
        config["num_nextn_predict_layers"] = spec.draft_tokens
    else:
        config["max_draft_len"] = spec.draft_tokens
    if spec.draft_model:
        config["speculative_model_dir"] = spec.draft_model
    return {"speculative_config": config}


def _trt_lora(lora: Lora, _: Mapping[str, Any]) -> dict[str, Any]:
    return {"lora_config": {"max_lora_rank": lora.max_rank, "max_loras": lora.adapters}}


TRTLLM: dict[str, Rule] = {
    "prefix_caching": _nested("kv_cache_config", "enable_block_reuse"),
    "chunked_prefill": _one("enable_chunked_prefill"),
    "speculative": _trt_speculative,
    "fp8_kv": lambda v, _: {"kv_cache_config": {"dtype": "fp8" if v else "auto"}},
    "lora": _trt_lora,
    "context_length": _one("max_seq_len"),
    "batch": _one("max_batch_size"),
    "token_budget": _one("max_num_tokens"),
    "tensor_parallel": _one("tensor_parallel_size"),
    "pipeline_parallel": _one("pipeline_parallel_size"),
    "expert_parallel": _one("moe_expert_parallel_size"),
    "attention_dp": _one("enable_attention_dp"),
    "cuda_graphs": lambda v, _: {"cuda_graph_config": {} if v else None},
    "kv_page_size": _nested("kv_cache_config", "tokens_per_block"),
    "kv_memory_share": _nested("kv_cache_config", "free_gpu_memory_fraction"),
}


# ------------------------------------------------------------------------------ vLLM
def _vllm_speculative(spec: Speculative, _: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"method": spec.kind, "num_speculative_tokens": spec.draft_tokens}
    if spec.draft_model:
        config["model"] = spec.draft_model
    return {"speculative-config": config}


def _vllm_expert_parallel(size: int, features: Mapping[str, Any]) -> dict[str, Any] | str:
    # vLLM has a switch, not a size: experts spread over data_parallel x tensor_parallel
    ranks = features.get("tensor_parallel", 1)
    if size == 1:
        return {"enable-expert-parallel": False}
    if size != ranks:
        return (
            "vLLM has no expert-parallel size: with enable_expert_parallel the experts spread "
            f"over data_parallel_size x tensor_parallel_size = {ranks} ranks, not {size}"
        )
    return {"enable-expert-parallel": True}


def _vllm_attention_dp(on: bool, features: Mapping[str, Any]) -> dict[str, Any]:
    # attention data-parallel in vLLM: DP ranks of TP 1 (MoE layers then span all ranks)
    if not on:
        return {}
    return {"data-parallel-size": features.get("tensor_parallel", 1), "tensor-parallel-size": 1}


VLLM: dict[str, Rule] = {
    "prefix_caching": _one("enable-prefix-caching"),
    "chunked_prefill": _one("enable-chunked-prefill"),
    "speculative": _vllm_speculative,
    "fp8_kv": lambda v, _: {"kv-cache-dtype": "fp8" if v else "auto"},
    "lora": lambda lora, _: {
        "enable-lora": True,
        "max-lora-rank": lora.max_rank,
        "max-loras": lora.adapters,
    },
    "context_length": _one("max-model-len"),
    "batch": _one("max-num-seqs"),
    "token_budget": _one("max-num-batched-tokens"),
    "tensor_parallel": _one("tensor-parallel-size"),
    "pipeline_parallel": _one("pipeline-parallel-size"),
    "expert_parallel": _vllm_expert_parallel,
    "attention_dp": _vllm_attention_dp,
    "cuda_graphs": lambda v, _: {"enforce-eager": not v},
    "kv_page_size": _one("block-size"),
    "kv_memory_share": _one("gpu-memory-utilization"),
}


# ---------------------------------------------------------------------------- SGLang
SGLANG_ALGORITHM = {
    "ngram": "NGRAM",
    "eagle3": "EAGLE3",
    "mtp": "EAGLE",
    "draft_model": "STANDALONE",
}


def _sglang_speculative(spec: Speculative, _: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"speculative-algorithm": SGLANG_ALGORITHM[spec.kind]}
    if spec.kind == "ngram":
        config["speculative-num-draft-tokens"] = spec.draft_tokens
        return config
    # a chain (top-k 1) of k steps verifies k + 1 tokens; MTP is EAGLE on the model's own
    # next-token head, so no draft path
    config.update(
        {
            "speculative-num-steps": spec.draft_tokens,
            "speculative-eagle-topk": 1,
            "speculative-num-draft-tokens": spec.draft_tokens + 1,
        }
    )
    if spec.draft_model:
        config["speculative-draft-model-path"] = spec.draft_model
    return config


def _sglang_chunked(on: bool, features: Mapping[str, Any]) -> dict[str, Any]:
    if not on:
        return {"chunked-prefill-size": -1}
    budget = features.get("token_budget")
    return {"chunked-prefill-size": budget} if budget else {}


def _sglang_budget(budget: int, features: Mapping[str, Any]) -> dict[str, Any]:
    # the chunk is the per-step prefill budget too, unless chunking is off
    if features.get("chunked_prefill", True):
        return {"max-prefill-tokens": budget, "chunked-prefill-size": budget}
    return {"max-prefill-tokens": budget}


SGLANG: dict[str, Rule] = {
    "prefix_caching": lambda v, _: {"disable-radix-cache": not v},
    "chunked_prefill": _sglang_chunked,
    "speculative": _sglang_speculative,
    "fp8_kv": lambda v, _: {"kv-cache-dtype": "fp8_e4m3" if v else "auto"},
    "lora": lambda lora, _: {
        "enable-lora": True,
        "max-lora-rank": lora.max_rank,
        "max-loras-per-batch": lora.adapters,
        # without adapters at launch SGLang needs the target modules too; "all" is its
        # model-aware sentinel (lora_hook.check_lora_server_args, 0.5.23)
        "lora-target-modules": ["all"],
    },
    "context_length": _one("context-length"),
    "batch": _one("max-running-requests"),
    "token_budget": _sglang_budget,
    "tensor_parallel": _one("tp-size"),
    "pipeline_parallel": _one("pp-size"),
    "expert_parallel": _one("ep-size"),
    "attention_dp": lambda v, f: {"attn-dp-size": f.get("tensor_parallel", 1)} if v else {},
    "cuda_graphs": lambda v, _: {
        "disable-decode-cuda-graph": not v,
        "disable-prefill-cuda-graph": not v,
    },
    "kv_page_size": _one("page-size"),
    "kv_memory_share": _one("mem-fraction-static"),
}


# ------------------------------------------------------------------------------- MLC
MLC_SPECULATIVE = {
    "ngram": "MLC has no n-gram speculation (speculative_mode: disable, small_draft, eagle, medusa)",
    "eagle3": "MLC has no EAGLE-3 (speculative_mode eagle is EAGLE-1)",
    "mtp": "MLC has no MTP speculation (speculative_mode: disable, small_draft, eagle, medusa)",
}


def _mlc_speculative(spec: Speculative, _: Mapping[str, Any]) -> dict[str, Any] | str:
    if spec.kind in MLC_SPECULATIVE:
        return MLC_SPECULATIVE[spec.kind]
    return {
        "speculative_mode": "small_draft",
        "spec_draft_length": spec.draft_tokens,
        "additional_models": [spec.draft_model],
    }


MLC: dict[str, Rule] = {
    "prefix_caching": lambda v, _: {"prefix_cache_mode": "radix" if v else "disable"},
    # both of MLC's prefill modes split a prompt into prefill_chunk_size pieces
    "chunked_prefill": lambda v, _: (
        {"prefill_mode": "hybrid"}
        if v
        else "MLC always chunks the prefill (prefill_mode is chunked or hybrid)"
    ),
    "speculative": _mlc_speculative,
    "fp8_kv": _none(
        "MLC fixes the KV cache dtype when the model library is compiled, not in EngineConfig",
        (False,),
    ),
    "lora": _none("MLC's EngineConfig has no LoRA"),
    "context_length": _one("max_single_sequence_length"),
    "batch": _one("max_num_sequence"),
    "token_budget": _one("prefill_chunk_size"),
    "tensor_parallel": _one("tensor_parallel_shards"),
    "pipeline_parallel": _one("pipeline_parallel_stages"),
    "expert_parallel": _none("MLC has no expert parallelism", (1,)),
    "attention_dp": _none("MLC has no data-parallel attention", (False,)),
    "cuda_graphs": _none(
        "MLC sets CUDA graphs in the model library's compile options (opt), not in EngineConfig"
    ),
    "kv_page_size": _one("kv_cache_page_size"),
    "kv_memory_share": _one("gpu_memory_utilization"),
}
MLC_BASE = {"mode": "server"}  # a serving comparison: MLC infers batch and KV as its server does

TABLES: dict[str, dict[str, Rule]] = {"trtllm": TRTLLM, "vllm": VLLM, "sglang": SGLANG, "mlc": MLC}
BASES: dict[str, dict[str, Any]] = {"mlc": MLC_BASE}
# applied last: they read or override what others set
LATE = ("attention_dp",)


def native(engine: str, features: Mapping[str, Any]) -> Mapped:
    """The features on `engine`'s own options (see the module docstring)."""
    table = TABLES[engine]
    mapped = Mapped(engine, config=dict(BASES.get(engine, {})))
    order = sorted(features, key=lambda name: name in LATE)
    for name in order:
        got = table[name](features[name], features)
        if isinstance(got, str):
            mapped.missing[name] = got
        else:
            mapped.options[name] = _put(mapped.config, got)
    return mapped


__all__ = ["ENGINES", "LABELS", "SURFACES", "TABLES", "Mapped", "native"]
