"""Sizing the KV pool and reading the KV and scheduler specs off a solved EngineConfig.

Pool sizing follows TensorRT-LLM: the pool holds ``min(max_tokens, fraction * free /
bytes per token)`` tokens, rounded up to whole blocks, where ``fraction`` is
``kv_cache_config.free_gpu_memory_fraction`` and ``free`` is the memory free *after* the
weights are loaded. The bytes of a block and the KV element type come from the one module
of memory knowledge (``constraints.facts.memory``: ``block_bytes``, ``kv_dtype``), read off
the solved configuration's model facts, exactly as ``arbiter check`` counts them.

- CUDA: ``free`` is ``torch.cuda.mem_get_info()``'s free bytes.
- CPU: ``free`` is ``MemAvailable`` from ``/proc/meminfo``, capped at ``CPU_POOL_CAP``
  (2 GiB) and at what ``max_batch_size`` sequences of ``max_seq_len`` tokens (times the
  beam width) can ever hold: a CPU shares its memory with everything else, and every page
  of the pool a run touches stays resident (the pool reads as zeros, but its pages are made
  on first touch, ``engine.kv.storage``), so an oversized one costs memory for nothing.

The host pool for offloaded blocks gets ``host_cache_size // bytes_per_block`` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from constraints.facts import memory
from constraints.schema import EngineConfig
from engine.args import meminfo_mib
from engine.kernels import FP8_DTYPE
from engine.kv import KvCacheSpec, bytes_per_block
from engine.model import ModelArgs
from engine.scheduler import SchedulerConfig

# the errors live in engine.errors; importable from here as before
from .errors import PoolLayoutMismatch as PoolLayoutMismatch
from .errors import PoolTooSmall as PoolTooSmall
from .errors import UnsupportedKvDtype

CPU_POOL_CAP = 2 << 30
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
KV_DTYPES = {**DTYPES, "fp8": FP8_DTYPE}


def compute_dtype(config: EngineConfig) -> torch.dtype:
    """``build_config.dtype``, with ``auto`` meaning the checkpoint's dtype."""
    return DTYPES[memory.compute_dtype(config.flat())]


def kv_dtype(config: EngineConfig) -> torch.dtype:
    """The KV element type the memory module names for this configuration."""
    name = memory.kv_dtype(config.flat())
    if name not in KV_DTYPES:
        raise UnsupportedKvDtype(name, tuple(sorted(KV_DTYPES)))
    return KV_DTYPES[name]


def free_bytes(device: torch.device) -> int:
    """Memory free for the pool now (CUDA: after the weights; CPU: MemAvailable)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return meminfo_mib("MemAvailable") << 20


@dataclass(frozen=True)
class PoolSize:
    num_blocks: int
    host_blocks: int
    block_bytes: int
    budget_bytes: int
    source: str  # what bounded the pool: "max_tokens" or "memory"


def size_pool(
    config: EngineConfig, args: ModelArgs | None, device: torch.device, free: int | None = None
) -> PoolSize:
    """Blocks of the device pool and of the host pool; ``free`` overrides the probe.

    ``args`` is this rank's decoder (its KV heads already split over tensor-parallel
    ranks); when given, the storage it needs per block must be what was counted."""
    kv = config.kv_cache_config
    tpb = kv.tokens_per_block
    dtype = kv_dtype(config)  # one the runtime stores, or a named error
    # one block of this rank's pool, as `arbiter check` counts it (constraints.facts.memory)
    block = memory.block_bytes(config.flat())
    if args is not None:
        stored = bytes_per_block(
            args.num_hidden_layers, tpb, args.num_key_value_heads, args.head_dim, dtype
        )
        if stored != block:
            raise PoolLayoutMismatch(block, stored)
    free = free_bytes(device) if free is None else free
    budget = int(free * float(kv.free_gpu_memory_fraction))
    source = "memory"
    if device.type != "cuda":
        build = config.build_config
        useful = build.max_batch_size * build.max_beam_width * (build.max_seq_len + tpb)
        budget = min(budget, CPU_POOL_CAP, useful * block // tpb)
    tokens = budget * tpb // block
    if kv.max_tokens is not None and kv.max_tokens <= tokens:
        tokens, source = kv.max_tokens, "max_tokens"
    num_blocks = -(-tokens // tpb)
    if num_blocks < 1:
        raise PoolTooSmall(budget, block, source)
    return PoolSize(num_blocks, kv.host_cache_size // block, block, budget, source)


def kv_spec(
    config: EngineConfig, args: ModelArgs, device: torch.device, size: PoolSize
) -> KvCacheSpec:
    """The KV cache shape: pool size plus the solved reuse, window and offload options.

    The window is the solved ``max_attention_window``, or the model's own sliding window
    when every layer slides, so blocks that left the window go back to the pool.
    """
    kv = config.kv_cache_config
    window = kv.max_attention_window
    layer_windows = {args.layer_window(i) for i in range(args.num_hidden_layers)}
    if len(layer_windows) == 1 and None not in layer_windows:
        model_window = layer_windows.pop()
        window = model_window if window is None else min(window, model_window)
    return KvCacheSpec(
        num_layers=args.num_hidden_layers,
        num_kv_heads=args.num_key_value_heads,
        head_dim=args.head_dim,
        tokens_per_block=kv.tokens_per_block,
        num_blocks=size.num_blocks,
        dtype=kv_dtype(config),
        device=device,
        enable_block_reuse=kv.enable_block_reuse,
        enable_partial_reuse=kv.enable_partial_reuse,
        copy_on_partial_reuse=kv.copy_on_partial_reuse,
        max_attention_window=window,
        sink_token_length=kv.sink_token_length,
        host_cache_blocks=size.host_blocks,
        onboard_blocks=kv.onboard_blocks,
    )


def scheduler_config(config: EngineConfig, eos_token_id: int | None = None) -> SchedulerConfig:
    """The scheduler's limits and policies from the solved build and scheduler sections."""
    build, sched = config.build_config, config.scheduler_config
    return SchedulerConfig(
        max_batch_size=build.max_batch_size,
        max_num_tokens=build.max_num_tokens,
        capacity_policy=sched.capacity_scheduler_policy,
        enable_chunked_context=sched.enable_chunked_context,
        chunking_policy=sched.context_chunking_policy,
        max_seq_len=build.max_seq_len,
        eos_token_id=eos_token_id,
    )
