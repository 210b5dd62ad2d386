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

from ..errors import ArbiterError, InvalidClaim
from ..report import FORMATS  # the one table of report formats (arbiter/report)
from .console import working
from .options import FormatError, FormatOption, JsonOption, ProfileOption, resolve_format
from .usage_json import ask_json


def explain_command(
    file: Annotated[Path, typer.Argument(help="Claims in YAML or JSON.")],
    format_: FormatOption = None,
    as_json: JsonOption = False,
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
        float,
        typer.Option(
            "--time-limit",
            "--time-budget",
            metavar="SECONDS",
            help="Seconds the conflict search may take (--time-budget: the old name).",
        ),
    ] = 5.0,
    profile: ProfileOption = None,
) -> None:
    """Explain claims: every conflict, every verified fix, every dropped claim.

    --format: text, markdown, json or html.

    Example: arbiter explain examples/claims_streamingllm.yaml --format html -o report.html
    """
    # the explainer (and OR-Tools) loads only when the command runs
    from ..application.outcome import outcome
    from ..application.solve import explain, load_scenario
    from ..explain import Limits

    try:
        format = resolve_format(format_, as_json, FORMATS)
    except FormatError as exc:
        _fail(str(exc))
    ask_json(format == "json")
    if not file.exists():
        _fail(f"{file}: no such file")
    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        _fail(f"{output}: not a file in an existing folder")
    if max_conflicts < 1 or max_corrections < 1 or time_budget <= 0:
        _fail("--max-conflicts, --max-corrections and --time-limit must be positive")
    try:
        # the file's own `profile:` as `solve` reads it (one scenario loader); --profile wins
        scenario = load_scenario(file)
        limits = Limits(max_conflicts, max_corrections, time_budget)
        with working("explaining", enabled=format == "text" and output is None):
            explanation = explain(
                scenario.claims, limits=limits, profile=profile or scenario.profile
            )
    except InvalidClaim as exc:  # an engine config or another kind of file: say which command
        from .solve import claims_message, wrong_file  # only a refused file needs them

        wrong = wrong_file(file, "explain")
        _fail(wrong or claims_message(exc, file), outcome(exc).exit_code)
    except ArbiterError as exc:
        message = str(exc) if getattr(exc, "file", None) else f"{file}: {exc}"
        _fail(message, outcome(exc).exit_code, exc)
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


def _fail(message: str, code: int = 2, exc: BaseException | None = None) -> NoReturn:
    """`error: message` on stderr, or the error report under --format json."""
    from .console import fail  # the console loads rich: only a refusal pays for it

    fail(message, code, exc)
