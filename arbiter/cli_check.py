"""`arbiter check [FILE] --dialect trtllm|sglang|mlc [--serve-args "..."]`: lint an
existing engine configuration.

For SGLang, FILE is a `--config` YAML of `ServerArgs` fields and `--serve-args` a launch
command line (`python -m sglang.launch_server --tp-size 2 ...`; it wins key by key, as
SGLang's config merger does); `--gpus N` is the GPUs available. The report lists the
explicit values SGLang would rewrite (with the rule) and what it derives for unset fields.

For TensorRT-LLM, `--serve-args` takes a trtllm-serve command line used beside the YAML
(`--tp_size 8 --kv_cache_free_gpu_memory_fraction 0.8 ...`); the YAML wins key by key, as
in trtllm-serve. Fields arbiter does not arbitrate are written back as given and listed.

Exit 0: the configuration holds together; prints the solved configuration in the
dialect's own shape (YAML for TensorRT-LLM, JSON for MLC), what changed and why, and the
KV capacity. Exit 1: it cannot hold; prints the conflict report. Exit 2: bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from .errors import ArbiterError, ConflictError, InvalidClaim, exit_code


def check_file(
    file: Path | dict[str, Any] | None,
    dialect: str,
    *,
    model: Path | dict[str, Any] | None = None,
    device: str | None = None,
    engine: Path | None = None,
    time_limit_s: float | None = None,
    profile: str | None = None,
    serve_args: str | None = None,
    gpus: int = 1,
) -> tuple[Any, Any, str]:
    """Read, arbitrate and write back: (resolution, config in the dialect's shape, format).

    `file` and `model` may also be already-parsed mappings (the HTTP service passes them).
    `profile` overrides the dialect's release line (trtllm: trtllm-1.2; the trtllm dialect
    moves it to the TensorRT-engine line for `backend: tensorrt` or an engine folder; mlc: mlc).
    Raises the arbiter's errors (ConflictError, InvalidClaim)."""
    resolution, config, fmt, _ = check_parsed(
        file,
        dialect,
        model=model,
        device=device,
        engine=engine,
        time_limit_s=time_limit_s,
        profile=profile,
        serve_args=serve_args,
        gpus=gpus,
    )
    return resolution, config, fmt


def check_parsed(
    file: Path | dict[str, Any] | None,
    dialect: str,
    *,
    model: Path | dict[str, Any] | None = None,
    device: str | None = None,
    engine: Path | None = None,
    time_limit_s: float | None = None,
    profile: str | None = None,
    serve_args: str | None = None,
    gpus: int = 1,
) -> tuple[Any, Any, str, Any]:
    """`check_file` plus the dialect's reading (for what was not arbitrated)."""
    from .dialects import machine_claims
    from .solve import arbitrate

    if dialect == "sglang":
        from .dialects import sglang

        resolution, parsed = sglang.solve(
            file,
            serve_args=serve_args,
            model=model,
            device=device,
            gpus=gpus,
            profile=profile or sglang.PROFILE,
            time_limit_s=time_limit_s,
        )
        return resolution, sglang.write(resolution, parsed), "yaml", parsed
    if dialect == "trtllm":
        from .dialects import trtllm

        parsed = trtllm.read(file, engine=engine, serve_args=serve_args, profile=profile)
    elif serve_args is not None:
        raise InvalidClaim("--serve-args is for the trtllm dialect", value=serve_args)
    elif file is None:
        raise InvalidClaim("an MLC check needs a FILE", value=None)
    elif dialect == "mlc":
        from .dialects import mlc

        parsed = mlc.read(file)
    else:
        raise InvalidClaim(f"unknown dialect {dialect!r}; use trtllm, sglang or mlc", value=dialect)
    claims = [*parsed.claims, *machine_claims(model, device, parsed.claims)]
    if dialect == "trtllm":  # the dialect picked the line: the profile's, on the input's backend
        profile = parsed.profile
    resolution = arbitrate(
        claims, profile=profile or parsed.profile, mode=parsed.mode, time_limit_s=time_limit_s
    )
    if dialect == "trtllm":
        return resolution, trtllm.write(resolution, parsed), "yaml", parsed
    return resolution, mlc.write(resolution, parsed.mode, parsed.extra), "json", None


def check(
    file: Annotated[
        Path | None,
        typer.Argument(help="The configuration: LLM API YAML, an engine folder, or MLC JSON."),
    ] = None,
    dialect: Annotated[
        str, typer.Option("--dialect", "-d", help="trtllm, sglang or mlc.")
    ] = "trtllm",
    model: Annotated[
        Path | None, typer.Option("--model", help="The model's config.json (or its folder).")
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="A catalog device, e.g. H100-80GB, L4, cpu.")
    ] = None,
    engine: Annotated[
        Path | None, typer.Option("--engine", help="A prebuilt TensorRT engine folder (trtllm).")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Engine release line (trtllm-1.2, trtllm-1.0, trtllm-tensorrt, trtllm-0.10, mlc, sglang-0.5).",
        ),
    ] = None,
    serve_args: Annotated[
        str | None,
        typer.Option(
            "--serve-args",
            help="trtllm: a trtllm-serve command line beside the YAML, e.g. '--tp_size 8'.",
        ),
    ] = None,
    gpus: Annotated[
        int, typer.Option("--gpus", min=1, help="GPUs available (sglang: tp x pp x dp must fit).")
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print nothing but errors; the exit code says it all."),
    ] = False,
) -> None:
    """Lint an existing configuration: exit 0 with the solved config and its changes, 1 with
    the conflict report.

    Example: arbiter check examples/trtllm/reuse_on_volta.yaml --model examples/models/llama-3-8b.json --device V100-16GB
    """
    from .cli import _fail, err, out

    if file is None and serve_args is None:
        _fail("give a FILE, --serve-args, or both", 2)
        return
    try:
        resolution, config, fmt, parsed = check_parsed(
            file,
            dialect,
            model=model,
            device=device,
            engine=engine,
            profile=profile,
            serve_args=serve_args,
            gpus=gpus,
        )
    except ConflictError as exc:
        if as_json:
            out.print_json(
                json.dumps({"conflicts": [c.to_json() for c in exc.conflicts], "message": str(exc)})
            )
        elif not quiet:
            err.print(exc.report("text"), markup=False)
        raise typer.Exit(1) from None
    except ArbiterError as exc:
        _fail(str(exc), exit_code(exc))
        return
    if quiet:
        return
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "config": config,
                    "changes": [c.to_json() for c in resolution.changes],
                    "dropped": [
                        {"name": d.name, "reason": str(d.reason)} for d in resolution.dropped
                    ],
                    "overridden_defaults": list(resolution.overridden_defaults),
                    "capacity": resolution.capacity.to_json(),
                    "profile": resolution.stats.get("profile"),
                    "not_arbitrated": _carried(parsed),
                    "notes": _notes(parsed),
                }
            )
        )
        return
    text = (
        json.dumps(config, indent=2) if fmt == "json" else yaml.safe_dump(config, sort_keys=False)
    )
    out.print(text, markup=False, highlight=False)
    out.print("# changes", markup=False)
    for change in resolution.changes:
        out.print(f"#   {change}  ({resolution.provenance(change.path)})", markup=False)
    for dropped in resolution.dropped:
        out.print(f"# dropped {dropped.name}: {dropped.reason}", markup=False)
    for rule in resolution.overridden_defaults:
        out.print(f"# overridden default rule {rule}", markup=False)
    for note in _notes(parsed):
        out.print(f"# adjusted {note}", markup=False)
    for line in parsed.extra.get("derivations", []) if parsed is not None else []:
        out.print(f"# {line}", markup=False)
    carried = _carried(parsed)
    if carried:
        out.print("# not arbitrated (written back as given): " + ", ".join(carried), markup=False)
    out.print(f"# capacity: {resolution.capacity}", markup=False)
    out.print(f"# profile: {resolution.stats.get('profile')}", markup=False)


def _carried(parsed: Any) -> dict[str, str]:
    if parsed is None:
        return {}
    if "carried" in parsed.extra:  # sglang
        return dict(parsed.extra["carried"])
    from .dialects.trtllm import not_arbitrated

    return not_arbitrated(parsed)


def _notes(parsed: Any) -> list[str]:
    return list(parsed.extra.get("notes", [])) if parsed is not None else []
