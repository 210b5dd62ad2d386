"""Serve command lines: which engine a command starts, its arguments, and its model.

A container's `command` + `args`, a `--serve-args` string or a shell script line may start
an engine's server. `find_serve_command(words)` recognises the launchers each registry
entry names (`Entry.launchers` in `arbiter.dialects`, with their sources there: `vllm
serve [MODEL]`, `python -m sglang.launch_server`, `trtllm-serve [serve] MODEL`, `mlc_llm
serve MODEL` ...); a launcher opening `python -m` follows any Python interpreter
(`python3.11 -u -m ...`), and the longest launcher that fits wins. The model is the
positional MODEL or the model flag the entry names.

Words before the launcher that only set up the process (`env`, `exec`, `VAR=value`,
`nohup`, `numactl ...` is not one) are skipped; a shell `-c "..."` script is split with
`shlex` into commands at `;`, `&&`, `||` and `|`, and each is searched in turn.
`ServeCommand.serve_args` is the line in the form the dialect's `--serve-args` reads (its
entry's first launcher).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..dialects import DIALECTS

SHELLS = ("sh", "bash", "dash", "zsh", "ash")
PYTHON = ("python", "-m")  # a launcher run as a module
SETUP_WORDS = ("env", "exec", "nohup", "time", "command")


@dataclass(frozen=True)
class ServeCommand:
    """An engine's serve command: the dialect, the words that named the program as written,
    the arguments after them and the model they name (None when none is given)."""

    dialect: str
    program: tuple[str, ...]
    args: tuple[str, ...]
    model: str | None = None

    @property
    def serve_args(self) -> str:
        """The command line as the dialect's `--serve-args` reads it."""
        launcher = DIALECTS.entries[self.dialect].launchers[0]
        return shlex.join([*launcher.split(), *self.args])

    @property
    def written(self) -> str:
        return shlex.join([*self.program, *self.args])


def _base(word: str) -> str:
    return PurePosixPath(word).name


def _is_python(word: str) -> bool:
    name = _base(word)
    return name == "python" or (name.startswith("python") and name[6:].replace(".", "").isdigit())


def _launcher(words: Sequence[str]) -> tuple[str, int] | None:
    """(dialect, index after the launcher words) when `words` start with one: the longest
    of the registry's launchers that fits."""
    found: tuple[str, int] | None = None
    for entry in DIALECTS.entries.values():
        for launcher in entry.launchers:
            end = _fits(launcher.split(), words)
            if end is not None and (found is None or end > found[1]):
                found = (entry.name, end)
    return found


def _fits(launcher: list[str], words: Sequence[str]) -> int | None:
    """The index after `launcher` when `words` start with it, else None."""
    if not words:
        return None
    if tuple(launcher[:2]) == PYTHON:
        if not _is_python(words[0]):
            return None
        i = 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-m":
            i += 1  # interpreter options (-u, -O)
        rest = launcher[1:]  # -m and the module's words
        return i + len(rest) if list(words[i : i + len(rest)]) == rest else None
    if _base(words[0]) == launcher[0] and list(words[1 : len(launcher)]) == launcher[1:]:
        return len(launcher)
    return None


def model_of(dialect: str, args: Sequence[str]) -> str | None:
    """The model a dialect's serve arguments name: the positional MODEL (vLLM,
    trtllm-serve, MLC) or the model flag (`--model-path` / `--model`), else None."""
    return _model(dialect, args)


def _model(dialect: str, args: Sequence[str]) -> str | None:
    entry = DIALECTS.entries[dialect]
    if entry.model_positional and args and not args[0].startswith("-"):
        return args[0]
    for i, word in enumerate(args):
        flag, eq, inline = word.partition("=")
        if flag in entry.model_flags:
            if eq:
                return inline
            if i + 1 < len(args):
                return args[i + 1]
    return None


def _skip_setup(words: Sequence[str]) -> int:
    i = 0
    while i < len(words):
        word = words[i]
        if _base(word) in SETUP_WORDS:
            i += 1
        elif "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            i += 1  # VAR=value before the program
        else:
            break
    return i


def find_serve_command(words: Sequence[str]) -> ServeCommand | None:
    """The first engine serve command in `words` (a container's command + args, or a
    command line split into words), looking inside `sh -c "..."` scripts."""
    words = list(words)
    start = _skip_setup(words)
    found = _launcher(words[start:])
    if found is not None:
        dialect, end = found
        program = tuple(words[start : start + end])
        args = tuple(words[start + end :])
        return ServeCommand(dialect, program, args, _model(dialect, args))
    if start < len(words) and _base(words[start]) in SHELLS:
        rest = words[start + 1 :]
        for i, word in enumerate(rest):
            if word.startswith("-") and "c" in word.lstrip("-") and i + 1 < len(rest):
                for command in script_commands(rest[i + 1]):
                    hit = find_serve_command(command)
                    if hit is not None:
                        return hit
                break
    return None


def script_commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script line, split at `;`, `&&`, `||`, `|`, `&` and
    newlines (quotes kept as the shell keeps them). A script `shlex` cannot split (an
    unbalanced quote) gives no commands."""
    lexer = shlex.shlex(script.replace("\\\n", " "), posix=True, punctuation_chars=";&|\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    try:
        for token in lexer:
            if set(token) <= set(";&|\n"):
                commands.append([])
            else:
                commands[-1].append(token)
    except ValueError:
        return []
    return [c for c in commands if c]


def split_command_line(text: str) -> list[str] | None:
    """A command line split into words (a trailing `\\` continuation joined), or None when
    `shlex` cannot split it."""
    try:
        return shlex.split(text.replace("\\\n", " "))
    except ValueError:
        return None
