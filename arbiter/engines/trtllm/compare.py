"""TensorRT-LLM's side of `arbiter compare`: the engine-neutral intent's features on
TensorRT-LLM's own options (`TABLE`, feature -> rule), the label the comparison shows, the
format its native config is written in, and the field list it is read against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...compare.mapping import FeatureMap, _nested, _one
from ...compare.vocabulary import Lora, Speculative

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


TABLE: dict[str, FeatureMap] = {
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

LABEL = "TensorRT-LLM 1.2 (PyTorch)"
FORMAT = "yaml"  # the native config's format
SURFACE = None  # the field list the generated config is checked against (None: none)
BASE: dict[str, Any] = {}  # what every generated config starts from
