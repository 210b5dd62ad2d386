"""Parallelism rules: how a model's attention heads split over tensor-parallel ranks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.expr import Expr, one_of
from constraints.paths import MODEL, PARALLEL_CONFIG
from constraints.rules.base import Computed, Rule, Scope, Source
from constraints.schema import fact_defaults

TP = PARALLEL_CONFIG.tensor_parallel_size
HEADS = MODEL.num_attention_heads
KV_HEADS = MODEL.num_kv_heads
TP_SIZES = range(1, 65)  # the schema's domain of tensor_parallel_size


def _fact(facts: Mapping[str, Any], path: str) -> int:
    value = facts.get(path)
    return int(value if value is not None else fact_defaults()[path])


def shardable_sizes(num_heads: int, num_kv_heads: int) -> list[int]:
    """Tensor-parallel sizes that split the query heads evenly and either split the KV
    heads evenly or replicate each KV head over a whole number of ranks."""
    return [
        tp
        for tp in TP_SIZES
        if num_heads % tp == 0 and (num_kv_heads % tp == 0 or tp % num_kv_heads == 0)
    ]


def _heads_split(facts: Mapping[str, Any]) -> Expr:
    return one_of(TP, shardable_sizes(_fact(facts, HEADS), _fact(facts, KV_HEADS)))


RULES = [
    Rule(
        id="parallel.heads-divisible-by-tp",
        text=(
            "tensor_parallel_size must divide the attention heads, and divide the KV heads"
            " or be a multiple of them (each KV head replicated over whole ranks)"
        ),
        source=Source(
            "vLLM",
            "vllm/config.py",
            "ModelConfig.verify_with_parallel_config (query heads), get_num_kv_heads (KV"
            " heads split, or replicated when fewer than the ranks)",
            "0.9",
        ),
        expr=Computed(
            "tensor_parallel_size splits the attention heads and the KV heads",
            _heads_split,
            frozenset({TP, HEADS, KV_HEADS}),
        ),
        feasible={HEADS: 32, KV_HEADS: 8, TP: 4},
        infeasible={HEADS: 32, KV_HEADS: 8, TP: 3},
        scope=Scope(engine="any"),
    ),
]
