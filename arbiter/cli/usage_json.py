"""A command line the parser refused (a bad flag value, an unknown option, a missing
argument), answered as JSON when the command line asked for JSON: the `arbiter.verdict`
report with verdict `error` and one `input_errors` entry naming the option, its value,
why, and the close matches (`--gpus 0`: "0 is not in the range x>=1").

`wants_json(args)` tells from the raw arguments whether JSON was asked for (`--json`,
`--format json`, `--format=json`, `-f json`); `usage_report(exc, command)` is the report.

The same holds once a command runs: `output_format` (`arbiter.cli.options`) records the
format chosen (`ask_json`), and `console.fail` / `console.fail_with` then print the
error as the report (`error_report`) on stdout, with the same exit code, instead of
`error: ...` on stderr. Every command's input errors are JSON under `--format json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

# whether the running command answers in JSON (set by `output_format`, reset per command)
JSON_ERRORS: ContextVar[bool] = ContextVar("arbiter_json_errors", default=False)

JSON_FLAGS = ("--json",)
FORMAT_FLAGS = ("--format", "-f")


def wants_json(args: Sequence[str]) -> bool:
    """Whether `args` ask for JSON output."""
    words = list(args)
    for i, word in enumerate(words):
        if word in JSON_FLAGS:
            return True
        name, eq, value = word.partition("=")
        if name in FORMAT_FLAGS:
            given = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            if given.strip().lower() == "json":
                return True
    return False


def _option(exc: Any) -> str | None:
    """The option or argument the parser refused, as the user writes it."""
    name = getattr(exc, "option_name", None)  # NoSuchOption, BadOptionUsage
    if name:
        return str(name)
    param = getattr(exc, "param", None)  # BadParameter, MissingParameter
    if param is None:
        return None
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    return opts[0] if opts else getattr(param, "name", None)


def _value(exc: Any, args: Sequence[str], option: str | None) -> Any:
    """The value the user gave the refused option, read back from the arguments."""
    if option is None or not option.startswith("-"):
        return None
    words = list(args)
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name == option:
            return value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return None


def usage_report(exc: Any, args: Sequence[str], command: str | None) -> dict[str, Any]:
    """The report of a refused command line (`exc`: click's UsageError)."""
    from ..report.schema import InputErrorEntry, VerdictReport  # pydantic loads on error only

    option = _option(exc)
    suggestions = sorted(getattr(exc, "possibilities", None) or ())
    entry = InputErrorEntry(
        path=option,
        value=_value(exc, args, option),
        reason=exc.format_message(),
        suggestions=[str(s) for s in suggestions],
        file=None,
    )
    report = VerdictReport(
        verdict="error",
        error="invalid_option",
        message=exc.format_message(),
        source=f"arbiter {command}" if command else "arbiter",
        input_errors=[entry],
    )
    return report.to_json()


def ask_json(on: bool) -> None:
    """Record whether the running command answers in JSON (its errors too)."""
    JSON_ERRORS.set(on)


def error_report(exc: BaseException | None, message: str, command: str | None) -> dict[str, Any]:
    """The report of a command's refusal: from the error where there is one (every
    problem an entry), else one entry with the message."""
    from ..report.schema import InputErrorEntry, VerdictReport, from_error  # on error only

    if exc is not None:
        report = from_error(exc, source=getattr(exc, "file", None))
        if message and len(report.input_errors) == 1 and not report.input_errors[0].path:
            report.input_errors[0].reason = message
        report.message = message or report.message
        return report.to_json()
    return VerdictReport(
        verdict="error",
        error="invalid_input",
        message=message,
        source=f"arbiter {command}" if command else "arbiter",
        input_errors=[InputErrorEntry(reason=message)],
    ).to_json()
