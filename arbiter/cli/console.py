"""What every command prints through: the consoles, a progress indicator for slow work,
failures with their exit codes, and output files checked before any work.

The rich consoles are made on first use, so `arbiter --help` never imports rich."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from .lazy import quiet_stdout

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 160  # wide tables when piped, so scripts and logs get whole option paths


class LazyConsole:
    """A rich `Console` on stdout or stderr, created the first time it is used."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            # rich loads with the first thing printed, not with the command line
            from rich.console import Console

            class PipeConsole(Console):
                def on_broken_pipe(self) -> None:
                    """The reader of a pipe left (`arbiter rules | head -1`): stop quietly
                    with exit 0, where rich's own answer is 1, the "claims conflict" code."""
                    quiet_stdout()
                    raise SystemExit(0)

            stream = sys.stderr if self._stderr else sys.stdout
            terminal = stream.isatty()
            self._console = PipeConsole(
                stderr=self._stderr,
                highlight=False,
                width=None if terminal else PIPE_WIDTH,
                # piped text is never hard-wrapped: a long `# ...` line of `check` stays one
                # line, so the YAML it prints stays valid (tables still fit PIPE_WIDTH)
                soft_wrap=not terminal,
            )
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)


out: Any = LazyConsole(stderr=False)
err: Any = LazyConsole(stderr=True)


@contextmanager
def working(message: str, *, enabled: bool = True) -> Iterator[None]:
    """A spinner with `message` on stderr while the block runs; nothing when stderr is no
    terminal or `enabled` is false (machine output, `--quiet`)."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    with err.status(message, spinner="dots"):
        yield


def fail(message: str, code: int, exc: BaseException | None = None) -> NoReturn:
    """Print `error: message` on stderr and exit with `code`; under `--format json` the
    `arbiter.verdict` error report on stdout instead (`exc`'s problems, an entry each)."""
    from .usage_json import JSON_ERRORS  # stdlib only: the format the command answers in

    if JSON_ERRORS.get():
        from .usage_json import error_report  # the report (pydantic) loads on error only

        print_json(error_report(exc, message, _command()))
        raise typer.Exit(code)
    # the message is the user's and the engine's words: no markup in it (`".[plan]"` stays)
    if err.is_terminal:
        err.print("[bold red]error:[/] ", end="")
        err.print(message, markup=False, highlight=False)
    else:
        err.print(f"error: {message}", markup=False, highlight=False)
    raise typer.Exit(code)


def fail_with(exc: BaseException, message: str | None = None) -> NoReturn:
    """Exit for an error with the code `arbiter.application.outcome` gives it."""
    # the outcome table imports the schema: only a failing command pays for it
    from ..application.outcome import outcome

    answer = outcome(exc)
    fail(message if message is not None else answer.payload["message"], answer.exit_code, exc)


def _command() -> str | None:
    """The running command's name (`check`), for an error report's source."""
    from typer._click.globals import get_current_context  # typer vendors click

    ctx = get_current_context(silent=True)
    return ctx.info_name if ctx is not None else None


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
