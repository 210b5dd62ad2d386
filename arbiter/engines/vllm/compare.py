"""vLLM's side of `arbiter compare`: the engine-neutral intent's features on
vLLM's own options (`TABLE`, feature -> rule), the label the comparison shows, the
format its native config is written in, and the field list it is read against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...compare.mapping import FeatureMap, _one
from ...compare.vocabulary import Speculative


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


TABLE: dict[str, FeatureMap] = {
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

LABEL = "vLLM 0.33"
FORMAT = "yaml"  # the native config's format
SURFACE = "vllm-0.33"  # the field list the generated config is checked against (None: none)
BASE: dict[str, Any] = {}  # what every generated config starts from
