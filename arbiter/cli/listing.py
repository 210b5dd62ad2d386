"""`arbiter schema`, `arbiter rules`, `arbiter profiles`: the listings, printed from the
same rows the service serves (`arbiter.application.listing`)."""

from __future__ import annotations

from typing import Annotated

import typer

from constraints.errors import SchemaError

from .console import fail_with, out, print_json
from .options import FormatOption, JsonOption, output_format


def schema(
    path: Annotated[
        str | None, typer.Argument(help="A dotted option path, or a section name; omit for all.")
    ] = None,
    format_: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show options with their domains, defaults and descriptions.

    Example: arbiter schema kv_cache_config.tokens_per_block
    """
    fmt = output_format(format_, as_json)
    # the listings build the schema and the rules: only a command that lists pays for it
    from ..application.listing import find_options, option_row

    try:
        specs = find_options(path)
    except SchemaError as exc:  # an unknown path (with suggestions) or section
        fail_with(exc)
    if fmt == "json":
        print_json([option_row(s) for s in specs])
        return
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table(show_lines=False)
    for name in ("path", "domain", "default", "description"):
        table.add_column(name)
    for s in specs:
        table.add_row(
            s.path + (" (fact)" if s.fact else ""),
            s.domain.describe(),
            str(s.default),
            s.description,
        )
    out.print(table)


def rules(
    grep: Annotated[
        str | None,
        typer.Option(
            "--grep",
            help="Only rules whose id, text, source or scope contain this (case-insensitive).",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option("--profile", help="Only the rules in scope of this profile."),
    ] = None,
    format_: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the shipped rules (id, text, scope, source).

    Example: arbiter rules --profile trtllm-1.2 --grep reuse
    """
    fmt = output_format(format_, as_json)
    from ..application.listing import list_rules  # the rules load when listed (see schema)

    try:
        found = list_rules(profile, grep)
    except SchemaError as exc:  # an unknown profile
        fail_with(exc)
    if fmt == "json":
        print_json([r.to_json() for r in found])
        return
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table()
    table.add_column("id", no_wrap=True)
    for name in ("text", "scope", "source"):
        table.add_column(name)
    for r in found:
        table.add_row(
            r.id + (" (default)" if r.kind == "default" else ""),
            r.text,
            str(r.scope),
            str(r.source),
        )
    out.print(table)
    out.print(f"{len(found)} rule(s)" + (f" in scope of {profile}" if profile else ""))


def profiles(
    format_: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the profiles (engine release lines), their defaults and how many rules each
    compiles.

    Example: arbiter profiles
    """
    fmt = output_format(format_, as_json)
    # the rule counts compile every profile: only the listing pays for it (see schema)
    from ..application.listing import (  # (the same reason)
        listed_profiles,
        profile_aliases,
        profile_rows,
    )

    rows = profile_rows()
    aliases = profile_aliases()
    if fmt == "json":
        print_json({"profiles": rows, "aliases": aliases})
        return
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table()
    for name in ("name", "line", "rules", "defaults"):
        table.add_column(name)
    for p, row in zip(listed_profiles(), rows, strict=True):
        defaults = ", ".join(f"{k}={v}" for k, v in p.defaults.items())
        table.add_row(
            p.name + (" (default)" if row["default"] else ""), p.line, str(row["rules"]), defaults
        )
    out.print(table)
    for old, new in aliases.items():
        out.print(f"{old} is an alias of {new}")
