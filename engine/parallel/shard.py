"""Megatron-style sharding of a Llama-family model over tensor-parallel ranks.

Each rank holds:

- ``q_proj``: the output rows of its ``Hq / tp`` query heads (column-parallel);
- ``k_proj``, ``v_proj``: its ``Hkv / tp`` KV heads when ``tp`` divides ``Hkv``; when
  ``Hkv < tp`` (and ``tp`` is a multiple of ``Hkv``) the one KV head its query heads read,
  replicated over the ``tp / Hkv`` ranks that share it (GQA-aware, as vLLM does);
- ``o_proj``: the input columns of its query heads (row-parallel), output all-reduced;
- ``gate_proj``, ``up_proj``: ``intermediate / tp`` rows; ``down_proj`` those columns
  (row-parallel), output all-reduced;
- everything else (embedding, norms, LM head) whole. A row-parallel bias is kept on rank 0
  only, so the all-reduce adds it once.

The divisibility the arbiter's rule ``parallel.heads-divisible-by-tp`` demands is checked
again here (``ShardError``), since a model can reach the runtime without the arbiter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from engine.model import ModelArgs

from .errors import ShardError


@dataclass(frozen=True)
class ShardPlan:
    """The slices rank ``rank`` of ``world`` holds (in heads and intermediate rows)."""

    rank: int
    world: int
    q_heads: tuple[int, int]  # [start, stop) of the query heads
    kv_heads: tuple[int, int]  # [start, stop) of the KV heads
    intermediate: tuple[int, int]  # [start, stop) of the MLP rows

    @property
    def num_q_heads(self) -> int:
        return self.q_heads[1] - self.q_heads[0]

    @property
    def num_kv_heads(self) -> int:
        return self.kv_heads[1] - self.kv_heads[0]


def check_shardable(args: ModelArgs, world: int) -> None:
    """Raise ``ShardError`` unless heads and MLP rows split evenly over ``world`` ranks."""
    hq, hkv, inter = args.num_attention_heads, args.num_key_value_heads, args.intermediate_size
    if hq % world:
        raise ShardError("num_attention_heads", hq, world)
    if hkv % world and world % hkv:
        raise ShardError("num_key_value_heads", hkv, world)
    if inter % world:
        raise ShardError("intermediate_size", inter, world)


def shard_plan(args: ModelArgs, rank: int, world: int) -> ShardPlan:
    check_shardable(args, world)
    hq, hkv = args.num_attention_heads, args.num_key_value_heads
    q = hq // world
    if hkv >= world:
        kv = hkv // world
        kv_heads = (rank * kv, (rank + 1) * kv)
    else:  # replicated: rank's query heads all read KV head (rank * q) // (hq // hkv)
        head = rank * q // (hq // hkv)
        kv_heads = (head, head + 1)
    inter = args.intermediate_size // world
    return ShardPlan(
        rank, world, (rank * q, (rank + 1) * q), kv_heads, (rank * inter, (rank + 1) * inter)
    )


def local_args(args: ModelArgs, plan: ShardPlan) -> ModelArgs:
    """The shape one rank's KV pool has: its own KV heads (query heads for the record)."""
    return replace(
        args, num_attention_heads=plan.num_q_heads, num_key_value_heads=plan.num_kv_heads
    )


def _rows(linear: nn.Linear, start: int, stop: int) -> None:
    linear.weight = nn.Parameter(linear.weight.data[start:stop].clone(), requires_grad=False)
    if linear.bias is not None:
        linear.bias = nn.Parameter(linear.bias.data[start:stop].clone(), requires_grad=False)
    linear.out_features = stop - start


def _columns(linear: nn.Linear, start: int, stop: int, keep_bias: bool) -> None:
    linear.weight = nn.Parameter(linear.weight.data[:, start:stop].clone(), requires_grad=False)
    if linear.bias is not None and not keep_bias:
        linear.bias = nn.Parameter(torch.zeros_like(linear.bias.data), requires_grad=False)
    linear.in_features = stop - start


def shard_model(
    model: nn.Module, plan: ShardPlan, reduce: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    """Cut a fully loaded ``LlamaForCausalLM`` down to rank ``plan.rank``'s shard in place;
    ``reduce`` sums a row-parallel output over the ranks (an all-reduce)."""
    d = model.args.head_dim
    (q0, q1), (k0, k1), (i0, i1) = plan.q_heads, plan.kv_heads, plan.intermediate
    first = plan.rank == 0
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        _rows(attn.q_proj, q0 * d, q1 * d)
        _rows(attn.k_proj, k0 * d, k1 * d)
        _rows(attn.v_proj, k0 * d, k1 * d)
        _columns(attn.o_proj, q0 * d, q1 * d, keep_bias=first)
        attn.num_heads, attn.num_kv_heads = plan.num_q_heads, plan.num_kv_heads
        attn.tp_reduce = reduce
        _rows(mlp.gate_proj, i0, i1)
        _rows(mlp.up_proj, i0, i1)
        _columns(mlp.down_proj, i0, i1, keep_bias=first)
        mlp.tp_reduce = reduce
