"""`arbiter compare INTENT.yaml --engines <engine>,<engine>`: one engine-neutral intent,
each engine's verdict side by side (the engines: `arbiter.dialects.DIALECTS`).

Exit 0: every engine holds the intent (with or without changes). Exit 1: some engine
conflicts, or could not be checked (its dialect is not importable). Exit 2: bad input
(an unknown feature or engine, a bad value, an unreadable file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..dialects import DIALECTS
from ..errors import ArbiterError
from .console import check_output, fail_with, out, working, write_output
from .options import FormatOption, JsonOption, output_format


def compare_command(
    intent: Annotated[
        Path, typer.Argument(help="The intent: YAML or JSON with hard/soft features.")
    ],
    engines: Annotated[
        str, typer.Option("--engines", "-e", help="Comma-separated: " + ", ".join(DIALECTS) + ".")
    ] = ",".join(DIALECTS),
    model: Annotated[
        str | None,
        typer.Option("--model", help="A config.json (or its folder) or a bundled model name."),
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="A catalog device, e.g. H100-80GB.")
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", help="GPUs available (default: the intent's `gpus:`, else 1)."),
    ] = None,
    format_: FormatOption = None,
    as_json: JsonOption = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report to this file.")
    ] = None,
) -> None:
    """Check one engine-neutral intent against several engines, side by side: holds, holds
    with changes, or conflicts (with the minimal conflict), the native config of each, and
    the KV capacity each gives.

    Example: arbiter compare examples/compare/chat.yaml --engines trtllm,mlc
    """
    fmt = output_format(format_, as_json, allowed=("text", "markdown", "json", "html"))
    # the dialects and the solver (OR-Tools) load only when a command compares
    from ..compare import compare, parse_engines, read_intent, render

    check_output(output)
    try:
        names = parse_engines(engines)
        parsed = read_intent(intent, model=model, device=device, gpus=gpus)
        with working("comparing", enabled=fmt in ("text", "markdown", "html")):
            comparison = compare(parsed, names)
    except ArbiterError as exc:
        fail_with(exc)
    # the table fits the terminal (or the pipe's width); a file gets each cell on one line
    text = render(comparison, fmt, width=out.width if output is None else None)
    if output is not None:
        write_output(output, text)
    else:
        out.print(text, markup=False, highlight=False, end="", soft_wrap=True)
    raise typer.Exit(comparison.exit_code)


__all__ = ["compare_command"]
