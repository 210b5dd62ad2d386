"""The driver side of tensor parallelism: start the ranks, run steps, stop them all.

``TensorParallelModel`` stands where a ``LlamaForCausalLM`` stands in the ``Runtime``: the
runtime's scheduler and block manager stay in the driver process, and each step's packed
inputs go to every rank (``engine.parallel.worker``), which compute their shard and
all-reduce; rank 0 sends the logits back. The driver holds no KV tensors: its block
manager's copy orders (partial reuse, copy-on-write, host offload) are queued by
``RemoteStorage`` and replayed on every rank before the next forward.

Failure: while waiting for a rank, the driver checks that every rank process is alive; a
rank that dies or raises stops the whole group (the others are terminated, then killed)
and the step raises ``RankFailed`` naming it. ``close()`` (also run at exit and when the
model is garbage-collected) stops the ranks.
"""

from __future__ import annotations

import socket
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp

from constraints.schema import EngineConfig
from engine.args import available_ranks
from engine.kernels import AttentionMetadata
from engine.kv import KvCacheSpec
from engine.model import ModelArgs
from engine.pool import PoolSize, kv_spec, size_pool

from .errors import PipelineParallelUnsupported, RankFailed, TooManyRanks
from .shard import check_shardable, local_args, shard_plan
from .worker import RankSpec, meta_message, run_rank

# CPU ranks are processes talking gloo over loopback, one thread each at least; past this
# many a CPU only time-slices them.
POLL_S = 0.05


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RemoteStorage:
    """The block manager's view of the ranks' pools: copies are queued, not done here."""

    def __init__(self) -> None:
        self.kv: list[torch.Tensor] = []  # the tensors live in the ranks
        self.pending: list[tuple[str, tuple[int, ...]]] = []

    def copy_block(self, src: int, dst: int, num_rows: int) -> None:
        self.pending.append(("copy_block", (src, dst, num_rows)))

    def offload(self, block_id: int, host_id: int) -> None:
        self.pending.append(("offload", (block_id, host_id)))

    def onboard(self, host_id: int, block_id: int) -> None:
        self.pending.append(("onboard", (host_id, block_id)))

    def take(self) -> list[tuple[str, tuple[int, ...]]]:
        ops, self.pending = self.pending, []
        return ops


class _Ranks:
    """The rank processes and their pipes; ``stop`` is idempotent and never hangs."""

    def __init__(self, procs: list[Any], conns: list[Connection]) -> None:
        self.procs, self.conns = procs, conns
        self.stopped = False

    def stop(self, graceful: bool = True) -> None:
        if self.stopped:
            return
        self.stopped = True
        for conn, proc in zip(self.conns, self.procs, strict=True):
            if graceful and proc.is_alive():
                try:
                    conn.send(("stop",))
                except (BrokenPipeError, OSError):
                    pass
        for proc in self.procs:
            proc.join(timeout=5 if graceful else 0.5)
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()


class TensorParallelModel:
    """A model sharded over ``world`` rank processes, called like the local model."""

    def __init__(
        self,
        model_dir: str | Path,
        config: EngineConfig,
        device: torch.device | str,
        *,
        free_memory: int | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        self.device = torch.device(device)
        self.config = config
        self.args = ModelArgs.from_hf(Path(model_dir))
        parallel = config.parallel_config
        if parallel.pipeline_parallel_size > 1:
            raise PipelineParallelUnsupported(parallel.pipeline_parallel_size)
        self.world = parallel.tensor_parallel_size
        have = available_ranks(self.device)
        if self.world > have:
            raise TooManyRanks(self.world, have, self.device.type)
        check_shardable(self.args, self.world)
        self.local_args = local_args(self.args, shard_plan(self.args, 0, self.world))
        self.storage = RemoteStorage()
        spec = RankSpec(
            model_dir=str(model_dir),
            config=config,
            device_type=self.device.type,
            init_method=f"tcp://127.0.0.1:{_free_port()}",
            world=self.world,
            threads=max(1, torch.get_num_threads() // self.world),
            free_memory=free_memory,
            timeout_s=timeout_s,
        )
        ctx = mp.get_context("spawn")
        procs, conns = [], []
        for rank in range(self.world):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=run_rank, args=(rank, spec, theirs), daemon=True)
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(ours)
        self._ranks = _Ranks(procs, conns)
        self._finalizer = weakref.finalize(self, self._ranks.stop, False)
        blocks = [self._receive(rank, "ready") for rank in range(self.world)]
        self.num_blocks = min(blocks)
        for conn in conns:
            conn.send(("pool", self.num_blocks))

    # -- the Runtime's hooks -------------------------------------------------------------

    def kv_pool(
        self, config: EngineConfig, device: torch.device, free_memory: int | None
    ) -> tuple[PoolSize, KvCacheSpec, RemoteStorage]:
        """The pool every rank holds (its own KV heads, the smallest rank's block count),
        its spec, and the storage that forwards the block manager's copies."""
        size = size_pool(config, self.local_args, device, free_memory)
        size = PoolSize(
            self.num_blocks, size.host_blocks, size.block_bytes, size.budget_bytes, size.source
        )
        return size, kv_spec(config, self.local_args, device, size), self.storage

    def __call__(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor | None,
        kv_caches: Any,
        meta: AttentionMetadata,
    ) -> torch.Tensor:
        if self._ranks.stopped:
            raise RankFailed(0, None, "the tensor-parallel group was already stopped")
        message = ("step", self.storage.take(), input_ids, positions, meta_message(meta))
        for rank, conn in enumerate(self._ranks.conns):
            try:
                conn.send(message)
            except (BrokenPipeError, OSError):
                self._fail(rank, "its pipe is closed")
        return self._receive(0, "logits").to(self.device)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._ranks.procs]

    def alive(self) -> list[bool]:
        return [p.is_alive() for p in self._ranks.procs]

    def close(self) -> None:
        """Stop every rank (a no-op once stopped)."""
        self._finalizer()

    def _receive(self, rank: int, kind: str) -> Any:
        conn = self._ranks.conns[rank]
        while True:
            if conn.poll(POLL_S):
                try:
                    got, value = conn.recv()
                except (EOFError, OSError):
                    self._fail(rank, "its pipe closed")
                if got == "error":
                    # A peer that died makes the others' collectives fail: name the dead one.
                    dead = self._dead()
                    self._fail(rank if dead is None else dead, str(value))
                if got != kind:
                    self._fail(rank, f"answered {got!r} where {kind!r} was expected")
                return value
            for other, proc in enumerate(self._ranks.procs):
                if not proc.is_alive():
                    detail = self._error_text(other)
                    self._fail(other, detail)

    def _dead(self) -> int | None:
        for rank, proc in enumerate(self._ranks.procs):
            if not proc.is_alive() and proc.exitcode not in (0, 1):
                return rank
        return None

    def _error_text(self, rank: int) -> str:
        conn = self._ranks.conns[rank]
        try:
            if conn.poll(0):
                got, value = conn.recv()
                if got == "error":
                    return str(value)
        except (EOFError, OSError):
            pass
        return ""

    def _fail(self, rank: int, detail: str) -> None:
        self._ranks.stop(graceful=False)
        self._finalizer.detach()
        raise RankFailed(rank, self._ranks.procs[rank].exitcode, detail.strip())
