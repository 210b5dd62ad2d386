"""`arbiter solve [FILE]`: claims in, the best configuration out, with what was kept,
dropped and changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from constraints.profiles import get_profile

from ..errors import ArbiterError, ConflictError, InvalidClaim
from .console import check_output, err, fail, fail_with, out, print_json, working, write_output
from .options import (
    FormatOption,
    JsonOption,
    QuietOption,
    TimeLimitOption,
    known_profile,
    output_format,
)


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
    format_: FormatOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
    time_limit: TimeLimitOption = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            callback=known_profile,
            help="Engine release line (default: the file's `profile:`, else trtllm-1.2);"
            " see `arbiter profiles`.",
        ),
    ] = None,
) -> None:
    """Solve claims into a configuration and show what was kept, dropped and changed.

    --format json prints the whole resolution with its profile (text and json only); claims
    that conflict print the `arbiter.verdict` conflict entries `check` prints (verdict
    reject, conflicts, fixes, rules), and bad input the report's `input_errors`.

    Example: arbiter solve examples/claims_streamingllm.yaml -o engine.yaml
    """
    as_json = output_format(format_, as_json) == "json"
    # the solver (OR-Tools) loads only when a command solves, so `arbiter schema` stays fast
    from ..application.solve import DEFAULT_SCENARIO, load_scenario, solve

    check_output(output)
    if time_limit is not None and not (0 < time_limit < float("inf")):
        fail(f"--time-limit {time_limit}: must be a positive number of seconds", 2)
    if file is not None and not file.exists():
        fail(f"{file}: no such file", 2)
    try:
        scenario = load_scenario(file)
        with working("solving", enabled=not (as_json or quiet)):
            resolution = solve(
                scenario.claims, time_limit_s=time_limit, profile=profile or scenario.profile
            )
    except InvalidClaim as exc:
        fail_with(
            exc,
            wrong_file(file, "solve") or claims_message(exc, file or DEFAULT_SCENARIO),
        )
    except ConflictError as exc:
        if as_json:  # the conflict entries `check` prints too (one schema, arbiter.verdict)
            from ..report.schema import conflict_report  # pydantic loads for a conflict only

            print_json(conflict_report(exc, profile=profile or scenario.profile))
        elif not quiet:
            err.print(exc.report("text"))
        raise typer.Exit(exc.exit_code) from None
    except ArbiterError as exc:
        fail_with(exc)
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
        body = resolution.to_json()
        body.setdefault("profile", resolution.stats.get("profile"))
        print_json(body)
        return
    _print_resolution(resolution, scenario.where)


def _print_resolution(resolution: Any, where: str) -> None:
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table(title=f"{where}: {resolution.status}", title_justify="left")
    # long rule ids and option paths fold onto the next line instead of losing their tail
    table.add_column("claim / option", overflow="fold")
    table.add_column("outcome")
    table.add_column("detail", overflow="fold")
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
        out.print(f"profile: {stats['profile']} ({get_profile(stats['profile']).line})")


def claims_message(exc: InvalidClaim, file: Path | str) -> str:
    """An invalid claims file's message: every bad claim, one line each, each naming its
    file and line (a single one as it is)."""
    found = exc.problems or (exc,)
    for problem in found:
        flag_hint(problem)
    lines = [str(p) if getattr(p, "file", None) else f"{file}: {p}" for p in found]
    if len(lines) == 1:
        return lines[0]
    return f"{len(lines)} invalid claims:\n" + "\n".join(f"  - {line}" for line in lines)


def flag_hint(problem: Any) -> None:
    """An unknown option path that is a vLLM or SGLang flag (`max-num-seqs`): say so, and
    suggest the arbiter option it sets (from the dialects' own key tables)."""
    path = getattr(problem, "path", None)
    if getattr(problem, "reason", None) != "unknown option path" or not path:
        return
    # the dialects' key tables load only for this message
    from ..engines.sglang.map import SHARED as SGLANG_SHARED
    from ..engines.vllm.map import TOP as VLLM_TOP

    name = path.strip().lstrip("-").replace("-", "_")
    for engine, table in (("vLLM", VLLM_TOP), ("SGLang", SGLANG_SHARED)):
        option = table.get(name)
        if isinstance(option, str):
            problem.reason = (
                f"unknown option path: {path!r} is a {engine} flag, and claims name arbiter"
                " options (`arbiter check` reads the engine's own config)"
            )
            problem.suggestions = (option,)
            return


def wrong_file(file: Path | None, command: str) -> str | None:
    """ "FILE: an engine config (vLLM): use `arbiter check`" when `command` (solve,
    explain) got a file of another kind, else None."""
    if file is None:
        return None
    from ..sources import command_message, detect  # only a refused file is sniffed

    try:
        found = detect(file)
    except Exception:  # noqa: BLE001 -- the claims error stands when sniffing fails
        return None
    wrong = command_message(found, command)
    return f"{file}: {wrong}" if wrong else None
