"""What every command prints through: the consoles, failures with their exit codes, and
output files checked before any work."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from ..application.outcome import outcome

# wide tables when piped, so scripts and logs get whole option paths
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


def fail(message: str, code: int) -> NoReturn:
    """Print `error: message` on stderr and exit with `code`."""
    err.print(f"[bold red]error:[/] {message}" if err.is_terminal else f"error: {message}")
    raise typer.Exit(code)


def fail_with(exc: BaseException, message: str | None = None) -> NoReturn:
    """Exit for an error with the code `arbiter.application.outcome` gives it."""
    answer = outcome(exc)
    fail(message if message is not None else answer.payload["message"], answer.exit_code)


def check_output(output: Path | None) -> None:
    """Refuse, before any work, an output path whose folder is missing or that is a folder."""
    if output is None:
        return
    if output.is_dir():
        fail(f"{output}: is a directory; give a file name for the output", 2)
    parent = output.parent
    if not parent.is_dir():
        fail(f"{output}: the folder {str(parent)!r} does not exist", 2)


def write_output(output: Path, text: str) -> None:
    """Write an output file; an unwritable path is a clean exit 2, not a traceback."""
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror}", 2)


def print_json(data: object) -> None:
    """Print `data` as indented JSON on stdout: highlighted on a terminal when small, plain
    otherwise (rich's highlighter takes tens of seconds on the full rule listing, and a
    pipe wants plain text anyway)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if out.is_terminal and len(text) < 65536:
        out.print_json(text)
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
