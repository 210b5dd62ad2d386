"""The solver pool's plumbing: the event loop reads workers' replies off their pipes
(`Inbox`), and a request waits on its reply, its deadline and its client at once."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import random
import struct
import threading
import time

import pytest

from arbiter.service.inbox import Inbox, frames
from arbiter.service.pool import Cancelled, WorkerPool


def test_frames_cut_whole_messages_and_keep_the_rest():
    one, two = pickle.dumps({"a": 1}), pickle.dumps(list(range(50)))
    long_header = struct.pack("!i", -1) + struct.pack("!Q", len(two))  # the >2 GiB form
    buffer = bytearray(struct.pack("!i", len(one)) + one + long_header + two[:7])
    assert [pickle.loads(f) for f in frames(buffer)] == [{"a": 1}]
    assert bytes(buffer) == long_header + two[:7]  # the partial message waits for its rest
    buffer += two[7:]
    assert [pickle.loads(f) for f in frames(buffer)] == [list(range(50))]
    assert buffer == bytearray()


def test_inbox_reads_what_a_connection_sends_in_order_and_then_end_of_file():
    big = b"x" * (3 << 20)  # far beyond a pipe's buffer: it arrives in many reads
    sent = [("ready", 1), ("ok", (200, big)), {"last": True}]

    async def main() -> list[object]:
        reader, writer = multiprocessing.Pipe(duplex=False)
        inbox = Inbox(reader, asyncio.get_running_loop())

        def write() -> None:
            for message in sent:
                writer.send(message)
            writer.close()

        thread = threading.Thread(target=write)
        thread.start()
        got = [await inbox.get() for _ in sent]
        with pytest.raises(EOFError):
            await asyncio.wait_for(inbox.get(), 10)
        thread.join()
        inbox.close()
        return got

    assert asyncio.run(main()) == sent


def test_a_request_whose_client_leaves_is_stopped_and_its_worker_replaced():
    rng = random.Random(1)
    paths = [
        "plugin_config.use_fused_mlp",
        "plugin_config.use_paged_context_fmha",
        "kv_cache_config.enable_block_reuse",
        "scheduler_config.enable_chunked_context",
        "plugin_config.streamingllm",
        "plugin_config.remove_input_padding",
    ]
    claims = [  # seconds of work: still running when the client leaves
        {
            "kind": "perf",
            "name": f"p{i}",
            "weight": rng.randint(1, 9),
            "requires": {p: rng.choice([True, False]) for p in rng.sample(paths, 3)},
        }
        for i in range(1000)
    ]

    async def main() -> tuple[str, int, tuple[str, object, dict[str, float]]]:
        pool = WorkerPool(1, 4)
        await pool.start()
        try:
            loop = asyncio.get_running_loop()
            deadline = time.monotonic() + 60
            gone: asyncio.Future[None] = loop.create_future()
            loop.call_later(0.3, gone.set_result, None)
            with pytest.raises(Cancelled) as stopped:
                await pool.run("solve", (claims, {}), deadline=deadline, disconnected=gone)
            while pool.snapshot()["alive"] < 1:  # the replacement warms up
                await asyncio.sleep(0.1)
            answer = await pool.run("solve", ([], {}), deadline=time.monotonic() + 60)
            return stopped.value.why, pool.replaced, answer
        finally:
            await pool.close()

    why, replaced, (kind, (status, _), timing) = asyncio.run(main())
    assert why == "client" and replaced == 1
    assert kind == "ok" and status == 200
    assert set(timing) >= {"queue", "worker", "solve", "report", "encode"}
    assert timing["solve"] + timing["report"] + timing["encode"] <= timing["worker"]
