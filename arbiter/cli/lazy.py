"""Commands that load on first use: `arbiter --help` lists them from a table, and
`arbiter CMD ...` imports only CMD's module, so no command pays for another's imports
(the rules, OR-Tools, FastAPI, torch)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import typer
from typer import _click  # typer >= 0.29 vendors click (pyproject.toml)
from typer.core import TyperGroup


@dataclass(frozen=True)
class CommandSpec:
    """A command by name: where its function lives (`module:function`) and the one line
    `arbiter --help` shows for it."""

    name: str
    target: str
    summary: str

    def load(self) -> Callable[..., Any]:
        """Import the command's module and return its function."""
        module, _, attribute = self.target.partition(":")
        function: Callable[..., Any] = getattr(import_module(module), attribute)
        return function


class LazyGroup(TyperGroup):
    """A typer group whose commands come from `CommandSpec`s, built when first asked for."""

    specs: dict[str, CommandSpec] = {}
    context_settings_for_commands: dict[str, Any] = {}

    def list_commands(self, ctx: _click.Context) -> list[str]:
        eager = [name for name in super().list_commands(ctx) if name not in self.specs]
        return [*self.specs, *eager]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.specs.get(cmd_name)
        if spec is None:
            return None
        single = typer.Typer(
            add_completion=False,
            rich_markup_mode=None,
            pretty_exceptions_enable=False,
            context_settings=self.context_settings_for_commands,
        )
        single.command(spec.name)(spec.load())
        command = typer.main.get_command(single)
        command.name = spec.name
        conventional_metavars(command)
        self.commands[cmd_name] = command
        return command

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        ctx.meta["arbiter.args"] = list(args)  # the raw words, for a refusal in JSON
        return super().parse_args(ctx, args)

    def invoke(self, ctx: _click.Context) -> Any:
        from .usage_json import ask_json  # stdlib only: each command says its format anew

        ask_json(False)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # `arbiter rules | head -1`: the reader left, not a conflict
            quiet_stdout()
            raise typer.Exit(0) from None
        except _click.exceptions.UsageError as exc:
            args = ctx.meta.get("arbiter.args", [])
            from .usage_json import wants_json  # the parser's refusal, in JSON when asked

            if not wants_json(args) or exc.ctx is None or exc.ctx.parent is None:
                raise
            import json  # the refusal's report

            from .usage_json import usage_report  # the report's builder (pydantic) on error

            report = usage_report(exc, args, exc.ctx.info_name)
            sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
            raise typer.Exit(exc.exit_code) from None

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            spec = self.specs.get(name)
            if spec is not None:
                rows.append((name, spec.summary))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 16)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def conventional_metavars(command: _click.Command) -> None:
    """Name each value in `--help` after its parameter (`--dialect DIALECT`, `[FILE]`), as
    argparse does, instead of typer's `<str>`; flags take no value and show none."""
    for param in command.params:
        if param.metavar is None and not getattr(param, "is_flag", False) and param.name:
            param.metavar = param.name.upper().rstrip("_")


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush to a closed pipe
    cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (captured output)
        pass


def lazy_group(specs: Sequence[CommandSpec], context_settings: dict[str, Any]) -> type[LazyGroup]:
    """A `LazyGroup` class that knows `specs` (typer instantiates the class itself)."""
    return type(
        "ArbiterGroup",
        (LazyGroup,),
        {
            "specs": {spec.name: spec for spec in specs},
            "context_settings_for_commands": dict(context_settings),
        },
    )
