"""`arbiter serve` says what it starts in plain words ("1 solver process", D-L12) and logs
each request unless told not to (`--no-access-log`); the server itself is stubbed here (the
service tests start the real one)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

import arbiter.service
from arbiter.cli import app


@pytest.mark.parametrize(
    ("args", "line", "logged"),
    [
        (["--workers", "1"], "(1 solver process)", True),
        (["--workers", "3", "--access-log"], "(3 solver processes)", True),
        (["--workers", "2", "--no-access-log"], "(2 solver processes)", False),
    ],
)
def test_the_start_line_and_the_access_log(monkeypatch, args, line, logged):
    calls: list[dict[str, Any]] = []

    def fake(host, port, settings, *, access_log=False):
        calls.append({"workers": settings.workers, "access_log": access_log})

    monkeypatch.setattr(arbiter.service, "serve", fake)
    result = CliRunner().invoke(app, ["serve", "--port", "8123", *args])
    assert result.exit_code == 0, result.output
    assert f"arbiter service on http://127.0.0.1:8123 {line}" in result.stdout
    assert calls == [{"workers": int(args[1]), "access_log": logged}]
