"""The options the commands share, defined once: `--format` (with `--json` as its alias),
`--output`, `--quiet`, `--profile` and `--time-limit`.

A command takes `format_: FormatOption = None` and `as_json: JsonOption = False` and calls
`output_format(format_, as_json, allowed=...)`, which returns the one format to render and
refuses, before any work, a format the command cannot write or a `--json` that contradicts
`--format`:

    def check(..., format_: FormatOption = None, as_json: JsonOption = False, ...):
        fmt = output_format(format_, as_json, allowed=("text", "json", "sarif"))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from ..report import VERDICT_FORMATS as FORMATS  # every format a command can write

MACHINE_FORMATS = frozenset({"json", "sarif"})  # no spinner, no colour: a program reads them

FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help="Output format: text, json, markdown, html or sarif (what the command renders;"
        " default text).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", metavar="FILE", help="Write the output to FILE."),
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print nothing but errors; the exit code says it all.")
]


def _named(value: str | None, what: str, known: Sequence[str]) -> str | None:
    """`value` when it is one of `known`; else a usage error (exit 2) with close matches
    and the names it takes, before any file is read (the culprit is the option)."""
    if value is None or value in known:
        return value
    import difflib  # only a bad name needs the close matches

    close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise UnknownName(f"unknown {what} {value!r}; {hint}(one of {', '.join(known)})", close)


class UnknownName(typer.BadParameter):
    """An option's value that names no known profile or dialect; `possibilities` are the
    close matches (the JSON error entry's suggestions, as click's own unknown options)."""

    def __init__(self, message: str, possibilities: Sequence[str]):
        super().__init__(message)
        self.possibilities = list(possibilities)


def known_profile(value: str | None) -> str | None:
    """The `--profile` callback: a release line of `constraints.profiles.PROFILES`, or one
    of its old names (`ALIASES`)."""
    if value is None:
        return None
    from constraints.profiles import ALIASES, PROFILES  # loaded only when one is named

    if value in ALIASES:  # an old name of a release line (`sglang-0.5`, `trtllm-current`)
        return value
    return _named(value, "profile", list(PROFILES))


def known_dialect(value: str | None) -> str | None:
    """The `--dialect` callback: an engine of the `DIALECTS` registry."""
    from ..dialects import DIALECTS  # the registry is a table, cheap to load

    return _named(value, "dialect", list(DIALECTS))


ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile",
        metavar="PROFILE",
        callback=known_profile,
        help="Engine release line, e.g. trtllm-1.2, vllm-0.24, sglang-0.5.16 (arbiter profiles).",
    ),
]
TimeLimitOption = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        metavar="SECONDS",
        help="Seconds the solver may spend.",
    ),
]


class FormatError(ValueError):
    """A `--format` the command cannot write, or one `--json` contradicts.

    `value` is what was asked for, `allowed` what the command renders; exit code 2."""

    exit_code = 2
    http_status = 422
    code = "invalid_option"

    def __init__(self, value: str, allowed: Sequence[str], reason: str) -> None:
        super().__init__(value, tuple(allowed), reason)
        self.value = value
        self.allowed = tuple(allowed)
        self.reason = reason

    def __str__(self) -> str:
        return f"--format {self.value}: {self.reason}; use one of {', '.join(self.allowed)}"


def resolve_format(
    format_: str | None, as_json: bool, allowed: Sequence[str] = ("text", "json")
) -> str:
    """The one format to render, from `--format` and its alias `--json`; `FormatError` for
    a format outside `allowed` or `--json` beside another `--format`."""
    if format_ is not None:
        value = format_.strip().lower()
        if value not in FORMATS:
            raise FormatError(format_, allowed, "unknown format")
        if value not in allowed:
            raise FormatError(format_, allowed, "this command cannot write it")
        if as_json and value != "json":
            raise FormatError(format_, ("json",), "--json asks for json at the same time")
        return value
    return "json" if as_json else "text"


def output_format(
    format_: str | None, as_json: bool, allowed: Sequence[str] = ("text", "json")
) -> str:
    """`resolve_format`, failing the command (exit 2, the message on stderr) on bad input.
    The format chosen is recorded: under json the command's errors are JSON too."""
    from .usage_json import ask_json  # stdlib only

    ask_json(as_json or (format_ or "").strip().lower() == "json")
    try:
        fmt = resolve_format(format_, as_json, allowed)
        ask_json(fmt == "json")
        return fmt
    except FormatError as exc:
        # the console loads rich: only a refused format pays for it here
        from .console import fail

        fail(str(exc), exc.exit_code)
