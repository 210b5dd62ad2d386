"""The `arbiter` command line: a thin shell over `arbitrate()` and the schema.

Exit codes: 0 a configuration was found, 1 the claims conflict, 2 bad input, 3 an internal
error.
Colour only on a terminal; `--json` prints machine-readable output, `--quiet` only errors.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from .cli_explain import explain_command
from .errors import ArbiterError, ConflictError, InvalidClaim, exit_code

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Arbitrate LLM serving-engine configurations: claims in, the best configuration out.",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
# wide tables when piped, so scripts and logs get whole option paths
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)

DEFAULT_SCENARIO = "server_h100.yaml"
MAX_WORKERS = 256  # `serve --workers`


def _fail(message: str, code: int) -> None:
    err.print(f"[bold red]error:[/] {message}" if err.is_terminal else f"error: {message}")
    raise typer.Exit(code)


def _load(file: Path | None) -> tuple[list[Any], str]:
    from .claims import load_claims

    if file is None:
        text = resources.files("arbiter.scenarios").joinpath(DEFAULT_SCENARIO).read_text()
        return load_claims(text), f"built-in scenario {DEFAULT_SCENARIO}"
    if not file.exists():
        _fail(f"{file}: no such file", 2)
    return load_claims(file), str(file)


def _file_profile(file: Path | None) -> str | None:
    """The `profile:` a claims file names next to its `claims:` (None when it names none)."""
    if file is None:
        text = resources.files("arbiter.scenarios").joinpath(DEFAULT_SCENARIO).read_text()
    else:
        text = file.read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None  # load_claims has reported it already
    profile = data.get("profile") if isinstance(data, dict) else None
    return str(profile) if profile is not None else None


def check_output(output: Path | None) -> None:
    """Refuse, before any work, an output path whose folder is missing or that is a folder."""
    if output is None:
        return
    if output.is_dir():
        _fail(f"{output}: is a directory; give a file name for the output", 2)
    parent = output.parent
    if not parent.is_dir():
        _fail(f"{output}: the folder {str(parent)!r} does not exist", 2)


def write_output(output: Path, text: str) -> None:
    """Write an output file; an unwritable path is a clean exit 2, not a traceback."""
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        _fail(f"{output}: cannot write: {exc.strerror}", 2)


@app.command()
def solve(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="Claims in YAML or JSON; omit to solve the built-in H100 serving scenario."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the solved configuration here (.yaml or .json)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole resolution as JSON.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", help="Seconds the solver may spend.")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Engine release line (default: the file's `profile:`, else trtllm-1.2);"
            " see `arbiter profiles`.",
        ),
    ] = None,
) -> None:
    """Solve claims into a configuration and show what was kept, dropped and changed.

    Example: arbiter solve examples/claims_streamingllm.yaml -o engine.yaml
    """
    from .solve import arbitrate

    check_output(output)
    if time_limit is not None and not (0 < time_limit < float("inf")):
        _fail(f"--time-limit {time_limit}: must be a positive number of seconds", 2)
    try:
        claims, where = _load(file)
        profile = profile or _file_profile(file)
        resolution = arbitrate(claims, time_limit_s=time_limit, profile=profile)
    except InvalidClaim as exc:
        _fail(str(exc) if exc.file else f"{file or DEFAULT_SCENARIO}: {exc}", 2)
    except ConflictError as exc:
        if as_json:
            out.print_json(json.dumps({"conflicts": [c.to_json() for c in exc.conflicts]}))
        elif not quiet:
            err.print(exc.report("text"))
        raise typer.Exit(1) from None
    except ArbiterError as exc:
        _fail(str(exc), exit_code(exc))
    if output is not None:
        data = resolution.config.model_dump(mode="json")
        text = (
            json.dumps(data, indent=2)
            if output.suffix == ".json"
            else yaml.safe_dump(data, sort_keys=False)
        )
        write_output(output, text)
    if quiet:
        return
    if as_json:
        out.print_json(json.dumps(resolution.to_json()))
        return
    _print_resolution(resolution, where)


def _print_resolution(resolution: Any, where: str) -> None:
    table = Table(title=f"{where}: {resolution.status}", title_justify="left")
    table.add_column("claim / option")
    table.add_column("outcome")
    table.add_column("detail")
    for k in resolution.kept:
        alt = "" if k.alternative is None else f"alternative {k.alternative}"
        table.add_row(k.name, "[green]kept[/]", alt)
    for d in resolution.dropped:
        table.add_row(d.name, "[yellow]dropped[/]", str(d.reason))
    for c in resolution.changes:
        table.add_row(c.path, "changed", f"{c.old} -> {c.new}")
    out.print(table)
    stats = resolution.stats
    out.print(
        f"{stats['variables']} variables, {stats['constraints']} constraints, solved in {stats['total_ms']:.1f} ms"
    )
    if stats.get("profile"):
        from constraints.profiles import get_profile

        out.print(f"profile: {stats['profile']} ({get_profile(stats['profile']).line})")


@app.command()
def schema(
    path: Annotated[
        str | None, typer.Argument(help="A dotted option path, or a section name; omit for all.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show options with their domains, defaults and descriptions.

    Example: arbiter schema kv_cache_config.tokens_per_block
    """
    from constraints import UnknownPath, lookup, options

    specs = list(options())
    if path:
        if "." in path:
            try:
                specs = [lookup(path)]
            except UnknownPath as exc:
                _fail(str(exc), 2)
        else:
            specs = [s for s in specs if s.section == path]
            if not specs:
                sections = sorted({s.section for s in options()})
                _fail(f"unknown section {path!r}; sections: {', '.join(sections)}", 2)
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {
                        "path": s.path,
                        "domain": s.domain.to_json(),
                        "default": s.default,
                        "fact": s.fact,
                        "description": s.description,
                    }
                    for s in specs
                ]
            )
        )
        return
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


@app.command()
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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the shipped rules (id, text, scope, source).

    Example: arbiter rules --profile trtllm-1.2 --grep reuse
    """
    from constraints.errors import SchemaError
    from constraints.rules import find_rules

    try:
        found = find_rules(profile, grep)
    except SchemaError as exc:
        _fail(str(exc), 2)
        return
    if as_json:
        out.print_json(json.dumps([r.to_json() for r in found]))
        return
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


@app.command()
def profiles(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the profiles (engine release lines), their defaults and how many rules each
    compiles.

    Example: arbiter profiles
    """
    from constraints.profiles import ALIASES, DEFAULT_PROFILE, PROFILES
    from constraints.rules import rules_for

    rows = [
        {**p.to_json(), "rules": len(rules_for(p)), "default": p.name == DEFAULT_PROFILE}
        for p in PROFILES.values()
    ]
    if as_json:
        out.print_json(json.dumps({"profiles": rows, "aliases": ALIASES}))
        return
    table = Table()
    for name in ("name", "line", "rules", "defaults"):
        table.add_column(name)
    for p, row in zip(PROFILES.values(), rows, strict=True):
        defaults = ", ".join(f"{k}={v}" for k, v in p.defaults.items())
        table.add_row(
            p.name + (" (default)" if row["default"] else ""), p.line, str(row["rules"]), defaults
        )
    out.print(table)
    for old, new in ALIASES.items():
        out.print(f"{old} is an alias of {new}")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[
        int | None, typer.Option(help="Solver processes (default: one per core).")
    ] = None,
    max_claims: Annotated[int, typer.Option(help="Most claims in one request.")] = 2000,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body.")] = 1 << 20,
    time_limit: Annotated[
        float, typer.Option(help="Longest solve in seconds (requests may ask for less).")
    ] = 30.0,
    max_queue: Annotated[
        int, typer.Option(help="Requests that may wait for a solver process (then 503).")
    ] = 64,
) -> None:
    """Serve arbitration over HTTP (FastAPI + uvicorn); OpenAPI at /docs.

    Example: arbiter serve --host 127.0.0.1 --port 8000
    """
    from .service import ServiceSettings
    from .service import serve as run_service

    checks = (
        ("--port", port, 0 <= port <= 65535, "an integer in [0, 65535]"),
        (
            "--workers",
            workers,
            workers is None or 1 <= workers <= MAX_WORKERS,
            f"an integer in [1, {MAX_WORKERS}]",
        ),
        ("--max-claims", max_claims, max_claims >= 1, "an integer >= 1"),
        (
            "--max-body-bytes",
            max_body_bytes,
            1 <= max_body_bytes <= 1 << 30,
            "an integer in [1, 1073741824]",
        ),
        ("--time-limit", time_limit, 0 < time_limit <= 3600, "seconds in (0, 3600]"),
        ("--max-queue", max_queue, 0 <= max_queue <= 100_000, "an integer in [0, 100000]"),
    )
    for flag, value, ok, allowed in checks:
        if not ok:
            _fail(f"{flag} {value}: must be {allowed}", 2)
    settings = ServiceSettings(
        max_body_bytes=max_body_bytes,
        max_claims=max_claims,
        max_time_limit_s=time_limit,
        default_time_limit_s=min(10.0, time_limit),
        max_queue=max_queue,
    )
    if workers is not None:
        settings.workers = workers
    out.print(f"arbiter service on http://{host}:{port} ({settings.workers} solver processes)")
    run_service(host, port, settings)


app.command("explain")(explain_command)


from .cli_run import run  # noqa: E402
from .cli_sweep import sweep  # noqa: E402

app.command()(run)
app.command()(sweep)


from .cli_check import check  # noqa: E402

app.command()(check)


from .cli_compare import compare_command  # noqa: E402

app.command("compare")(compare_command)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except RecursionError:  # input nested beyond what any limit let through
        err.print("error: the input is nested too deeply", markup=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
