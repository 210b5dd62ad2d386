"""The service's solver processes: a supervised pool that heals itself.

Each worker is a spawned process that runs one job at a time over a pair of pipes. The pool
- replaces a worker that died (an out-of-memory kill, a crash) and tells the caller of the
  request that was on it (`WorkerLost`, which the service answers with 503 + Retry-After);
- kills and replaces a worker whose request ran past its deadline or whose client hung up
  (`Cancelled`), so abandoned work never delays the next request;
- bounds the number of requests waiting for a worker (`QueueFull`);
- reports its real state (`snapshot()`) for /healthz and /readyz.
Workers watch their parent and exit when it is gone, so a SIGKILLed server leaves no
orphans.

Everything on the server's side runs on the event loop, without threads: requests go down
one pipe per worker, replies come back up another one that the loop watches (`Inbox`), and
a request waits on its reply, its deadline and its client's departure at once (no polling).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from .inbox import Inbox

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


def worker_main(requests: Connection, replies: Connection, parent: int) -> None:
    """A worker: warm up, then answer `(job, args)` messages from `requests` with
    `(kind, result, laps)` on `replies`, where a result is `service_jobs.run(job, *args)`:
    (status, JSON text), and laps the wall milliseconds of the job's phases."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    # the solver loads in the worker process, never in the server's
    from . import jobs as service_jobs

    service_jobs.warm_up()
    replies.send(("ready", os.getpid()))
    while True:
        try:
            name, args = requests.recv()
        except (EOFError, OSError):
            return
        watch = service_jobs.Stopwatch()
        try:
            result: tuple[str, Any, dict[str, float]] = (
                "ok",
                service_jobs.run(name, *args, watch=watch),
                watch.laps,
            )
        except BaseException as exc:  # noqa: BLE001 - report every fault as data
            result = ("error", f"{type(exc).__name__}: {exc}"[:2000], watch.laps)
        try:
            replies.send(result)
        except (EOFError, OSError):
            return


# ------------------------------------------------------------------ the supervisor side
@dataclass
class _Worker:
    process: Any
    requests: Connection  # the write end of the pipe the worker reads jobs from
    inbox: Inbox  # its replies
    busy: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return int(self.process.pid or 0)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.join(timeout=2)
        self.inbox.close()
        with contextlib.suppress(Exception):
            self.requests.close()


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

    async def _spawn(self) -> None:
        self._starting += 1
        try:
            jobs_out, jobs_in = self._ctx.Pipe(duplex=False)  # (read end, write end)
            replies_out, replies_in = self._ctx.Pipe(duplex=False)
            process = self._ctx.Process(
                target=worker_main, args=(jobs_out, replies_in, os.getpid()), daemon=True
            )
            process.start()  # on the event loop's thread, which lives as long as the server
            jobs_out.close()  # the worker's ends: its death then reads as end-of-file here
            replies_in.close()
            worker = _Worker(process, jobs_in, Inbox(replies_out, asyncio.get_running_loop()))
            try:
                await worker.inbox.get()  # the ("ready", pid) message
            except EOFError:
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

    # -- work
    async def run(
        self,
        job: str,
        args: tuple[Any, ...],
        *,
        deadline: float,
        disconnected: asyncio.Future[Any] | None = None,
    ) -> tuple[str, Any, dict[str, float]]:
        """Run `job(*args)` on a worker: `(kind, result, timing)` with kind "ok" or
        "error", and timing the wall milliseconds spent waiting for a worker (`queue`), from
        sending the job to reading its reply (`worker`), and in the job's phases.
        `disconnected` completes when the client goes away.

        Raises QueueFull, QueueTimeout (never started), WorkerLost or Cancelled (deadline
        passed while running / client gone)."""
        if self._waiting >= self.max_queue and self._idle.empty():
            raise QueueFull(f"{self._waiting} requests already wait for a solver process")
        asked = time.perf_counter()
        worker = await self._acquire(deadline, disconnected)
        sent = time.perf_counter()
        worker.busy = True
        try:
            worker.requests.send((job, args))
        except (OSError, ValueError):
            self._retire(worker)
            raise WorkerLost("the solver process was lost") from None
        reply = worker.inbox.get()
        try:
            if not await _settled(reply, deadline, disconnected):
                raise Cancelled("deadline")
            try:
                kind, result, laps = reply.result()
            except EOFError:
                raise WorkerLost("the solver process died while solving") from None
        except BaseException:
            reply.cancel()
            self._retire(worker)
            raise
        worker.busy = False
        self._idle.put_nowait(worker)
        timing = {"queue": (sent - asked) * 1000, "worker": (time.perf_counter() - sent) * 1000}
        return kind, result, {**timing, **laps}

    async def _acquire(self, deadline: float, disconnected: asyncio.Future[Any] | None) -> _Worker:
        """The next idle worker, first come first served: one pending `get()` per waiting
        request keeps its place in the queue until a worker, the deadline or the client's
        departure comes."""
        self._waiting += 1
        getter: asyncio.Future[_Worker] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(self._idle.get())
                if not await _settled(getter, deadline, disconnected):
                    raise QueueTimeout("the deadline passed while waiting for a solver process")
                worker, getter = getter.result(), None
                if worker.pid in self._workers and worker.process.is_alive():
                    if disconnected is not None and disconnected.done():
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


async def _settled(
    future: asyncio.Future[Any], deadline: float, disconnected: asyncio.Future[Any] | None
) -> bool:
    """Wait for `future` until the deadline or the client's departure; True when it is
    done. A departed client raises `Cancelled("client")`; a passed deadline returns False."""
    watched: set[asyncio.Future[Any]] = {future}
    if disconnected is not None:
        watched.add(disconnected)
    left = deadline - time.monotonic()
    if left > 0:
        await asyncio.wait(watched, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    if future.done():
        return True
    if disconnected is not None and disconnected.done():
        raise Cancelled("client")
    return False
