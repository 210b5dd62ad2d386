"""vLLM 0.33's rules on what the model allows."""

from __future__ import annotations

from constraints.expr import le, ref
from constraints.rules.base import Rule

from . import BOTH, LEN, both

RULES = [
    Rule(
        id="vllm.model.len-within-positions",
        text="max_model_len cannot exceed the model's max_position_embeddings"
        " (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)",
        source=both("vllm/config/model.py", "ModelConfig.get_and_verify_max_len"),
        scope=BOTH,
        expr=le(LEN, ref("model.max_position_embeddings")),
        feasible={LEN: 131072, "model.max_position_embeddings": 131072},
        infeasible={LEN: 262144, "model.max_position_embeddings": 131072},
    ),
]
