"""MLC LLM rules that touch options we share with it (the MLC dialect maps its
`EngineConfig` onto them): prefill mode under speculative decoding, history size (MLC's
recurrent-state class serves RWKV), and the KV page size its engine accepts."""

from __future__ import annotations

from constraints.expr import eq, implies, ne, one_of
from constraints.rules._sources import mlc
from constraints.rules.base import Rule, Scope
from constraints.schema import RWKV_ARCHITECTURES

MLC = Scope(engine="mlc")

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
        scope=MLC,
    ),
    Rule(
        id="mlc.history-size-recurrent-only",
        text="only a recurrent model (MLC's RNN state serves RWKV) keeps history: max_history_size must be 0 otherwise",
        source=mlc("cpp/serve/config.cc", "M9"),
        expr=implies(
            ~one_of("model.architecture", RWKV_ARCHITECTURES),
            eq("runtime_config.max_history_size", 0),
        ),
        feasible={"model.architecture": "Rwkv6ForCausalLM", "runtime_config.max_history_size": 8},
        infeasible={"model.architecture": "LlamaForCausalLM", "runtime_config.max_history_size": 8},
        scope=MLC,
    ),
    Rule(
        id="mlc.kv-page-size-16",
        text="MLC's engine builds its paged KV cache with 16-token pages only (kv_cache_page_size 16)",
        source=mlc(
            "python/mlc_llm/serve/config.py (kv_cache_page_size: int = 16); cpp/serve/config.cc",
            "issue 11: other page sizes refused by the engine",
        ),
        expr=eq("kv_cache_config.tokens_per_block", 16),
        feasible={"kv_cache_config.tokens_per_block": 16},
        infeasible={"kv_cache_config.tokens_per_block": 32},
        scope=MLC,
    ),
]
