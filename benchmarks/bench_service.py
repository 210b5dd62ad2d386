"""Load on the local HTTP service: throughput, latency, where a request's time and CPU
go, and health under a slow solve.

1. POST /v1/arbitrate requests of the realistic scenario at concurrency 32, each one
   distinct (the first claim's `source` carries the request's number, so no cache of
   identical requests could answer any): throughput, p50 and p99 latency, errors (must be
   zero). The load comes from a lean keep-alive HTTP/1.1 client on asyncio streams
   (well under a millisecond of CPU per request; httpx spends about 4.5 ms, which on 2
   shared cores would be taken from the service it measures).
   Where it goes: CPU milliseconds per request of the server process, the solver
   processes and the load generator (from /proc/PID/stat), and the p50 wall milliseconds
   of each phase from the service's Server-Timing header: waiting for a solver process
   (queue), the round trip to it (worker), and in it the solve, the report (the
   resolution's JSON and reasons) and the JSON encoding; ipc is the round trip less the
   phases (pipes, pickling, scheduling).
   With `--baseline DIR`, a second server runs from the tree DIR (PYTHONPATH=DIR alone)
   and the two are loaded in alternate rounds: throughput of each and their ratio.
2. The same while one slow, time-limited request (1,000 generated perf claims) is in
   flight, with GET /healthz polled every 50 ms meanwhile: health-check p50/p99/max
   latency (target: every one under 50 ms).
3. Recovery: under load at concurrency 8, one busy solver process is SIGKILLed (as an
   out-of-memory kill would): the answers by status during the run (the request that was
   on it gets 503 worker_lost, nothing gets 500), and the seconds until /healthz says
   "ok" again with the replacement serving.

Only loopback traffic; the services are started and stopped by this script. The load
average is printed with the figures: other work on the machine shares its cores.
Run: python benchmarks/bench_service.py [--requests 2000] [--concurrency 32]
     [--baseline /path/to/other/tree] [--rounds 2] [--skip-faults]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlparse

import httpx

from arbiter import load_claims
from arbiter.claims import claim_to_dict
from arbiter.service.process import RunningService

SCENARIO = "arbiter/scenarios/server_h100.yaml"
PHASES = ("queue", "worker", "solve", "report", "encode")
TICKS = os.sysconf("SC_CLK_TCK")


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def worker_pids(url: str) -> list[int]:
    with urllib.request.urlopen(url + "/healthz", timeout=10) as response:
        return list(json.loads(response.read())["workers"]["pids"])


def distinct_requests(total: int, port: int) -> list[bytes]:
    """`total` HTTP/1.1 requests of the realistic scenario, no two alike."""
    claims = [claim_to_dict(c) for c in load_claims(SCENARIO)]
    out = []
    for i in range(total):
        first = {**claims[0], "source": f"{claims[0].get('source', '')} (request {i})"}
        body = json.dumps({"claims": [first, *claims[1:]]}).encode()
        head = (
            f"POST /v1/arbitrate HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        out.append(head.encode() + body)
    return out


def server_timing(value: str) -> dict[str, float]:
    """`queue;dur=0.1, worker;dur=25.3` -> {"queue": 0.1, "worker": 25.3}."""
    out = {}
    for part in value.split(","):
        name, _, rest = part.strip().partition(";")
        if rest.startswith("dur="):
            out[name] = float(rest[4:])
    return out


class Lean:
    """One keep-alive HTTP/1.1 connection that sends prepared requests and reads the
    answers by their content-length."""

    async def open(self, host: str, port: int) -> Lean:
        self.reader, self.writer = await asyncio.open_connection(host, port)
        return self

    async def send(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        self.writer.write(raw)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            if key:
                headers[key.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise RuntimeError(f"an answer without content-length: {lines[0]}")
        body = await self.reader.readexactly(int(headers["content-length"]))
        return int(lines[0].split()[1]), headers, body

    def close(self) -> None:
        self.writer.close()


@dataclass
class LoadRun:
    """What one load run measured."""

    total: int
    elapsed: float
    latencies: list[float]
    errors: int
    phases: dict[str, list[float]] = field(default_factory=dict)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # per request, by process
    load_avg: float = 0.0

    @property
    def throughput(self) -> float:
        return self.total / self.elapsed

    def summary(self) -> str:
        return (
            f"throughput {self.throughput:.0f} req/s   p50 {pct(self.latencies, 0.5):.1f} ms   "
            f"p99 {pct(self.latencies, 0.99):.1f} ms   errors {self.errors}   "
            f"(load average {self.load_avg:.1f})"
        )

    def breakdown(self) -> list[str]:
        cpu = self.cpu_ms
        lines = [
            "  CPU ms per request: "
            + "   ".join(f"{name} {ms:.2f}" for name, ms in cpu.items())
            + f"   (service total {cpu.get('server', 0) + cpu.get('solvers', 0):.2f})"
        ]
        if self.phases.get("worker"):
            p50 = {name: statistics.median(v) for name, v in self.phases.items() if v}
            inside = sum(p50.get(name, 0.0) for name in ("solve", "report", "encode"))
            lines.append(
                "  wall ms p50 by phase: "
                + "   ".join(f"{name} {p50[name]:.2f}" for name in PHASES if name in p50)
                + f"   ipc {max(0.0, p50['worker'] - inside):.2f}"
            )
        else:
            lines.append("  (this server sends no Server-Timing header)")
        return lines


async def lean_load(service: RunningService, requests: list[bytes], concurrency: int) -> LoadRun:
    """Send `requests` over `concurrency` keep-alive connections; CPU per process counted
    over the run alone."""
    where = urlparse(service.url)
    host, port = where.hostname or "127.0.0.1", int(where.port or 80)
    connections = [await Lean().open(host, port) for _ in range(concurrency)]
    latencies: list[float] = []
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    errors = 0
    queue = iter(requests)
    solvers = worker_pids(service.url)
    before = {"server": cpu_seconds(service.proc.pid), "solvers": sum(map(cpu_seconds, solvers))}
    load_cpu = time.process_time()

    async def drive(connection: Lean) -> None:
        nonlocal errors
        for raw in queue:
            t0 = time.perf_counter()
            status, headers, _ = await connection.send(raw)
            latencies.append((time.perf_counter() - t0) * 1000)
            errors += status != 200
            for name, ms in server_timing(headers.get("server-timing", "")).items():
                phases.setdefault(name, []).append(ms)

    start = time.perf_counter()
    await asyncio.gather(*(drive(c) for c in connections))
    elapsed = time.perf_counter() - start
    n = len(requests)
    cpu = {
        "server": (cpu_seconds(service.proc.pid) - before["server"]) * 1000 / n,
        "solvers": (sum(map(cpu_seconds, solvers)) - before["solvers"]) * 1000 / n,
        "load generator": (time.process_time() - load_cpu) * 1000 / n,
    }
    for connection in connections:
        connection.close()
    return LoadRun(n, elapsed, latencies, errors, phases, cpu, os.getloadavg()[0])


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


def start(tree: str | None) -> RunningService:
    env = None if tree is None else {**os.environ, "PYTHONPATH": tree}
    return RunningService("--time-limit", "10", env=env, cwd=tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--baseline", help="a tree to compare with (its server alternates)")
    parser.add_argument("--rounds", type=int, default=2, help="alternate rounds with --baseline")
    parser.add_argument("--skip-faults", action="store_true", help="load figures only")
    args = parser.parse_args()
    body = {"claims": [claim_to_dict(c) for c in load_claims(SCENARIO)]}
    print(f"{os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.1f}")
    service = start(None)
    baseline = start(args.baseline) if args.baseline else None
    try:
        ours: list[LoadRun] = []
        theirs: list[LoadRun] = []
        rounds = args.rounds if baseline else 1
        for i in range(rounds):
            for label, server, runs in (
                ("this tree", service, ours),
                ("baseline", baseline, theirs),
            ):
                if server is None:
                    continue
                asyncio.run(lean_load(server, distinct_requests(64, server.port), 32))  # warm
                run = asyncio.run(
                    lean_load(
                        server, distinct_requests(args.requests, server.port), args.concurrency
                    )
                )
                runs.append(run)
                print(
                    f"[{label}{f', round {i + 1}' if baseline else ''}] {args.requests} distinct "
                    f"requests of the realistic scenario at concurrency {args.concurrency}:"
                )
                print("  " + run.summary())
                for line in run.breakdown():
                    print(line)
        if theirs:
            mine = statistics.median(r.throughput for r in ours)
            base = statistics.median(r.throughput for r in theirs)
            print(
                f"throughput, median of {rounds} alternate rounds: this tree {mine:.0f} req/s, "
                f"baseline {base:.0f} req/s, ratio {mine / base:.2f}x"
            )
        if args.skip_faults:
            return
        checks, status, slow_s = asyncio.run(health_during_slow(service.url))
        print(
            "health checks while a slow request (1,000 claims, time limit 3 s) was in flight "
            f"({slow_s:.2f} s, HTTP {status}):"
        )
        print(
            f"  {len(checks)} checks   p50 {pct(checks, 0.5):.1f} ms   "
            f"p99 {pct(checks, 0.99):.1f} ms   max {max(checks):.1f} ms   "
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
        if baseline is not None:
            baseline.stop()


if __name__ == "__main__":
    main()
