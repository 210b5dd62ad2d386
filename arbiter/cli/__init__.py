"""The `arbiter` command line: a thin shell over the application layer
(`arbiter.application`).

Exit codes: 0 a configuration was found, 1 the claims conflict, 2 bad input, 3 an internal
error; each error carries its own (`arbiter.application.outcome`).
Colour only on a terminal; `--format json` (or `--json`) prints machine-readable output,
`--quiet` only errors.

One module per command: `solve`, `check`, `explain`, `listing` (schema, rules, profiles),
`serve`, `sweep`, `compare`, `catalogs` (devices, models); `console` is what they print through, `options` the options
they share. Commands load on first use (`arbiter.cli.lazy`): `arbiter --help` imports none
of them, `arbiter CMD` only CMD's module. The runtime's `run` command lives with the
runtime (`engine.cli`), which adds it to this application: the `arbiter` console script is
`engine.cli:main`, so `arbiter` never imports `engine`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..version import version
from .lazy import CommandSpec, lazy_group

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "check",
        "arbiter.cli.check:check",
        "Lint an engine's configuration (TensorRT-LLM, vLLM, SGLang, MLC).",
    ),
    CommandSpec(
        "compare",
        "arbiter.cli.compare:compare_command",
        "Check one engine-neutral intent against several engines, side by side.",
    ),
    CommandSpec("solve", "arbiter.cli.solve:solve", "Solve claims into the best configuration."),
    CommandSpec(
        "explain",
        "arbiter.cli.explain:explain_command",
        "Explain claims: every conflict, every verified fix, every dropped claim.",
    ),
    CommandSpec(
        "sweep", "arbiter.cli.sweep:sweep", "Solve a grid of models x devices x modes x features."
    ),
    CommandSpec("schema", "arbiter.cli.listing:schema", "Show options: domains, defaults, texts."),
    CommandSpec("rules", "arbiter.cli.listing:rules", "List the shipped rules."),
    CommandSpec(
        "profiles", "arbiter.cli.listing:profiles", "List the profiles (engine release lines)."
    ),
    CommandSpec(
        "devices", "arbiter.cli.catalogs:devices", "List the devices --device takes by name."
    ),
    CommandSpec("models", "arbiter.cli.catalogs:models", "List the models --model takes by name."),
    CommandSpec(
        "plan",
        "arbiter.cli.plan:plan",
        "Plan the fastest rule-valid configuration that meets latency targets.",
    ),
    CommandSpec("serve", "arbiter.cli.serve:serve", "Serve arbitration over HTTP."),
)

# The runtime's command, named but never imported here (`engine` sits above `arbiter`):
# the console script (`engine.cli`) and `python -m arbiter` add it; it loads when run.
RUNTIME_COMMAND = CommandSpec(
    "run", "engine.cli:run", "Solve an engine's arguments, then generate tokens with the runtime."
)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"arbiter {version()}\n")
        raise typer.Exit(0)


def _callback(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Arbitrate LLM serving-engine configurations: claims in, the best configuration out.

    `arbiter CMD --help` shows each command's options and an example.
    """


def make_app(*extra: Callable[..., Any] | CommandSpec) -> typer.Typer:
    """The arbiter's commands, plus `extra` commands: functions (named after themselves)
    or `CommandSpec`s (loaded on first use)."""
    specs = [*COMMANDS, *(e for e in extra if isinstance(e, CommandSpec))]
    application = typer.Typer(
        cls=lazy_group(specs, CONTEXT_SETTINGS),
        add_completion=True,
        no_args_is_help=True,
        rich_markup_mode=None,
        context_settings=CONTEXT_SETTINGS,
        pretty_exceptions_enable=False,
    )
    application.callback()(_callback)
    for command in extra:
        if not isinstance(command, CommandSpec):
            application.command()(command)
    return application


app = make_app()


def main(application: typer.Typer | None = None) -> None:
    """Run the command line (`application`, default: the arbiter's own commands)."""
    try:
        (application or app)(prog_name="arbiter")
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except RecursionError:  # input nested beyond what any limit let through
        sys.stderr.write("error: the input is nested too deeply\n")
        sys.exit(2)


__all__ = ["COMMANDS", "RUNTIME_COMMAND", "CommandSpec", "app", "main", "make_app", "version"]
