"""vLLM 0.33's rules on CUDA-graph capture sizes (default rules: vLLM adjusts them)."""

from __future__ import annotations

from constraints.expr import eq, implies, le, ref
from constraints.rules.base import Rule

from . import BUDGET, EAGER, GRAPH_MAX, SCOPE, src

RULES = [
    Rule(
        id="vllm.cudagraph.ceiling-within-budget",
        text="the largest CUDA-graph capture size is capped at max_num_batched_tokens",
        source=src("vllm/config/vllm.py", "VllmConfig._set_cudagraph_sizes"),
        scope=SCOPE,
        kind="default",
        expr=le(GRAPH_MAX, ref(BUDGET)),
        feasible={GRAPH_MAX: 2048, BUDGET: 8192},
        infeasible={GRAPH_MAX: 2048, BUDGET: 1024},
    ),
    Rule(
        id="vllm.cudagraph.none-when-eager",
        text="enforce_eager captures no CUDA graphs (a capture size is ignored)",
        source=src("vllm/config/vllm.py", "VllmConfig._set_cudagraph_sizes"),
        scope=SCOPE,
        kind="default",
        expr=implies(eq(EAGER, True), eq(GRAPH_MAX, 0)),
        feasible={EAGER: True, GRAPH_MAX: 0},
        infeasible={EAGER: True, GRAPH_MAX: 512},
    ),
]
