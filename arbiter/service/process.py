"""Run the real service with uvicorn in a subprocess on 127.0.0.1 (tests and benchmarks).

Only the standard library waits for it to come up: the package does not depend on an HTTP
client (the tests' `httpx` is a `[dev]` extra)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    """Whether `url` answers 200 within a second (the standard library, no test client)."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class RunningService:
    """`arbiter serve` on a free loopback port; waits for /healthz; `stop()` ends it.
    `env` and `cwd`, when given, are the server's whole environment and its working
    directory (a benchmark runs another tree's server to compare two versions)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: str | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "arbiter.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = self.proc.stdout.read().decode() if self.proc.stdout else ""
                raise RuntimeError(f"service exited: {said}")
            if _healthy(self.url + "/healthz"):
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("service did not start within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
