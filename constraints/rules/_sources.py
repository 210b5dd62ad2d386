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


def plugin_py(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/plugin/plugin.py PluginConfig.validate", ref)


def torch_executor(ref: str) -> Source:
    return Source("TensorRT-LLM", "tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", ref)


def feature_check(ref: str) -> Source:
    return Source(
        "TensorRT-LLM",
        "tensorrt_llm/_torch/pyexecutor/_util.py validate_feature_combination",
        ref,
    )


def feature_matrix(ref: str) -> Source:
    return Source("TensorRT-LLM", "docs/source/features/feature-combination-matrix.md", ref)


def vllm_matrix(ref: str) -> Source:
    return Source("vLLM", "docs/features/README.md (compatibility matrix)", ref, "0.33.0")


def mlc(file: str, ref: str) -> Source:
    return Source("MLC LLM", file, ref, "79d603f0")
