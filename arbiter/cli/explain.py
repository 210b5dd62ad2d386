"""`arbiter explain FILE`: the conflict (or drop) report for claims in YAML or JSON.

Exit codes: 0 a configuration exists (the report explains any dropped perf claims), 1 the
functional claims conflict (the report lists conflicts and corrections), 2 bad input.
The solver is imported only when the command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from ..application.outcome import outcome
from ..claims import load_claims
from ..errors import ArbiterError

FORMATS = ("text", "markdown", "json", "html")


def explain_command(
    file: Annotated[Path, typer.Argument(help="Claims in YAML or JSON.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="text, markdown, json or html.")
    ] = "text",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here instead.")
    ] = None,
    max_conflicts: Annotated[
        int, typer.Option("--max-conflicts", help="Most conflicts to enumerate.")
    ] = 8,
    max_corrections: Annotated[
        int, typer.Option("--max-corrections", help="Most corrections to report.")
    ] = 8,
    time_budget: Annotated[
        float, typer.Option("--time-budget", help="Seconds the conflict search may take.")
    ] = 5.0,
    profile: Annotated[
        str | None,
        typer.Option("--profile", help="Engine release line (default trtllm-1.2)."),
    ] = None,
) -> None:
    """Explain claims: every conflict, every verified fix, every dropped claim.

    Example: arbiter explain claims.yaml --format html -o report.html
    """
    # the explainer (and OR-Tools) loads only when the command runs
    from ..application.solve import explain
    from ..explain import Limits

    if format not in FORMATS:
        _fail(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if not file.exists():
        _fail(f"{file}: no such file")
    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        _fail(f"{output}: not a file in an existing folder")
    if max_conflicts < 1 or max_corrections < 1 or time_budget <= 0:
        _fail("--max-conflicts, --max-corrections and --time-budget must be positive")
    try:
        claims = load_claims(file)
        limits = Limits(max_conflicts, max_corrections, time_budget)
        explanation = explain(claims, limits=limits, profile=profile)
    except ArbiterError as exc:
        _fail(str(exc) if getattr(exc, "file", None) else f"{file}: {exc}", outcome(exc).exit_code)
    color = format == "text" and output is None and sys.stdout.isatty()
    report = explanation.render(format, color=color)
    if output is not None:
        try:
            output.write_text(report, encoding="utf-8")
        except OSError as exc:
            _fail(f"{output}: cannot write: {exc.strerror}")
    else:
        sys.stdout.write(report)
    raise typer.Exit(1 if explanation.status == "conflict" else 0)


def _fail(message: str, code: int = 2) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)
