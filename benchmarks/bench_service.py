"""Load on the local HTTP service: throughput and latency, and health under a slow solve.

1. 2,000 POST /v1/arbitrate requests of the realistic scenario at concurrency 32:
   throughput, p50 and p99 latency, errors (must be zero).
2. The same while one slow, time-limited request (1,000 generated perf claims) is in
   flight, with GET /healthz polled every 50 ms meanwhile: health-check p50/p99/max
   latency (target: every one under 50 ms).
3. Recovery: under load at concurrency 8, one busy solver process is SIGKILLed (as an
   out-of-memory kill would): the answers by status during the run (the request that was
   on it gets 503 worker_lost, nothing gets 500), and the seconds until /healthz says
   "ok" again with the replacement serving.

Only loopback traffic; the service is started and stopped by this script.
Run: python benchmarks/bench_service.py [--requests 2000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import httpx

from arbiter import load_claims
from arbiter.claims import claim_to_dict
from arbiter.service.process import RunningService

SCENARIO = "arbiter/scenarios/server_h100.yaml"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def slow_body() -> dict:
    rng = random.Random(1)
    paths = [
        "plugin_config.use_fused_mlp",
        "plugin_config.context_fmha",
        "plugin_config.use_paged_context_fmha",
        "kv_cache_config.enable_block_reuse",
        "scheduler_config.enable_chunked_context",
        "kv_cache_config.enable_partial_reuse",
        "plugin_config.multiple_profiles",
        "plugin_config.streamingllm",
        "plugin_config.remove_input_padding",
        "kv_cache_config.onboard_blocks",
        "plugin_config.reduce_fusion",
    ]
    claims = [
        {
            "kind": "perf",
            "name": f"p{i}",
            "weight": rng.randint(1, 9),
            "requires": {p: rng.choice([True, False]) for p in rng.sample(paths, 3)},
        }
        for i in range(1000)
    ]
    return {"claims": claims, "options": {"time_limit_s": 3.0}}


async def load(
    url: str, body: dict, total: int, concurrency: int
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(
        timeout=60, limits=httpx.Limits(max_connections=concurrency)
    ) as client:

        async def one() -> None:
            nonlocal errors
            async with sem:
                t0 = time.perf_counter()
                response = await client.post(url + "/v1/arbitrate", json=body)
                latencies.append((time.perf_counter() - t0) * 1000)
                if response.status_code != 200:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        elapsed = time.perf_counter() - start
    return latencies, errors, elapsed


async def health_during_slow(url: str) -> tuple[list[float], int, float]:
    async with httpx.AsyncClient(timeout=60) as client:
        slow = asyncio.create_task(client.post(url + "/v1/arbitrate", json=slow_body()))
        await asyncio.sleep(0.2)  # let the slow solve start
        checks: list[float] = []
        while not slow.done():
            t0 = time.perf_counter()
            response = await client.get(url + "/healthz")
            checks.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200
            await asyncio.sleep(0.05)
        slow_response = await slow
        return checks, slow_response.status_code, slow_response.elapsed.total_seconds()


async def recovery(url: str, body: dict) -> tuple[dict[int, int], float, int]:
    import collections
    import os
    import signal

    statuses: collections.Counter[int] = collections.Counter()
    stop = asyncio.Event()
    async with httpx.AsyncClient(timeout=60) as client:

        async def loop() -> None:
            while not stop.is_set():
                response = await client.post(url + "/v1/arbitrate", json=body)
                statuses[response.status_code] += 1

        clients = [asyncio.create_task(loop()) for _ in range(8)]
        await asyncio.sleep(2.0)
        pid = None
        while pid is None:
            pids = (await client.get(url + "/healthz")).json()["workers"]["busy_pids"]
            pid = pids[0] if pids else None
        os.kill(pid, signal.SIGKILL)
        killed = time.perf_counter()

        async def healed_pool() -> bool:
            state = (await client.get(url + "/healthz")).json()
            workers = state["workers"]
            return (
                state.get("status") == "ok" and pid not in workers["pids"] and workers["replaced"]
            )

        while not await healed_pool():  # the dead one gone, its replacement up
            await asyncio.sleep(0.05)
        healed = time.perf_counter() - killed
        served = sum(statuses.values())
        await asyncio.sleep(2.0)  # the healed pool keeps serving
        stop.set()
        await asyncio.gather(*clients)
        return dict(statuses), healed, sum(statuses.values()) - served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    body = {"claims": [claim_to_dict(c) for c in load_claims(SCENARIO)]}
    service = RunningService("--time-limit", "10")
    try:
        latencies, errors, elapsed = asyncio.run(
            load(service.url, body, args.requests, args.concurrency)
        )
        print(
            f"{args.requests} requests of the realistic scenario at concurrency {args.concurrency}:"
        )
        print(
            f"  throughput {args.requests / elapsed:.0f} req/s   p50 {pct(latencies, 0.5):.1f} ms   "
            f"p99 {pct(latencies, 0.99):.1f} ms   errors {errors}"
        )
        checks, status, slow_s = asyncio.run(health_during_slow(service.url))
        print(
            f"health checks while a slow request (1,000 claims, time limit 3 s) was in flight ({slow_s:.2f} s, HTTP {status}):"
        )
        print(
            f"  {len(checks)} checks   p50 {pct(checks, 0.5):.1f} ms   p99 {pct(checks, 0.99):.1f} ms   max {max(checks):.1f} ms   "
            f"under 50 ms: {sum(c < 50 for c in checks)}/{len(checks)}"
        )
        statuses, healed, after = asyncio.run(recovery(service.url, body))
        print("one busy solver process SIGKILLed under load at concurrency 8:")
        print(
            f"  answers by status {statuses}   healthy again after {healed:.2f} s   "
            f"{after} requests served in the 2 s after"
        )
    finally:
        service.stop()


if __name__ == "__main__":
    main()
