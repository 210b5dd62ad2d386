"""The pool tensors (device and host) and the copies the block manager orders.

Device pool: `kv[layer]` is `[2, num_blocks, tokens_per_block, num_kv_heads, head_dim]`
(0 = K, 1 = V) on `spec.device`. The host pool, when `spec.host_offload_enabled`, has the
same per-layer layout with `host_cache_blocks` blocks on the CPU (pinned when CUDA is
present, so offload copies can overlap). The manager decides *which* blocks move; this
module only moves bytes.

Every pool reads as zeros before it is written. On a CPU (unpinned) the zeros come from an
anonymous memory map, whose pages the operating system hands out zero-filled when they are
first touched: a pool sized from host memory (gigabytes) then costs nothing to create,
where filling it with ``torch.zeros`` took seconds at start-up, and a run pays only for the
pages its blocks use.
"""

from __future__ import annotations

import mmap

import torch

from engine.kv.layout import NULL_BLOCK, WindowLayout
from engine.kv.spec import KvCacheSpec


class KvStorage:
    """Owns the pool tensors and copies token rows between blocks and pools."""

    def __init__(self, spec: KvCacheSpec) -> None:
        self.spec = spec
        shape = (2, spec.num_blocks, spec.tokens_per_block, spec.num_kv_heads, spec.head_dim)
        # Zero-filled so an unwritten slot reads as a defined value in tests and kernels.
        self.kv: list[torch.Tensor] = [
            zeros(shape, spec.dtype, torch.device(spec.device)) for _ in range(spec.num_layers)
        ]
        self.host_kv: list[torch.Tensor] = []
        if spec.host_offload_enabled:
            host_shape = (2, spec.host_cache_blocks) + shape[2:]
            pin = torch.cuda.is_available()
            self.host_kv = [
                torch.zeros(host_shape, dtype=spec.dtype, device="cpu", pin_memory=True)
                if pin
                else zeros(host_shape, spec.dtype, torch.device("cpu"))
                for _ in range(spec.num_layers)
            ]

    def copy_block(self, src: int, dst: int, num_rows: int) -> None:
        """Copy the first `num_rows` token rows of device block `src` into `dst`."""
        if num_rows <= 0:
            return
        for layer in self.kv:
            layer[:, dst, :num_rows].copy_(layer[:, src, :num_rows])

    def offload(self, block_id: int, host_id: int) -> None:
        """Copy a whole device block into host block `host_id`."""
        for layer, host in zip(self.kv, self.host_kv, strict=True):
            host[:, host_id].copy_(layer[:, block_id])

    def onboard(self, host_id: int, block_id: int) -> None:
        """Copy host block `host_id` back into device block `block_id`."""
        for layer, host in zip(self.kv, self.host_kv, strict=True):
            layer[:, block_id].copy_(host[:, host_id])


def zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A zero-filled tensor; on a CPU backed by an anonymous memory map (zero pages made on
    first touch, nothing filled now), elsewhere ``torch.zeros``."""
    if device.type != "cpu":
        return torch.zeros(shape, dtype=dtype, device=device)
    numel = 1
    for size in shape:
        numel *= size
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if nbytes == 0:
        return torch.zeros(shape, dtype=dtype)
    # The tensor keeps the map alive; the map is writable and page-aligned.
    flat = torch.frombuffer(mmap.mmap(-1, nbytes), dtype=torch.uint8)
    return flat.view(dtype).view(shape)


def block_table_tensor(
    tables: list[list[int]], device: str | torch.device = "cpu", width: int | None = None
) -> torch.Tensor:
    """Stack block tables into an int32 `[batch, width]` tensor, right-padded with -1.

    Out-of-window entries are already `NULL_BLOCK` (-1) in the tables, so -1 means "no
    block here" wherever it appears.
    """
    width = max((len(t) for t in tables), default=0) if width is None else width
    out = torch.full((len(tables), width), NULL_BLOCK, dtype=torch.int32)
    for row, table in enumerate(tables):
        if table:
            out[row, : len(table)] = torch.tensor(table, dtype=torch.int32)
    return out.to(device)


def slots_for(layout: WindowLayout, block_table: list[int], start: int, count: int) -> list[int]:
    """Slots of token positions [start, start + count) of one sequence."""
    tpb = layout.tokens_per_block
    slots: list[int] = []
    for position in range(start, start + count):
        index = layout.cache_index(position)
        block = block_table[index // tpb]
        # A write into a released block is a scheduling bug, not a padding case.
        if block == NULL_BLOCK:
            raise IndexError(f"position {position} maps to a released block")
        slots.append(block * tpb + index % tpb)
    return slots


def slot_mapping(
    layout: WindowLayout,
    requests: list[tuple[list[int], int, int]],
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """int64 slots for a packed step: `requests` holds (block_table, start, count) each."""
    slots: list[int] = []
    for table, start, count in requests:
        slots.extend(slots_for(layout, table, start, count))
    return torch.tensor(slots, dtype=torch.int64, device=device)
