"""`arbiter check [FILE] [--dialect <engine>] [--serve-args "..."]`: lint an existing engine
configuration through the one check pipeline (`arbiter.check`); the engines are
`arbiter.dialects.DIALECTS`.

FILE is read through `arbiter.sources.targets`: an engine config (vLLM / SGLang `--config`
YAML, the LLM API YAML, MLC JSON), a serve command line, or a Kubernetes manifest (each
engine server it starts is checked, with the GPUs of its limits). Without `--dialect`
the engine is detected; a `--dialect` the content contradicts is named. `--serve-args`
is the engine's command line beside the file (it wins key by key, as vLLM's and SGLang's
config mergers do; for TensorRT-LLM the YAML wins, as in trtllm-serve).

The machine is never assumed silently: the model is `--model` (a config.json, its
folder, a Hugging Face id or a catalog name), else the config's own model key, else exit
2 naming `--model`; the GPUs are `--gpus` / `--device NxH100`, else what the layout needs
(tensor x pipeline x data parallel); the device is `--device`, else H100-80GB, said as an
assumption. Every answer starts with what it was checked against (`# checked against:`).

Exit 0 (accept, adjust): prints the solved configuration in the dialect's own shape (YAML,
JSON for MLC) with the report as `# ` comment lines, so `> fixed.yaml` stays valid; `-o
FILE` writes the configuration alone. Exit 1 (reject): the conflict report, or the
engine's refusal, on stderr. Exit 2: bad input. `--format json` (`--json`) prints the
`arbiter.verdict` report (`arbiter.report.schema`), input errors included; `--format
sarif` the same as SARIF 2.1.0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from ..dialects import DEFAULT_DIALECT, DIALECTS
from ..dialects.verdict import Verdict
from .console import err, fail, fail_with, out, print_json, working
from .options import (
    FORMATS,
    FormatOption,
    JsonOption,
    known_dialect,
    known_profile,
    output_format,
)

if TYPE_CHECKING:
    from ..application.check_report import Checked

DIALECT_HELP = "The engine: " + ", ".join(DIALECTS) + " (default: detected from FILE)."


def check(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="The configuration: an engine config (YAML, MLC JSON), a serve command"
            " line, a Kubernetes manifest, or an engine folder."
        ),
    ] = None,
    dialect: Annotated[
        str | None, typer.Option("--dialect", "-d", help=DIALECT_HELP, callback=known_dialect)
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model: its config.json, its folder, a Hugging Face id or a catalog name"
            " (default: the config's own model key).",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", help="A catalog device, e.g. H100-80GB, 2xH100, L4, cpu."),
    ] = None,
    engine: Annotated[
        Path | None, typer.Option("--engine", help="A prebuilt TensorRT engine folder (trtllm).")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            callback=known_profile,
            help="Engine release line (`arbiter profiles` lists them; default: the line of"
            " the engine installed here, else the newest).",
        ),
    ] = None,
    serve_args: Annotated[
        str | None,
        typer.Option(
            "--serve-args",
            help="trtllm: a trtllm-serve command line beside the YAML, e.g. '--tp_size 8';"
            " vllm: a vllm serve command line; sglang: a launch command line (both win over"
            " the YAML).",
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus", min=1, help="GPUs of --device (default: what the config's layout needs)."
        ),
    ] = None,
    format_: FormatOption = None,
    as_json: JsonOption = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write the fixed configuration to FILE."
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print nothing but errors; the exit code says it all."),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Add the internal derivation: arbiter's option paths, the setup facts and"
            " the solve's changes.",
        ),
    ] = False,
) -> None:
    """Lint an existing configuration: exit 0 (accept, adjust) with the solved config and
    its changes, 1 (reject) with the conflict report or the engine's refusal, 2 bad input.

    Example: arbiter check examples/trtllm/reuse_on_volta.yaml --model examples/models/llama-3-8b.json --device V100-32GB --profile trtllm-0.10
    """
    fmt = output_format(format_, as_json, allowed=FORMATS)
    if file is None and serve_args is None:
        fail("give a FILE, --serve-args, or both", 2)
    # the sources, the dialects and the solver (OR-Tools) load only when a command checks
    from constraints.facts.errors import SpecError  # a model reference that did not resolve

    from ..errors import ArbiterError  # the errors load with the check, not with --help
    from ..report.schema import from_error  # pydantic loads only for a check

    mismatches: list[str] = []  # a --dialect the content contradicts, said beside errors
    try:
        with working("checking", enabled=fmt == "text" and not quiet):
            results = _check_all(
                file,
                dialect,
                model=model,
                device=device,
                engine=engine,
                profile=profile,
                serve_args=serve_args,
                gpus=gpus,
                mismatches=mismatches,
            )
    except (ArbiterError, SpecError) as exc:
        if fmt == "text":
            for line in mismatches:
                err.print(f"note: {line}", markup=False, soft_wrap=True)
            fail_with(exc)
        if not quiet:
            lines = _key_lines(file)
            report = from_error(
                exc, dialect=dialect, source=str(file) if file else None, lines=lines
            )
            report.mismatch = mismatches[0] if mismatches else None
            _print_machine(fmt, [report], file, lines)
        raise typer.Exit(2) from None
    code = max(r.verdict.exit_code for r in results)
    if output is not None:
        _write_output(output, results)
    if quiet:
        raise typer.Exit(code)
    if fmt == "json":
        _print_json(results)
        raise typer.Exit(code)
    if fmt != "text":
        _print_machine(fmt, [r.report for r in results], file, results[0].lines)
        raise typer.Exit(code)
    for r in results:
        _print_text(r, written=output is not None, verbose=verbose)
    raise typer.Exit(code)


def _check_all(
    file: Path | None,
    dialect: str | None,
    *,
    model: str | None,
    device: str | None,
    engine: Path | None,
    profile: str | None,
    serve_args: str | None,
    gpus: int | None,
    mismatches: list[str],
) -> list[Checked]:
    """Every target of the input checked; raises the arbiter's errors for bad input."""
    from ..sources import Target, targets  # the front door's reading step

    if file is None and serve_args is not None:
        found = _command_targets(serve_args, dialect)
        serve_args = None  # each target carries the command line
    elif file is None or file.is_dir() or not file.exists():
        # an engine folder, or a path the dialect names
        found = [Target(dialect or DEFAULT_DIALECT, str(file))]
    else:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None  # the dialect's reader names the problem
        if text is None:
            found = [Target(dialect or DEFAULT_DIALECT, str(file))]
        else:
            found = targets(text, dialect=dialect, source=str(file), suffix=file.suffix)[1]
    mismatches += [t.mismatch for t in found if t.mismatch]
    return [_check_one(t, file, model, device, engine, profile, serve_args, gpus) for t in found]


def _command_targets(serve_args: str, dialect: str | None) -> list[Any]:
    """`--serve-args` alone: its launcher tells the engine and its MODEL the model; bare
    flags go to `--dialect` (default the registry's first, trtllm, whose trtllm-serve flags
    they usually are)."""
    from ..errors import SourceError  # the sources' refusal of a text it cannot tell
    from ..sources import Target, targets  # the front door's reading step

    try:
        return targets(serve_args, dialect=dialect, source="--serve-args")[1]
    except SourceError:
        return [Target(dialect or DEFAULT_DIALECT, "--serve-args", serve_args=serve_args)]


def _check_one(
    target: Any,
    file: Path | None,
    model: str | None,
    device: str | None,
    engine: Path | None,
    profile: str | None,
    serve_args: str | None,
    gpus: int | None,
) -> Checked:
    from ..application.check_report import check_target  # the check both doors run

    source: Any = None
    if target.config is not None or (file is not None and target.serve_args is None):
        source = file
    return check_target(
        target,
        source,
        model=model,
        device=device,
        gpus=gpus,
        profile=profile,
        serve_args=serve_args,
        engine=engine,
        model_optional=engine is not None or (file is not None and file.is_dir()),
    )


def _key_lines(file: Path | None) -> dict[str, int]:
    """The lines of a file's keys, for the entries of an error raised before a verdict."""
    from ..sources import key_lines  # only an error that names keys needs their lines

    try:
        return dict(key_lines(file.read_text(encoding="utf-8"))) if file is not None else {}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}


def _config_text(verdict: Verdict) -> str:
    if verdict.format == "json":
        return json.dumps(verdict.config, indent=2) + "\n"
    return yaml.safe_dump(verdict.config, sort_keys=False)


def _write_output(output: Path, results: list[Checked]) -> None:
    """The fixed configuration alone, in the engine's own format (one target only)."""
    written = [r for r in results if r.verdict.verdict != "reject" and r.verdict.config]
    if len(results) != 1:
        err.print(
            f"note: {output} not written: -o takes one configuration, the input has"
            f" {len(results)} workloads",
            markup=False,
            soft_wrap=True,
        )
        return
    if not written:
        err.print(
            f"note: {output} not written: no configuration to write (reject)",
            markup=False,
            soft_wrap=True,
        )
        return
    try:
        output.write_text(_config_text(written[0].verdict), encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write ({exc.strerror})", 2)


def _print_machine(fmt: str, reports: list[Any], file: Path | None, lines: dict[str, int]) -> None:
    if fmt == "json":
        bodies = [r.to_json() for r in reports]
        print_json(bodies[0] if len(bodies) == 1 else bodies)
        return
    if fmt in ("markdown", "html"):
        from ..report.verdict_doc import render  # a document only when asked for

        sys.stdout.write("".join(render(r, fmt) for r in reports))
        return
    from ..report.sarif import render_sarif  # SARIF only when asked for

    text = render_sarif(reports[0], uri=str(file) if file else None, lines=lines)
    out.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)


def _print_json(results: list[Checked]) -> None:
    """The `arbiter.verdict` report of each target (a list for a manifest): the same JSON
    `POST /v1/check` answers."""
    bodies = [r.report.to_json() for r in results]
    print_json(bodies[0] if len(bodies) == 1 else bodies)


def _print_text(result: Checked, *, written: bool, verbose: bool = False) -> None:
    """Accept or adjust: the config on stdout with `# ` report lines; reject on stderr.
    Both in the engine's words, the verdict first; `verbose` adds the derivation."""
    from ..report.verdict_text import accept_lines  # the engine-word report

    verdict = result.verdict
    head = [f"checked against: {result.report.assumptions.summary}"]
    if result.where:
        head.insert(0, f"workload: {result.where}")
    if result.mismatch:
        head.append(f"note: {result.mismatch}")
    if verdict.verdict == "reject":
        _print_reject(result, head, verbose=verbose)
        return
    report = accept_lines(verdict, verbose=verbose)
    for line in [*head, report[0]]:  # what it was checked against, then the verdict
        out.print(f"# {line}", markup=False, soft_wrap=True)
    if not written:
        out.print(_config_text(verdict).rstrip("\n"), markup=False, highlight=False)
    for line in report[1:]:  # one line each, never wrapped: the output stays YAML
        out.print(f"# {line}", markup=False, soft_wrap=True)


def _print_reject(result: Checked, head: list[str], *, verbose: bool = False) -> None:
    """A reject on stderr: what it was checked against, the verdict in one line, then
    the conflicts in the engine's words and the fixes (or the engine's reasons);
    `verbose` adds the derivation."""
    from ..report.verdict_text import reject_text  # the engine-word report

    source = getattr(result.report, "source", None)
    text = reject_text(result.verdict, verbose=verbose, source=source, lines=result.lines)
    for line in [*head, *text]:
        err.print(line, markup=False, soft_wrap=True)
