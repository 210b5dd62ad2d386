"""One tensor-parallel rank: its model shard, its KV pool, and the step loop.

The driver (``engine.parallel.group``) talks to each rank over a pipe:

1. the rank joins the process group (gloo on CPU, NCCL on CUDA), loads the checkpoint,
   keeps its shard (``engine.parallel.shard``) and sizes its KV pool for its own KV heads
   and memory; it answers ``("ready", num_blocks)``;
2. the driver sends ``("pool", num_blocks)`` (the smallest pool of all ranks, so every
   rank has the same block ids) and the rank allocates it;
3. each ``("step", ops, input_ids, positions, meta)`` first replays the KV copies the
   block manager ordered (``ops``), then runs the forward (all-reducing inside it); rank 0
   answers ``("logits", tensor)``;
4. ``("stop",)`` leaves the group and exits.

Any exception is answered with ``("error", text)`` and the rank exits non-zero; a closed
pipe (the driver died) ends the rank too.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from engine.kernels import AttentionMetadata, select_backend
from engine.kv.storage import KvStorage
from engine.model import ModelArgs, load_model
from engine.pool import compute_dtype, free_bytes, kv_spec, size_pool

from .shard import local_args, shard_model, shard_plan

STEP_FIELDS = (
    "slot_mapping",
    "block_tables",
    "context_lens",
    "query_start_loc",
    "is_prefill",
    "max_query_len",
    "sliding_window",
    "sink_tokens",
    "sink_bubble",
)


@dataclass(frozen=True)
class RankSpec:
    """What a rank needs to start: everything is picklable."""

    model_dir: str
    config: Any  # the solved EngineConfig
    device_type: str  # "cpu" or "cuda"
    init_method: str
    world: int
    threads: int
    free_memory: int | None  # override of the memory probe (bytes), as Runtime takes
    timeout_s: float = 300.0


def meta_message(meta: AttentionMetadata) -> dict[str, Any]:
    return {name: getattr(meta, name) for name in STEP_FIELDS}


def _device(spec: RankSpec, rank: int) -> torch.device:
    return torch.device("cuda", rank) if spec.device_type == "cuda" else torch.device("cpu")


def _all_reduce(group: Any):
    def reduce(x: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(x, group=group)
        return x

    return reduce


def run_rank(rank: int, spec: RankSpec, conn: Connection) -> None:
    """The rank's process entry point (``torch.multiprocessing`` spawn target)."""
    try:
        _serve(rank, spec, conn)
    except (EOFError, BrokenPipeError):
        os._exit(3)  # the driver is gone: nothing to answer
    except BaseException:  # noqa: BLE001 - reported to the driver, then the rank exits
        try:
            conn.send(("error", f"rank {rank}: {traceback.format_exc()}"))
        finally:
            os._exit(1)
    os._exit(0)


def _serve(rank: int, spec: RankSpec, conn: Connection) -> None:
    torch.set_num_threads(spec.threads)
    device = _device(spec, rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo",
        init_method=spec.init_method,
        rank=rank,
        world_size=spec.world,
        timeout=timedelta(seconds=spec.timeout_s),
    )
    config = spec.config
    args = ModelArgs.from_hf(Path(spec.model_dir))
    plan = shard_plan(args, rank, spec.world)
    backend = select_backend(
        use_paged_context_fmha=config.plugin_config.use_paged_context_fmha,
        context_fmha=config.plugin_config.context_fmha,
        device=device,
    )
    model = load_model(spec.model_dir, compute_dtype(config), device, backend)
    shard_model(model, plan, _all_reduce(dist.group.WORLD))
    mine = local_args(args, plan)
    free = spec.free_memory
    if free is None and device.type != "cuda":
        free = free_bytes(device) // spec.world  # the ranks share the host's memory
    conn.send(("ready", size_pool(config, mine, device, free).num_blocks))
    kind, num_blocks = conn.recv()
    assert kind == "pool", kind
    size = size_pool(config, mine, device, free)
    size = type(size)(
        num_blocks, size.host_blocks, size.block_bytes, size.budget_bytes, size.source
    )
    storage = KvStorage(kv_spec(config, mine, device, size))
    while True:
        message = conn.recv()
        if message[0] == "stop":
            break
        _, ops, ids, positions, fields = message
        for name, op_args in ops:
            getattr(storage, name)(*op_args)
        meta = AttentionMetadata(**{k: _to(v, device) for k, v in fields.items()})
        logits = model(_to(ids, device), _to(positions, device), storage.kv, meta)
        if rank == 0:
            conn.send(("logits", logits.cpu()))
    dist.destroy_process_group()


def _to(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value
