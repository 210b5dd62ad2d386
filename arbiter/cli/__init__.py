"""The `arbiter` command line: a thin shell over the application layer
(`arbiter.application`).

Exit codes: 0 a configuration was found, 1 the claims conflict, 2 bad input, 3 an internal
error; each error carries its own (`arbiter.application.outcome`).
Colour only on a terminal; `--json` prints machine-readable output, `--quiet` only errors.

One module per command: `solve`, `check`, `explain`, `listing` (schema, rules, profiles),
`serve`, `sweep`, `compare`; `console` is what they print through. The runtime's `run` command lives
with the runtime (`engine.cli`), which adds it to this application: the `arbiter` console
script is `engine.cli:main`, so `arbiter` never imports `engine`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer

from .check import check
from .compare import compare_command
from .console import err
from .explain import explain_command
from .listing import profiles, rules, schema
from .plan import plan
from .serve import serve
from .solve import solve
from .sweep import sweep


def make_app(*extra: Callable[..., Any]) -> typer.Typer:
    """The arbiter's commands, plus `extra` commands (named after their functions)."""
    application = typer.Typer(
        add_completion=False,
        no_args_is_help=True,
        help="Arbitrate LLM serving-engine configurations: claims in, the best configuration out.",
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
    )
    commands: list[tuple[str | None, Callable[..., Any]]] = [
        (None, solve),
        (None, schema),
        (None, rules),
        (None, profiles),
        (None, serve),
        ("explain", explain_command),
        (None, sweep),
        (None, check),
        ("compare", compare_command),
        (None, plan),
    ]
    commands += [(None, c) for c in extra]
    for name, command in commands:
        application.command(name)(command)
    return application


app = make_app()


def main(application: typer.Typer | None = None) -> None:
    """Run the command line (`application`, default: the arbiter's own commands)."""
    try:
        (application or app)()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except RecursionError:  # input nested beyond what any limit let through
        err.print("error: the input is nested too deeply", markup=False)
        sys.exit(2)


__all__ = ["app", "main", "make_app"]
