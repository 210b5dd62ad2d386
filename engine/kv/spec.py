"""The shape of a paged KV cache, and how many blocks fit in a byte budget.

`KvCacheSpec` is the one value the runtime derives from a solved EngineConfig and hands to
the KV cache; everything else (pool tensors, block manager, layout) is built from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.kv.errors import InvalidKvSpec

# K and V: a block stores both for every layer.
KV_FACTOR = 2


def dtype_bytes(dtype: torch.dtype) -> int:
    """Bytes per element of `dtype` (fp8 types are one byte)."""
    return torch.empty((), dtype=dtype).element_size()


def bytes_per_block(
    num_layers: int, tokens_per_block: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype
) -> int:
    """Bytes one block occupies across all layers: 2 (K,V) * L * T * H * D * itemsize."""
    return KV_FACTOR * num_layers * tokens_per_block * num_kv_heads * head_dim * dtype_bytes(dtype)


def blocks_for_bytes(
    budget_bytes: int,
    num_layers: int,
    tokens_per_block: int,
    num_kv_heads: int,
    head_dim: int,
    dtype: torch.dtype,
) -> int:
    """The largest number of whole blocks that fit in `budget_bytes` (never negative)."""
    if budget_bytes < 0:
        raise InvalidKvSpec("budget_bytes", budget_bytes, "a byte budget cannot be negative")
    per_block = bytes_per_block(num_layers, tokens_per_block, num_kv_heads, head_dim, dtype)
    return budget_bytes // per_block


@dataclass(frozen=True)
class KvCacheSpec:
    """Everything the paged KV cache needs to know; validated on construction.

    `max_attention_window` is W, the number of keys a query sees, sinks included;
    `sink_token_length` is S, the leading tokens every query keeps seeing. A query at
    position i sees key j iff j <= i and (j < S or i - j < W - S). `None` means full
    attention. See `engine.kv.layout` for where each position lives in the pool.

    `host_cache_blocks` sizes a CPU pool that catches evicted reusable blocks; it only
    matters when `onboard_blocks` is set, because a host copy that can never come back to
    the device would be dead weight (TensorRT-LLM skips the offload in that case too).
    """

    num_layers: int
    num_kv_heads: int
    head_dim: int
    tokens_per_block: int
    num_blocks: int
    dtype: torch.dtype = torch.float32
    device: str | torch.device = "cpu"
    enable_block_reuse: bool = True
    enable_partial_reuse: bool = True
    copy_on_partial_reuse: bool = True
    max_attention_window: int | None = None
    sink_token_length: int = 0
    host_cache_blocks: int = 0
    onboard_blocks: bool = True

    def __post_init__(self) -> None:
        for name in ("num_layers", "num_kv_heads", "head_dim", "tokens_per_block", "num_blocks"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InvalidKvSpec(name, value, "must be a positive integer")
        if self.sink_token_length < 0:
            raise InvalidKvSpec("sink_token_length", self.sink_token_length, "must be >= 0")
        if self.host_cache_blocks < 0:
            raise InvalidKvSpec("host_cache_blocks", self.host_cache_blocks, "must be >= 0")
        window = self.max_attention_window
        if window is not None and window <= self.sink_token_length:
            # W - S is the rolling part of the window; it must hold at least the query itself.
            raise InvalidKvSpec(
                "max_attention_window",
                window,
                f"must exceed sink_token_length={self.sink_token_length}",
            )
        if not isinstance(self.dtype, torch.dtype):
            raise InvalidKvSpec("dtype", self.dtype, "must be a torch.dtype")

    @property
    def bytes_per_block(self) -> int:
        return bytes_per_block(
            self.num_layers, self.tokens_per_block, self.num_kv_heads, self.head_dim, self.dtype
        )

    @property
    def host_offload_enabled(self) -> bool:
        """Offload only when blocks can also come back (see the class docstring)."""
        return self.host_cache_blocks > 0 and self.onboard_blocks
