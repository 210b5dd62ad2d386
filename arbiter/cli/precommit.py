"""`python -m arbiter.cli.precommit [CHECK OPTIONS] FILE...`: `arbiter check` on each file,
for pre-commit (`.pre-commit-hooks.yaml`), which passes many files at once.

Options are `arbiter check`'s own (`--dialect vllm`, `--model M`, `--device D`, ...); every
other argument is a file. Each file is checked in turn (in this process, so the rules load
once); a file that fails is named with its exit code, and the exit code is the worst one
(0 all hold, 1 a conflict, 2 bad input, 3 an internal error).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer


def split_arguments(argv: Sequence[str], takes_value: set[str]) -> tuple[list[str], list[str]]:
    """`argv` as (options with their values, files)."""
    options: list[str] = []
    files: list[str] = []
    i = 0
    while i < len(argv):
        argument = argv[i]
        if argument.startswith("-"):
            options.append(argument)
            if argument in takes_value and i + 1 < len(argv):
                options.append(argv[i + 1])
                i += 1
        else:
            files.append(argument)
        i += 1
    return options, files


def main(argv: Sequence[str] | None = None) -> int:
    """Check every file; return the worst exit code."""
    from . import COMMANDS  # the command table; `check` itself loads below
    from .lazy import conventional_metavars

    spec = next(s for s in COMMANDS if s.name == "check")
    single = typer.Typer(add_completion=False, rich_markup_mode=None)
    single.command(spec.name)(spec.load())
    command = typer.main.get_command(single)
    conventional_metavars(command)
    takes_value = {
        opt
        for param in command.params
        if not getattr(param, "is_flag", False)
        for opt in param.opts
    }
    options, files = split_arguments(list(sys.argv[1:] if argv is None else argv), takes_value)
    if not files:
        sys.stderr.write("error: no files to check (pre-commit passes them)\n")
        return 2
    worst = 0
    for name in files:
        try:
            # outside standalone mode, typer returns the exit code of a typer.Exit
            returned = command.main(
                [name, *options], prog_name="arbiter check", standalone_mode=False
            )
            code = returned if isinstance(returned, int) else 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except Exception as exc:  # a click usage error: bad options for every file
            sys.stderr.write(f"error: {exc}\n")
            return 2
        if code:
            sys.stderr.write(f"{name}: arbiter check exited {code}\n")
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
