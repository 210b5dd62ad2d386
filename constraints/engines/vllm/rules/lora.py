"""vLLM 0.33's rules on LoRA adapters."""

from __future__ import annotations

from constraints.expr import Prod, all_of, any_of, eq, ge, implies, ne, one_of, ref
from constraints.rules.base import Rule

from ..schema import VLLM_CONFIG
from . import BOTH, BUDGET, DRAFT, LORA, LORA_RANKS, SEQS, TYPE, both

RULES = [
    Rule(
        id="vllm.lora.cpu-cache-holds-batch",
        text="max_cpu_loras must be at least max_loras",
        source=both("vllm/config/lora.py", "LoRAConfig._validate_lora_config"),
        scope=BOTH,
        expr=implies(
            eq(LORA, True),
            any_of(
                eq(VLLM_CONFIG.max_cpu_loras, 0),
                ge(VLLM_CONFIG.max_cpu_loras, ref(VLLM_CONFIG.max_loras)),
            ),
        ),
        feasible={LORA: True, VLLM_CONFIG.max_loras: 4, VLLM_CONFIG.max_cpu_loras: 4},
        infeasible={LORA: True, VLLM_CONFIG.max_loras: 4, VLLM_CONFIG.max_cpu_loras: 2},
    ),
    Rule(
        id="vllm.lora.rank-allowed",
        text="max_lora_rank must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512",
        source=both("vllm/config/lora.py", "LoRAConfig.max_lora_rank (MaxLoRARanks)"),
        scope=BOTH,
        expr=one_of(VLLM_CONFIG.max_lora_rank, LORA_RANKS),
        feasible={VLLM_CONFIG.max_lora_rank: 64},
        infeasible={VLLM_CONFIG.max_lora_rank: 48},
    ),
    Rule(
        id="vllm.lora.budget-holds-speculative-tokens",
        text="with LoRA and speculative decoding, max_num_batched_tokens must hold"
        " max_num_seqs x (num_speculative_tokens + 1)",
        source=both("vllm/engine/arg_utils.py", "EngineArgs.create_engine_config"),
        scope=BOTH,
        expr=implies(
            all_of(eq(LORA, True), ne(TYPE, "none")),
            ge(ref(BUDGET), Prod(ref(SEQS), ref(DRAFT) + 1)),
        ),
        feasible={LORA: True, TYPE: "NGram", SEQS: 256, DRAFT: 4, BUDGET: 1280},
        infeasible={LORA: True, TYPE: "NGram", SEQS: 256, DRAFT: 4, BUDGET: 1024},
    ),
]
