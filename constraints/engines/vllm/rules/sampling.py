"""vLLM 0.33's rules on sampling."""

from __future__ import annotations

from constraints.expr import eq, ge, gt, implies, ref
from constraints.rules.base import Rule

from . import SCOPE, SEQS, SHARDED_SAMPLING, TP, VLLM_CONFIG_PY, src

RULES = [
    Rule(
        id="vllm.parallel.batch-sharded-sampling-needs-tp",
        text="enable_batch_sharded_sampling needs tensor_parallel_size above 1 (nothing to"
        " shard otherwise)",
        source=src(VLLM_CONFIG_PY, "VllmConfig._validate_batch_sharded_sampling"),
        scope=SCOPE,
        expr=implies(eq(SHARDED_SAMPLING, True), gt(TP, 1)),
        feasible={SHARDED_SAMPLING: True, TP: 2},
        infeasible={SHARDED_SAMPLING: True, TP: 1},
    ),
    Rule(
        id="vllm.parallel.batch-sharded-sampling-seqs-cover-tp",
        text="enable_batch_sharded_sampling needs max_num_seqs at least tensor_parallel_size"
        " (requests go to ranks whole)",
        source=src(VLLM_CONFIG_PY, "VllmConfig._validate_batch_sharded_sampling"),
        scope=SCOPE,
        expr=implies(eq(SHARDED_SAMPLING, True), ge(SEQS, ref(TP))),
        feasible={SHARDED_SAMPLING: True, TP: 4, SEQS: 4},
        infeasible={SHARDED_SAMPLING: True, TP: 4, SEQS: 2},
    ),
]
