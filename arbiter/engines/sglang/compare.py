"""SGLang's side of `arbiter compare`: the engine-neutral intent's features on
SGLang's own options (`TABLE`, feature -> rule), the label the comparison shows, the
format its native config is written in, and the field list it is read against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...compare.mapping import FeatureMap, _one
from ...compare.vocabulary import Speculative

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


TABLE: dict[str, FeatureMap] = {
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

LABEL = "SGLang 0.5.23"
FORMAT = "yaml"  # the native config's format
SURFACE = "sglang-0.5.23"  # the field list the generated config is checked against (None: none)
BASE: dict[str, Any] = {}  # what every generated config starts from
