"""vLLM 0.33's rules on prefix caching."""

from __future__ import annotations

from constraints.expr import all_of, eq, gt, implies, ne, ref
from constraints.rules.base import Rule

from . import LEN, MAMBA_BLOCK, REUSE, SCOPE, src

RULES = [
    Rule(
        id="vllm.cache.mamba-block-size-needs-prefix-caching",
        text="mamba_block_size can only be set with enable_prefix_caching (a value equal to"
        " max_model_len counts as unset)",
        source=src("vllm/config/vllm.py", "VllmConfig.validate_mamba_block_size"),
        scope=SCOPE,
        expr=implies(all_of(gt(MAMBA_BLOCK, 0), ne(ref(MAMBA_BLOCK), ref(LEN))), eq(REUSE, True)),
        feasible={MAMBA_BLOCK: 256, LEN: 8192, REUSE: True},
        infeasible={MAMBA_BLOCK: 256, LEN: 8192, REUSE: False},
    ),
]
