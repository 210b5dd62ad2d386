"""Source records shared by the rule modules (files as the rules catalog cites them)."""

from __future__ import annotations

from .base import Source


def arbitrator(ref: str) -> Source:
    return Source(
        "TensorRT-LLM",
        "tensorrt_llm/llmapi/llm_args.py (_ConfigArbitrator claims)",
        ref,
        "0.10-0.18",
    )


def builder(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/builder.py", ref)


def build_cli(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/commands/build.py", ref)


def max_num_tokens(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/_common.py check_max_num_tokens", ref)


def batch_manager(ref: str) -> Source:
    return Source(
        "TensorRT-LLM", "cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp", ref
    )


def llm_args(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/llmapi/llm_args.py", ref, "1.2")


def kv_manager(ref: str) -> Source:
    return Source("TensorRT-LLM", "cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp", ref)
