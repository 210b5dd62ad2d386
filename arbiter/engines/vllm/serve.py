"""A `vllm serve` command line as the mapping its `--config` YAML would hold.

`vllm serve [MODEL] [--option value ...] [--config FILE]` (vllm-project/vllm v0.33.0,
vllm/entrypoints/cli/serve.py and `FlexibleArgumentParser`): long options with dashes or
underscores, `--option=value`, short aliases (`-tp 2`), boolean flags without a value and
their `--no-` negations, list options taking several values (`--numa-bind-nodes 0 1`),
and dotted options into a sub-config (`--speculative-config.method ngram`). A leading
`vllm serve` is optional; the positional argument is the model. Options on the command
line win over the same field in the `--config` file.

Only what is written becomes an argument, so a field left to its default is never taken
for the user's wish. Unknown options are not judged here: `vllm_fields.read_args` names
every one of them at once.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ...dialects._base import KeyProblem
from .fields import VllmArgErrors, surface


@dataclass
class ServeArgs:
    """The options of one command line (key as written -> value), and its `--config`."""

    args: dict[str, Any] = field(default_factory=dict)
    config: str | None = None


def _takes_list(type_text: str) -> bool:
    return type_text.startswith("list") or "| list" in type_text


def parse(command: str) -> ServeArgs:
    """The options of a `vllm serve` command line; `VllmArgErrors` for a malformed one."""
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise VllmArgErrors([KeyProblem("--serve-args", f"cannot be split: {exc}")]) from None
    if tokens[:2] == ["vllm", "serve"]:
        tokens = tokens[2:]
    elif tokens[:1] == ["serve"]:
        tokens = tokens[1:]
    surf = surface()
    out = ServeArgs()
    problems: list[KeyProblem] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-"):
            if "model" in out.args:
                problems.append(KeyProblem(token, "unexpected positional argument"))
            else:
                out.args["model"] = token
            continue
        name, eq, inline = token.partition("=")
        if name == "--config":
            value = inline if eq else (tokens[i] if i < len(tokens) else None)
            i += 0 if eq else 1
            if value is None:
                problems.append(KeyProblem(name, "expects a file"))
            out.config = value
            continue
        key = name.lstrip("-")
        head, dot, sub = key.partition(".")
        found = surf.resolve(head)
        if found is not None:  # the long name, as the --config YAML spells it
            key = _long_name(found.field.flags, found.field.name, found.negated, head) + dot + sub
        values: list[str] = []
        if eq:
            values = [inline]
        else:
            while i < len(tokens) and not (
                tokens[i].startswith("-") and len(tokens[i]) > 1 and not _number(tokens[i])
            ):
                values.append(tokens[i])
                i += 1
                if found is None or not _takes_list(found.field.type) or "." in key:
                    break
            if found is not None and found.field.is_bool and "." not in key:
                # a boolean flag takes no value unless written `--flag=value`
                i -= len(values)
                values = []
        if found is not None and found.negated:
            out.args[key] = True
        elif found is not None and found.field.is_bool and not values and "." not in key:
            out.args[key] = True
        elif found is not None and _takes_list(found.field.type) and "." not in key:
            out.args[key] = [_scalar(v) for v in values]
        elif not values:
            if found is None:
                out.args[key] = True  # judged (as unknown) later
            else:
                problems.append(KeyProblem(name, "expects a value"))
        else:
            out.args[key] = _scalar(values[0])
    if problems:
        raise VllmArgErrors(problems, file="--serve-args")
    return out


def _long_name(flags: tuple[str, ...], name: str, negated: bool, written: str) -> str:
    """The option's long name without dashes (`-tp` -> `tensor-parallel-size`); a negation
    keeps its `no-` form, a long spelling is kept as written."""
    if negated or written.startswith("--") or len(written) > 3 and "-" in written:
        return written
    long = next((f for f in flags if f.startswith("--")), "--" + name.replace("_", "-"))
    return long.removeprefix("--")


def _number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _scalar(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


__all__ = ["ServeArgs", "parse"]
