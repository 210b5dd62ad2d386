"""TensorRT-LLM's memory terms: its KV budget is a fraction of the memory left free once
the model is loaded, not of the whole device.

Both backends size the KV pool after the weights (and the rest of the run's memory) are
in place:

- PyTorch backend: `KvCacheCreator.configure_kv_cache_capacity` runs a warm-up with a small
  KV cache, then `_cal_max_memory` sets the KV memory to (total device memory - peak
  memory of the warm-up, torch and non-torch, + the warm-up's own KV) x
  `free_gpu_memory_fraction`, and a user's `max_tokens` takes the min
  (tensorrt_llm/_torch/pyexecutor/_util.py @00043967).
- TensorRT-engine backend: `BaseKVCacheManager::calculateFreeMemBytes` takes the free
  device memory (cudaMemGetInfo, after the engine and its runtime buffers are allocated)
  x the fraction, and `calculateMaxNumBlocks` caps it with `max_tokens`
  (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, stored version read).

So KV budget = fraction x (device memory - weights - workspace), with the workspace the
project's activation estimate (`estimate_coefficients`) standing for the warm-up's peak.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...facts.memory import MemoryTerms
from .rules.kv_cache import kv_sequence_tokens

# the attention-DP layout (facts/memory.py attention_dp, the sources there)
TRT_ADP = "parallel_config.enable_attention_dp"


class TrtllmMemoryTerms(MemoryTerms):
    """TensorRT-LLM (both backends): the fraction of the memory free after loading, the
    engine-neutral workspace estimate, the extra layers of an uneven pipeline split on
    the first stages (Mapping.pp_layers), and attention DP (`enable_attention_dp`)."""

    name = "arbiter"
    engine = "trtllm"
    budget_after_load = True
    attention_dp_path = TRT_ADP
    source = (
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/_util.py"
        " KvCacheCreator._cal_max_memory @00043967; cpp/tensorrt_llm/batch_manager/"
        "kvCacheManager.cpp BaseKVCacheManager::calculateFreeMemBytes"
    )

    def held_tokens(self, values: Mapping[str, Any]) -> tuple[int, str] | None:
        """The KV manager's longer sequences (draft tokens, the overlap scheduler:
        `kv_cache.kv_sequence_tokens`), for values that name the backend."""
        if "runtime_config.backend" not in values:
            return None
        return kv_sequence_tokens(dict(values))


TERMS = TrtllmMemoryTerms()
