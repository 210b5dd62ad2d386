"""The runtime that a solved EngineConfig drives: paged KV cache, scheduler, kernels, model.

Front door: ``LLM(model_dir, **llm_args)`` and ``SamplingParams``; ``Runtime`` is the step
loop under it, usable on its own with a solved ``EngineConfig`` and a loaded model.
"""

from __future__ import annotations

from engine.args import InvalidLlmArg, build_claims, device_facts
from engine.llm import LLM, BeamOutput, RequestOutput, StreamDelta
from engine.runtime import PoolTooSmall, RequestRejected, Runtime, size_pool
from engine.sampling import InvalidSamplingParams, SamplingParams

__all__ = [
    "LLM",
    "BeamOutput",
    "InvalidLlmArg",
    "InvalidSamplingParams",
    "PoolTooSmall",
    "RequestOutput",
    "RequestRejected",
    "Runtime",
    "SamplingParams",
    "StreamDelta",
    "build_claims",
    "device_facts",
    "size_pool",
]
