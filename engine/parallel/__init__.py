"""Tensor parallelism over ``torch.distributed``: head and MLP sharding, rank processes.

``shard`` says which slice of each checkpoint tensor a rank holds and shards a loaded
model in place; ``worker`` is one rank's process (its model shard and its KV pool);
``group`` starts the ranks, drives them step by step and stops them all when one fails.
"""

from __future__ import annotations

from .errors import ParallelError, PipelineParallelUnsupported, RankFailed, TooManyRanks
from .shard import ShardPlan, shard_plan

__all__ = [
    "ParallelError",
    "PipelineParallelUnsupported",
    "RankFailed",
    "ShardPlan",
    "TooManyRanks",
    "shard_plan",
]
