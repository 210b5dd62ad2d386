"""vLLM 0.33's rules on the scheduler's budgets."""

from __future__ import annotations

from constraints.expr import eq, ge, implies, le, ref
from constraints.rules.base import Rule

from ..schema import VLLM_CONFIG
from . import BOTH, BUDGET, CHUNKED, LEN, SCHEDULER, SCOPE, SEQS, both, src

RULES = [
    Rule(
        id="vllm.scheduler.budget-holds-seqs",
        text="max_num_batched_tokens must be at least max_num_seqs (one token per sequence)",
        source=both(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=BOTH,
        expr=ge(BUDGET, ref(SEQS)),
        feasible={BUDGET: 256, SEQS: 256},
        infeasible={BUDGET: 128, SEQS: 256},
    ),
    Rule(
        id="vllm.scheduler.budget-holds-model-len-without-chunking",
        text="with chunked prefill off, max_num_batched_tokens must be at least max_model_len",
        source=both(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=BOTH,
        expr=implies(eq(CHUNKED, False), ge(BUDGET, ref(LEN))),
        feasible={CHUNKED: True, BUDGET: 2048, LEN: 8192},
        infeasible={CHUNKED: False, BUDGET: 2048, LEN: 8192},
    ),
    Rule(
        id="vllm.scheduler.active-seqs-within-seqs",
        text="max_num_active_seqs cannot be greater than max_num_seqs",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=le(VLLM_CONFIG.max_num_active_seqs, ref(SEQS)),
        feasible={VLLM_CONFIG.max_num_active_seqs: 64, SEQS: 64},
        infeasible={VLLM_CONFIG.max_num_active_seqs: 128, SEQS: 64},
    ),
    Rule(
        id="vllm.scheduler.long-prefill-within-model-len",
        text="long_prefill_token_threshold cannot be greater than max_model_len",
        source=src(SCHEDULER, "SchedulerConfig.verify_max_model_len"),
        scope=SCOPE,
        expr=le(VLLM_CONFIG.long_prefill_token_threshold, ref(LEN)),
        feasible={VLLM_CONFIG.long_prefill_token_threshold: 4096, LEN: 4096},
        infeasible={VLLM_CONFIG.long_prefill_token_threshold: 8192, LEN: 4096},
    ),
]
