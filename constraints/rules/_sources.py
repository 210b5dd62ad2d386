"""Source records and scopes shared by the rule modules.

A source names the upstream file (and, where read, the release or commit) a rule is
re-authored from; a scope says where the rule holds. The scopes follow where upstream
evaluates the check:

- `TENSORRT`: the TensorRT-engine path of TensorRT-LLM (builder.py, plugin.py,
  commands/build.py, _common.check_max_num_tokens, the C++ batch manager and attention
  plugin of a built engine). The PyTorch backend never runs these.
- `PYTORCH`: the PyTorch backend (py_executor_creator.py, _util.validate_feature_combination,
  TorchLlmArgs validators, the feature-combination matrix).
- `TRTLLM`: TensorRT-LLM on either backend (BaseLlmArgs and decoding-config validators,
  shared C++ KV kernels).
- `ARBITRATOR`: the LLM API's `_ConfigArbitrator` claims, applied on TensorRT engines from
  0.9 until 0.12 (hlapi/llm_utils.py; gated off from 0.13.0.dev, commit 1069bc9d).
- `VLLM`, `MLC`: rules of those engines only.
"""

from __future__ import annotations

from .base import Scope, Source

TRT = "TensorRT-LLM"
TENSORRT = Scope("trtllm", ("tensorrt",))
PYTORCH = Scope("trtllm", ("pytorch",))
TRTLLM = Scope("trtllm")
ARBITRATOR = Scope("trtllm", ("tensorrt",), since="0.9", until="0.12")
VLLM = Scope("vllm")
MLC = Scope("mlc")


def arbitrator(ref: str) -> Source:
    return Source(
        TRT,
        "tensorrt_llm/hlapi/llm_utils.py (_ConfigArbitrator claims, applied in LlmArgs.setup)",
        ref,
        "0.9-0.12",
    )


def builder(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/builder.py build()", ref, "008b2b8d")


def build_cli(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/commands/build.py", ref, "008b2b8d")


def max_num_tokens(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/_common.py check_max_num_tokens", ref)


def batch_manager(ref: str) -> Source:
    return Source(TRT, "cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp", ref)


def llm_args(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/llmapi/llm_args.py", ref, "1.2")


def kv_manager(ref: str) -> Source:
    return Source(TRT, "cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp", ref)


def plugin_py(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/plugin/plugin.py PluginConfig.validate", ref, "c20322ff")


def torch_executor(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", ref)


def feature_check(ref: str) -> Source:
    return Source(TRT, "tensorrt_llm/_torch/pyexecutor/_util.py validate_feature_combination", ref)


def feature_matrix(ref: str) -> Source:
    return Source(TRT, "docs/source/features/feature-combination-matrix.md", ref, "01edceae")


def vllm_matrix(ref: str) -> Source:
    return Source("vLLM", "docs/features/README.md (compatibility matrix)", ref, "00712b31")


def mlc(file: str, ref: str) -> Source:
    return Source("MLC LLM", file, ref, "79d603f0")
