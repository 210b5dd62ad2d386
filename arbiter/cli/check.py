"""`arbiter check [FILE] --dialect trtllm|vllm|sglang|mlc [--serve-args "..."]`: lint an
existing engine configuration.

For SGLang, FILE is a `--config` YAML of `ServerArgs` fields and `--serve-args` a launch
command line (`python -m sglang.launch_server --tp-size 2 ...`; it wins key by key, as
SGLang's config merger does); `--gpus N` is the GPUs available. The report lists the
explicit values SGLang would rewrite (with the rule) and what it derives for unset fields.

For vLLM, FILE is `vllm serve`'s `--config` YAML and `--serve-args` a `vllm serve` command
line (it wins over the file key by key); `--gpus N` says how many GPUs of `--device`.

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
from typing import Annotated

import typer
import yaml

from ..errors import ArbiterError, ConflictError
from .console import err, fail, fail_with, out, print_json


def check(
    file: Annotated[
        Path | None,
        typer.Argument(help="The configuration: LLM API YAML, an engine folder, or MLC JSON."),
    ] = None,
    dialect: Annotated[
        str, typer.Option("--dialect", "-d", help="trtllm, vllm, sglang or mlc.")
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
            help="Engine release line (trtllm-1.2, trtllm-1.0, trtllm-tensorrt, trtllm-0.10, mlc,"
            " vllm-0.33, sglang-0.5).",
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
        int, typer.Option("--gpus", min=1, help="GPUs of --device the server runs on.")
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
    # the dialects and the solver (OR-Tools) load only when a command checks
    from ..application.check import check_parsed, derived_defaults, not_arbitrated, notes

    if file is None and serve_args is None:
        fail("give a FILE, --serve-args, or both", 2)
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
            print_json({"conflicts": [c.to_json() for c in exc.conflicts], "message": str(exc)})
        elif not quiet:
            err.print(exc.report("text"), markup=False)
        raise typer.Exit(exc.exit_code) from None
    except ArbiterError as exc:
        fail_with(exc)
    if quiet:
        return
    if as_json:
        print_json(
            {
                "config": config,
                "changes": [c.to_json() for c in resolution.changes],
                "dropped": [{"name": d.name, "reason": str(d.reason)} for d in resolution.dropped],
                "overridden_defaults": list(resolution.overridden_defaults),
                "capacity": resolution.capacity.to_json(),
                "profile": resolution.stats.get("profile"),
                "not_arbitrated": not_arbitrated(parsed),
                "notes": notes(parsed),
            }
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
    for note in notes(parsed):
        out.print(f"# adjusted {note}", markup=False)
    for engine_name, derived in derived_defaults(parsed):
        out.print(f"# {engine_name} would set {derived}", markup=False)
    for line in parsed.extra.get("derivations", []) if parsed is not None else []:
        out.print(f"# {line}", markup=False)
    carried = not_arbitrated(parsed)
    if carried:
        out.print("# not arbitrated (written back as given): " + ", ".join(carried), markup=False)
    out.print(f"# capacity: {resolution.capacity}", markup=False)
    out.print(f"# profile: {resolution.stats.get('profile')}", markup=False)
