"""The service's solver processes: a supervised pool that heals itself.

Each worker is a spawned process that runs one job at a time over a pipe. The pool
- replaces a worker that died (an out-of-memory kill, a crash) and tells the caller of the
  request that was on it (`WorkerLost`, which the service answers with 503 + Retry-After);
- kills and replaces a worker whose request ran past its deadline or whose client hung up
  (`Cancelled`), so abandoned work never delays the next request;
- bounds the number of requests waiting for a worker (`QueueFull`);
- reports its real state (`snapshot()`) for /healthz and /readyz.
Workers watch their parent and exit when it is gone, so a SIGKILLed server leaves no
orphans.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

PARENT_POLL_S = 0.25  # how often a worker checks that its parent still lives


class PoolError(Exception):
    """A request the pool could not complete; `code` is the service's error code."""

    code = "unavailable"


class QueueFull(PoolError):
    code = "queue_full"


class WorkerLost(PoolError):
    code = "worker_lost"


class Cancelled(PoolError):
    """The deadline passed or the client went away; the worker was replaced."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why
        self.code = "time_limit" if why == "deadline" else "client_closed"


class QueueTimeout(PoolError):
    """The request's deadline passed while it waited for a worker; it never started."""

    code = "queue_timeout"


# ------------------------------------------------------------------ the worker process
def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(PARENT_POLL_S)


def worker_main(conn: Connection, parent: int) -> None:
    """A worker: warm up, then answer `(job, args)` messages with `(kind, result)`, where
    a result is `service_jobs.run(job, *args)`: (status, JSON text)."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    # the solver loads in the worker process, never in the server's
    from . import jobs as service_jobs

    service_jobs.warm_up()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            name, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result: tuple[str, Any] = ("ok", service_jobs.run(name, *args))
        except BaseException as exc:  # noqa: BLE001 - report every fault as data
            result = ("error", f"{type(exc).__name__}: {exc}"[:2000])
        try:
            conn.send(result)
        except (EOFError, OSError):
            return


# ------------------------------------------------------------------ the supervisor side
@dataclass
class _Worker:
    process: Any
    conn: Connection
    busy: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return int(self.process.pid or 0)

    def kill(self) -> None:
        # the pipe closes only after the process is gone, so a thread blocked reading it
        # sees end-of-file rather than a descriptor closed under it
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.join(timeout=2)
        with contextlib.suppress(Exception):
            self.conn.close()


class WorkerPool:
    """`size` supervised worker processes and a bounded queue of waiting requests."""

    def __init__(self, size: int, max_queue: int):
        self.size = size
        self.max_queue = max_queue
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._workers: dict[int, _Worker] = {}
        self._starting = 0
        self._waiting = 0
        self._threads = ThreadPoolExecutor(max_workers=size + 2, thread_name_prefix="pool-io")
        self.replaced = 0
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._monitor: asyncio.Task[Any] | None = None

    # -- life cycle
    async def start(self) -> None:
        await asyncio.gather(*(self._spawn() for _ in range(self.size)))
        self._monitor = asyncio.create_task(self._watch())

    async def close(self) -> None:
        self._closed = True
        if self._monitor is not None:
            self._monitor.cancel()
        for worker in list(self._workers.values()):
            worker.kill()
        self._workers.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _spawn(self) -> None:
        self._starting += 1
        try:
            parent_conn, child_conn = self._ctx.Pipe()
            process = self._ctx.Process(
                target=worker_main, args=(child_conn, os.getpid()), daemon=True
            )
            process.start()  # on the event loop's thread, which lives as long as the server
            child_conn.close()
            worker = _Worker(process, parent_conn)
            try:
                await self._recv(worker)  # the ("ready", pid) message
            except (EOFError, OSError):
                worker.kill()
                if not self._closed:
                    await asyncio.sleep(1.0)
                    self._respawn()
                return
            if self._closed:
                worker.kill()
                return
            self._workers[worker.pid] = worker
            self._idle.put_nowait(worker)
        finally:
            self._starting -= 1

    def _respawn(self) -> None:
        if self._closed:
            return
        self.replaced += 1
        task = asyncio.create_task(self._spawn())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _retire(self, worker: _Worker) -> None:
        """Kill a worker (dead, cancelled or timed out) and start its replacement."""
        worker.kill()
        if self._workers.pop(worker.pid, None) is not None:
            self._respawn()

    async def _watch(self) -> None:
        """Replace idle workers that died while waiting for work."""
        while not self._closed:
            await asyncio.sleep(0.5)
            for worker in list(self._workers.values()):
                if not worker.busy and not worker.process.is_alive():
                    self._retire(worker)

    async def _recv(self, worker: _Worker) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, worker.conn.recv)

    # -- work
    async def run(
        self,
        job: str,
        args: tuple[Any, ...],
        *,
        deadline: float,
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> tuple[str, Any]:
        """Run `job(*args)` on a worker: `(kind, result)` with kind "ok" or "error".

        Raises QueueFull, QueueTimeout (never started), WorkerLost or Cancelled (deadline
        passed while running / client gone)."""
        if self._waiting >= self.max_queue and self._idle.empty():
            raise QueueFull(f"{self._waiting} requests already wait for a solver process")
        worker = await self._acquire(deadline, disconnected)
        worker.busy = True
        try:
            worker.conn.send((job, args))
        except (OSError, ValueError):
            self._retire(worker)
            raise WorkerLost("the solver process was lost") from None
        reply = asyncio.ensure_future(self._recv(worker))
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Cancelled("deadline")
                done, _ = await asyncio.wait({reply}, timeout=min(left, 0.2))
                if done:
                    break
                if not worker.process.is_alive() and not reply.done():
                    await asyncio.wait({reply}, timeout=0.5)
                    if not reply.done():
                        raise WorkerLost("the solver process died")
                    break
                if disconnected is not None and await disconnected():
                    raise Cancelled("client")
            try:
                kind, result = reply.result()
            except (EOFError, OSError):
                raise WorkerLost("the solver process died while solving") from None
        except BaseException:
            self._retire(worker)
            reply.cancel()
            raise
        worker.busy = False
        self._idle.put_nowait(worker)
        return kind, result

    async def _acquire(
        self, deadline: float, disconnected: Callable[[], Awaitable[bool]] | None
    ) -> _Worker:
        """The next idle worker, first come first served: one pending `get()` per waiting
        request keeps its place in the queue across the deadline and disconnect checks."""
        self._waiting += 1
        getter: asyncio.Future[_Worker] | None = None
        try:
            while True:
                if getter is None:
                    getter = asyncio.ensure_future(self._idle.get())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise QueueTimeout("the deadline passed while waiting for a solver process")
                done, _ = await asyncio.wait({getter}, timeout=min(left, 0.2))
                if not done:
                    if disconnected is not None and await disconnected():
                        raise Cancelled("client")
                    continue
                worker, getter = getter.result(), None
                if worker.pid in self._workers and worker.process.is_alive():
                    if disconnected is not None and await disconnected():
                        self._idle.put_nowait(worker)
                        raise Cancelled("client")
                    return worker
                self._retire(worker)  # it died while idle
        finally:
            self._waiting -= 1
            if getter is not None:
                if getter.done() and not getter.cancelled():
                    self._idle.put_nowait(getter.result())  # got one just as we gave up
                else:
                    getter.cancel()

    # -- state
    def snapshot(self) -> dict[str, Any]:
        alive = [w for w in self._workers.values() if w.process.is_alive()]
        busy = sum(1 for w in alive if w.busy)
        return {
            "size": self.size,
            "alive": len(alive),
            "busy": busy,
            "idle": len(alive) - busy,
            "starting": self._starting,
            "replaced": self.replaced,
            "waiting": self._waiting,
            "max_queue": self.max_queue,
            "pids": sorted(w.pid for w in alive),
            "busy_pids": sorted(w.pid for w in alive if w.busy),
        }

    @property
    def ready(self) -> bool:
        """True while some worker can take work now or soon (queue not full)."""
        snap = self.snapshot()
        return snap["alive"] > 0 and (snap["idle"] > 0 or snap["waiting"] < self.max_queue)
