"""Faults under the real service: a killed solver process, a full queue, a client that
hangs up, a SIGKILLed server. Each runs `arbiter serve` in a subprocess."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from arbiter.service.process import RunningService
from tests.arbiter.http_client import HTTP

PATHS = [
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


def slow_body(time_limit_s: float = 20.0, n: int = 1000) -> dict:
    """Many weighted perf claims: a search that runs until its time limit."""
    rng = random.Random(1)
    claims = [
        {
            "kind": "perf",
            "name": f"p{i}",
            "weight": rng.randint(1, 9),
            "requires": {p: rng.choice([True, False]) for p in rng.sample(PATHS, 3)},
        }
        for i in range(n)
    ]
    return {"claims": claims, "options": {"time_limit_s": time_limit_s}}


def in_background(fn, *args, **kwargs) -> dict:
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc

    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def health(service) -> dict:
    return HTTP.get(service.url + "/healthz", timeout=10).json()


def wait_for(predicate, timeout: float = 60.0, step: float = 0.05):
    """Poll until `predicate()` is truthy; fail the test after `timeout` (a safety net,
    not a timing assertion)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    pytest.fail("condition not reached")


def busy_pid(service) -> int | None:
    pids = health(service)["workers"]["busy_pids"]
    return pids[0] if pids else None


def is_gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        state = next(line for line in status.read_text().splitlines() if line.startswith("State"))
    except (OSError, StopIteration):
        return True
    return "Z" in state.split()[1]  # a zombie has exited


@pytest.fixture
def one_worker():
    running = RunningService("--workers", "1", "--max-queue", "1", "--time-limit", "25")
    yield running
    running.stop()


def test_a_killed_worker_is_replaced_and_its_request_gets_503(one_worker):
    url = one_worker.url + "/v1/arbitrate"
    slow = in_background(HTTP.post, url, json=slow_body(), timeout=120)
    pid = wait_for(lambda: busy_pid(one_worker))
    # one more request waits in the queue (limit 1); a third is refused at once
    waiting = in_background(HTTP.post, url, json={"claims": []}, timeout=120)
    wait_for(lambda: health(one_worker)["workers"]["waiting"] == 1)
    full = HTTP.post(url, json={"claims": []}, timeout=60)
    assert full.status_code == 503 and full.json()["error"] == "queue_full"
    assert full.headers["retry-after"] == str(full.json()["retry_after"])

    os.kill(pid, signal.SIGKILL)  # as an out-of-memory kill would
    slow["thread"].join(60)
    lost = slow["result"]
    assert lost.status_code == 503, lost.text
    assert lost.json()["error"] == "worker_lost" and int(lost.headers["retry-after"]) >= 1
    # no worker can take work until the replacement is up: not ready, health says so
    ready = HTTP.get(one_worker.url + "/readyz", timeout=10)
    state = health(one_worker)
    assert "workers" in state, state
    if state["workers"]["alive"] == 0:
        assert ready.status_code == 503 and ready.json()["error"] == "not_ready"
        assert state["status"] in ("down", "degraded")
    # the waiting request is served by the replacement, and so are the next ones
    waiting["thread"].join(90)
    assert waiting["result"].status_code == 200, waiting["result"].text
    assert wait_for(lambda: health(one_worker)["status"] == "ok")
    state = health(one_worker)["workers"]
    assert state["replaced"] == 1 and pid not in state["pids"]
    for _ in range(3):
        assert HTTP.post(url, json={"claims": []}, timeout=60).status_code == 200
    assert HTTP.get(one_worker.url + "/readyz").status_code == 200
    metrics = HTTP.get(one_worker.url + "/metrics").text
    assert (
        'arbiter_responses_total{code="worker_lost",endpoint="/v1/arbitrate",status="503"} 1.0'
        in metrics
    )
    assert (
        'arbiter_responses_total{code="queue_full",endpoint="/v1/arbitrate",status="503"} 1.0'
        in metrics
    )
    assert "arbiter_workers_replaced 1.0" in metrics


def test_a_request_whose_client_hung_up_is_stopped(one_worker):
    with pytest.raises(httpx.ReadTimeout):
        HTTP.post(one_worker.url + "/v1/arbitrate", json=slow_body(), timeout=3)
    # the worker running it is stopped and replaced, so the next request does not wait
    wait_for(lambda: health(one_worker)["workers"]["replaced"] == 1)
    assert (
        HTTP.post(one_worker.url + "/v1/arbitrate", json={"claims": []}, timeout=60).status_code
        == 200
    )
    metrics = HTTP.get(one_worker.url + "/metrics").text
    assert 'code="client_closed",endpoint="/v1/arbitrate",status="499"' in metrics


def test_a_sigkilled_server_leaves_no_orphan_workers():
    running = RunningService("--workers", "2")
    try:
        pids = health(running)["workers"]["pids"]
        assert len(pids) == 2
        running.proc.kill()
        running.proc.wait(10)
        wait_for(lambda: all(is_gone(pid) for pid in pids), timeout=30)
    finally:
        running.stop()
        for pid in pids:
            if not is_gone(pid):
                os.kill(pid, signal.SIGKILL)
