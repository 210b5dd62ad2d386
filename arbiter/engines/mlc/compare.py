"""MLC's side of `arbiter compare`: the engine-neutral intent's features on
MLC's own options (`TABLE`, feature -> rule), the label the comparison shows, the
format its native config is written in, and the field list it is read against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...compare.mapping import FeatureMap, _none, _one
from ...compare.vocabulary import Speculative

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


TABLE: dict[str, FeatureMap] = {
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
BASE = {"mode": "server"}  # a serving comparison: MLC infers batch and KV as its server does

LABEL = "MLC LLM"
FORMAT = "json"  # the native config's format
SURFACE = None  # the field list the generated config is checked against (None: none)
