"""`arbiter check [FILE] --dialect <engine> [--serve-args "..."]`: lint an existing engine
configuration through the one check pipeline (`arbiter.check`); the engines are
`arbiter.dialects.DIALECTS`.

For SGLang, FILE is a `--config` YAML of `ServerArgs` fields and `--serve-args` a launch
command line (`python -m sglang.launch_server --tp-size 2 ...`; it wins key by key, as
SGLang's config merger does); `--gpus N` is the GPUs available. The report lists the
explicit values SGLang would rewrite (with the rule) and what it derives for unset fields.

For vLLM, FILE is `vllm serve`'s `--config` YAML and `--serve-args` a `vllm serve` command
line (it wins over the file key by key); `--gpus N` says how many GPUs of `--device`.

For TensorRT-LLM, `--serve-args` takes a trtllm-serve command line used beside the YAML
(`--tp_size 8 --kv_cache_free_gpu_memory_fraction 0.8 ...`); the YAML wins key by key, as
in trtllm-serve. Fields arbiter does not arbitrate are written back as given and listed.

Exit 0 (accept, adjust): prints the solved configuration in the dialect's own shape (YAML
for TensorRT-LLM, JSON for MLC), the verdict, what changed and why, what the engine sets
by itself, and the KV capacity. Exit 1 (reject): the conflict report, or the engine's
refusal. Exit 2: bad input. `--json` prints the verdict's JSON (every line of the text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from ..dialects import DEFAULT_DIALECT, DIALECTS
from ..dialects.verdict import Verdict
from ..errors import ArbiterError
from .console import err, fail, fail_with, out, print_json

DIALECT_HELP = ", ".join(DIALECTS) + "."


def check(
    file: Annotated[
        Path | None,
        typer.Argument(help="The configuration: LLM API YAML, an engine folder, or MLC JSON."),
    ] = None,
    dialect: Annotated[str, typer.Option("--dialect", "-d", help=DIALECT_HELP)] = DEFAULT_DIALECT,
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
    """Lint an existing configuration: exit 0 (accept, adjust) with the solved config and
    its changes, 1 (reject) with the conflict report or the engine's refusal, 2 bad input.

    Example: arbiter check examples/trtllm/reuse_on_volta.yaml --model examples/models/llama-3-8b.json --device V100-16GB
    """
    # the dialects and the solver (OR-Tools) load only when a command checks
    from ..application.check import check_verdict, report_lines, verdict_json

    if file is None and serve_args is None:
        fail("give a FILE, --serve-args, or both", 2)
    try:
        verdict = check_verdict(
            file,
            dialect,
            model=model,
            device=device,
            engine=engine,
            profile=profile,
            serve_args=serve_args,
            gpus=gpus,
        )
    except ArbiterError as exc:
        fail_with(exc)
    if as_json:
        if not quiet:
            print_json(verdict_json(verdict))
        raise typer.Exit(verdict.exit_code)
    if verdict.verdict == "reject":
        if not quiet:
            _print_reject(verdict)
        raise typer.Exit(verdict.exit_code)
    if quiet:
        return
    config = verdict.config
    text = (
        json.dumps(config, indent=2)
        if verdict.format == "json"
        else yaml.safe_dump(config, sort_keys=False)
    )
    out.print(text, markup=False, highlight=False)
    for line in report_lines(verdict):  # one line each, never wrapped: the output stays YAML
        out.print(f"# {line}", markup=False, soft_wrap=True)


def _print_reject(verdict: Verdict) -> None:
    """A reject on stderr: the conflict report, or the engine's reasons."""
    if verdict.conflict is not None:
        err.print(verdict.conflict.report("text"), markup=False)
        return
    err.print(f"reject ({verdict.profile}): the engine refuses the configuration", markup=False)
    for reason in verdict.reasons:
        err.print(f"  {reason}", markup=False)
    if verdict.rules:
        err.print("  rules: " + ", ".join(verdict.rules), markup=False)
