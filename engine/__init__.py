"""The runtime that a solved EngineConfig drives: paged KV cache, scheduler, kernels, model.

Front door: ``LLM(model_dir, **llm_args)`` and ``SamplingParams``; ``Runtime`` is the step
loop under it, usable on its own with a solved ``EngineConfig`` and a loaded model.

The names below load on first use, so ``import engine.kv`` stays free of the solver.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "EngineError": "engine.errors",
    "LLM": "engine.llm",
    "BeamOutput": "engine.llm",
    "RequestOutput": "engine.llm",
    "StreamDelta": "engine.llm",
    "InvalidLlmArg": "engine.args",
    "build_claims": "engine.args",
    "device_facts": "engine.args",
    "PoolTooSmall": "engine.pool",
    "RequestRejected": "engine.runtime",
    "Runtime": "engine.runtime",
    "RuntimeStalled": "engine.runtime",
    "size_pool": "engine.pool",
    "InvalidSamplingParams": "engine.sampling",
    "SamplingParams": "engine.sampling",
    "InvalidPrompt": "engine.front_door",
    "ModelFolderError": "engine.front_door",
    "UnknownRequest": "engine.front_door",
}

__all__ = [
    "BeamOutput",
    "EngineError",
    "InvalidLlmArg",
    "InvalidPrompt",
    "InvalidSamplingParams",
    "LLM",
    "ModelFolderError",
    "PoolTooSmall",
    "RequestOutput",
    "RequestRejected",
    "Runtime",
    "RuntimeStalled",
    "UnknownRequest",
    "SamplingParams",
    "StreamDelta",
    "build_claims",
    "device_facts",
    "size_pool",
]

if TYPE_CHECKING:
    from engine.args import InvalidLlmArg, build_claims, device_facts
    from engine.errors import EngineError
    from engine.front_door import InvalidPrompt, ModelFolderError, UnknownRequest
    from engine.llm import LLM, BeamOutput, RequestOutput, StreamDelta
    from engine.pool import PoolTooSmall, size_pool
    from engine.runtime import RequestRejected, Runtime, RuntimeStalled
    from engine.sampling import InvalidSamplingParams, SamplingParams


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(import_module(module), name)
