"""Fuzz the local HTTP service with hostile requests and count the answers by status.

Starts `arbiter serve` on loopback, sends `--requests` requests drawn by
`arbiter.service.attacks.hostile_request` (seeded) at `--concurrency`, and reports:
answers by status and error code, every 5xx (there must be none; each is written to
`--failures` as a reproducer), answers that are not a JSON object with an `error` code,
whether /metrics counted every response, and how many solver processes were replaced
(a request that ran past its deadline or whose client left costs one). A 503 that
carries Retry-After (queue full, deadline passed in the queue, worker lost) is retried
after that wait, as a well-behaved client does, up to `--retries` times; the retries are
reported apart, and a 503 still standing after them counts as a 5xx. With `--concurrency`
at most `--workers`, requests never queue. Exit 1 on any defect.

Run: python benchmarks/fuzz_service.py [--requests 10000] [--concurrency 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import re
import sys
import time
from pathlib import Path

import httpx

from arbiter.service.attacks import hostile_request
from arbiter.service.process import RunningService


async def main(args: argparse.Namespace) -> int:
    service = RunningService(
        "--workers", str(args.workers), "--time-limit", "2", "--max-claims", "500"
    )
    rng = random.Random(args.seed)
    requests = [hostile_request(rng) for _ in range(args.requests)]
    statuses: collections.Counter[tuple[int, str]] = collections.Counter()
    failures: list[dict] = []
    malformed = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(requests)):
        queue.put_nowait(i)

    retried: collections.Counter[str] = collections.Counter()

    async def send(client: httpx.AsyncClient, i: int) -> httpx.Response:
        method, path, params, body = requests[i]
        for _ in range(args.retries + 1):
            response = await client.request(
                method,
                path,
                params=params,
                content=body or None,
                headers={"content-type": "application/json"},
            )
            if response.status_code != 503 or "retry-after" not in response.headers:
                break
            retried[response.json().get("error", "?")] += 1
            await asyncio.sleep(float(response.headers["retry-after"]))
        return response

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal malformed
        while not queue.empty():
            i = queue.get_nowait()
            method, path, params, body = requests[i]
            try:
                response = await send(client, i)
            except httpx.HTTPError as exc:
                failures.append({"index": i, "status": None, "error": repr(exc)})
                continue
            code = ""
            try:
                data = response.json()
                if response.status_code >= 400:
                    code = data["error"]
                elif not isinstance(data, (dict, list)):
                    raise ValueError("not an object")
            except (ValueError, KeyError, TypeError):
                malformed += 1
                code = "<not json>"
            statuses[(response.status_code, code)] += 1
            if response.status_code >= 500:
                failures.append(
                    {
                        "index": i,
                        "status": response.status_code,
                        "method": method,
                        "path": path,
                        "params": params,
                        "body": body.decode("latin-1"),
                        "answer": response.text[:2000],
                    }
                )

    start = time.perf_counter()
    try:
        async with httpx.AsyncClient(base_url=service.url, timeout=120) as client:
            await asyncio.gather(*(worker(client) for _ in range(args.concurrency)))
            metrics = (await client.get("/metrics")).text
    finally:
        service.stop()
    elapsed = time.perf_counter() - start
    counted = sum(
        float(m.group(1))
        for m in re.finditer(
            r'^arbiter_responses_total\{[^}]*endpoint="(?!/metrics)[^"]*"[^}]*\} (\S+)$',
            metrics,
            re.M,
        )
    )
    total = sum(statuses.values())
    print(f"{total} requests in {elapsed:.1f} s ({total / elapsed:.0f}/s), seed {args.seed}")
    for (status, code), n in sorted(statuses.items()):
        print(f"  {status} {code or '-':<20} {n}")
    five = sum(n for (status, _), n in statuses.items() if status >= 500)
    print(f"5xx: {five}; transport errors: {sum(1 for f in failures if f['status'] is None)}")
    print(f"answers that are not JSON with an error code: {malformed}")
    print(f"/metrics counted {counted:.0f} of {total + sum(retried.values())} responses")
    print(f"503 answers retried after Retry-After: {dict(retried) or 0}")
    replaced = re.search(r"^arbiter_workers_replaced (\S+)$", metrics, re.M)
    print(f"solver processes replaced: {replaced.group(1) if replaced else '?'}")
    if failures:
        Path(args.failures).write_text(json.dumps(failures, indent=1))
        print(f"reproducers written to {args.failures}")
    return 1 if failures or malformed or counted < total + sum(retried.values()) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--failures", default="fuzz_failures.json")
    sys.exit(asyncio.run(main(parser.parse_args())))
