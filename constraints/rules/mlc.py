"""MLC LLM rules that touch options we share with it (the MLC dialect maps its
`EngineConfig` onto them): prefill mode under speculative decoding, and history size."""

from __future__ import annotations

from ..expr import eq, implies, ne, one_of
from ..schema import RECURRENT_ARCHITECTURES
from ._sources import mlc
from .base import Rule

RULES = [
    Rule(
        id="mlc.speculative-needs-chunked-prefill",
        text="speculative decoding is not implemented with hybrid prefill: prefill_mode must be chunked",
        source=mlc("cpp/serve/engine.cc", "M11"),
        expr=implies(
            ne("speculative_config.decoding_type", "none"),
            eq("runtime_config.prefill_mode", "chunked"),
        ),
        feasible={
            "speculative_config.decoding_type": "Eagle",
            "runtime_config.prefill_mode": "chunked",
        },
        infeasible={
            "speculative_config.decoding_type": "Eagle",
            "runtime_config.prefill_mode": "hybrid",
        },
    ),
    Rule(
        id="mlc.history-size-recurrent-only",
        text="a KV-cache model keeps no recurrent history (max_history_size must be 0)",
        source=mlc("cpp/serve/config.cc", "M9"),
        expr=implies(
            ~one_of("model.architecture", RECURRENT_ARCHITECTURES),
            eq("runtime_config.max_history_size", 0),
        ),
        feasible={"model.architecture": "MambaForCausalLM", "runtime_config.max_history_size": 8},
        infeasible={"model.architecture": "LlamaForCausalLM", "runtime_config.max_history_size": 8},
    ),
]
