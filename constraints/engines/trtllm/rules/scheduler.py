"""Scheduler rules: chunked context on a TensorRT engine (the C++ batch manager checks them)."""

from __future__ import annotations

from constraints.expr import all_of, eq, implies
from constraints.paths import SCHEDULER_CONFIG
from constraints.rules._sources import TENSORRT, batch_manager
from constraints.rules.base import Rule

CHUNKED = SCHEDULER_CONFIG.enable_chunked_context

RULES = [
    Rule(
        id="scheduler.chunked-context-needs-paged-context-fmha",
        text="chunked context needs paged context FMHA",
        source=batch_manager("T1, T40"),
        scope=TENSORRT,
        expr=implies(eq(CHUNKED, True), eq("plugin_config.use_paged_context_fmha", True)),
        feasible={CHUNKED: True, "plugin_config.use_paged_context_fmha": True},
        infeasible={CHUNKED: True, "plugin_config.use_paged_context_fmha": False},
    ),
    Rule(
        id="scheduler.chunked-context-needs-paged-kv",
        text="chunked context needs context FMHA and a paged KV cache",
        source=batch_manager("T40"),
        scope=TENSORRT,
        expr=implies(
            eq(CHUNKED, True),
            all_of(
                eq("plugin_config.context_fmha", True), eq("plugin_config.paged_kv_cache", True)
            ),
        ),
        feasible={CHUNKED: True, "plugin_config.paged_kv_cache": True},
        infeasible={CHUNKED: True, "plugin_config.paged_kv_cache": False},
    ),
]
