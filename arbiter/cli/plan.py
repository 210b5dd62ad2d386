"""`arbiter plan --model ID|PATH --device 8xH200 --isl 4000 --osl 1000 --ttft 2000 --tpot 40
--engine trtllm|vllm|sglang|all`: the fastest rule-valid configuration that meets the SLA.

Times in ms (as AIConfigurator's flags). Exit 0: a pick for at least one engine; 1: no
configuration meets the targets (the report says why and what would); 2: bad input, or the
oracle extra is not installed (`pip install ".[plan]"`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..report import FORMATS as REPORT_FORMATS
from .console import check_output, fail, working, write_output
from .options import FormatOption, JsonOption, output_format

# what `arbiter.plan.render` writes: every report's formats (the planner loads late)
PLAN_FORMATS = REPORT_FORMATS


def plan(
    model: Annotated[
        str, typer.Option("--model", help="A Hugging Face ID the oracle bundles, or a folder.")
    ],
    device: Annotated[str, typer.Option("--device", help="GPUs, e.g. 8xH200, 16xH100.")],
    isl: Annotated[int, typer.Option("--isl", help="Input tokens per request.")],
    osl: Annotated[int, typer.Option("--osl", help="Output tokens per request.")],
    ttft: Annotated[float, typer.Option("--ttft", help="Time to first token target, ms.")],
    tpot: Annotated[float, typer.Option("--tpot", help="Time per output token target, ms.")],
    engine: Annotated[
        str, typer.Option("--engine", "-e", help="trtllm, vllm, sglang or all.")
    ] = "trtllm",
    format_: FormatOption = None,
    as_json: JsonOption = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report to a file.")
    ] = None,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", help="Write the tok/s/GPU vs tok/s/user chart (.svg or .png)."),
    ] = None,
    kv_dtype: Annotated[
        list[str] | None,
        typer.Option("--kv-dtype", help="KV dtypes to search: auto (the checkpoint's), fp8."),
    ] = None,
    max_batch: Annotated[int, typer.Option("--max-batch", min=1, help="Largest batch.")] = 512,
    exact_batch: Annotated[
        int, typer.Option("--exact-batch", min=1, help="Every batch up to this one is priced.")
    ] = 16,
    budget_step: Annotated[
        int, typer.Option("--budget-step", min=64, help="Token-budget grid step.")
    ] = 512,
    refine_step: Annotated[
        int,
        typer.Option(
            "--refine-step",
            min=0,
            help="Token-budget step of the denser lattice around each layout's best; 0: none.",
        ),
    ] = 128,
    max_pp: Annotated[int, typer.Option("--max-pp", min=1, help="Deepest pipeline.")] = 2,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", min=1)] = 8,
    min_tokens_per_user: Annotated[
        float | None, typer.Option("--min-tokens-per-user", help="A floor on tok/s/user.")
    ] = None,
    runners_up: Annotated[int, typer.Option("--runners-up", min=0)] = 3,
    nextn: Annotated[
        int,
        typer.Option(
            "--nextn", min=0, help="Also search MTP speculative decoding up to N draft tokens."
        ),
    ] = 0,
    accept_rate: Annotated[
        float | None,
        typer.Option("--accept-rate", help="Acceptance of each draft token, 0..1 (with --nextn)."),
    ] = None,
    nextn_accept: Annotated[
        float | None,
        typer.Option("--nextn-accept", help="Accepted draft tokens a step at depth --nextn."),
    ] = None,
) -> None:
    """Plan the fastest configuration (tokens/s/GPU) that meets TTFT and TPOT, rule-valid.

    Example: arbiter plan --model Qwen/Qwen3-32B --device 8xH200 --isl 4000 --osl 1000 --ttft 2000 --tpot 40
    """
    fmt = output_format(format_, as_json, allowed=PLAN_FORMATS)
    # the planner, its oracle and the solver load only when a plan runs
    from ..errors import ArbiterError
    from ..plan import Lattice
    from ..plan import plan as make_plan
    from ..plan.render import render

    check_output(output)
    check_output(chart)
    try:
        with working("planning", enabled=fmt != "json"):
            report = make_plan(
                model,
                device,
                isl,
                osl,
                ttft,
                tpot,
                engine,
                gpus_per_node=gpus_per_node,
                min_tokens_per_user=min_tokens_per_user,
                nextn=nextn,
                accept_rate=accept_rate,
                nextn_accept=nextn_accept,
                lattice=Lattice(
                    max_batch=max_batch,
                    exact_batch=exact_batch,
                    budget_step=budget_step,
                    refine_step=refine_step or None,
                    max_pp=max_pp,
                    kv_dtypes=tuple(kv_dtype or ("auto",)),
                ),
                runners_up=runners_up,
            )
    except ArbiterError as exc:  # printed without markup: the install hint has brackets
        fail(str(exc), exc.exit_code, exc)
    data = report.to_json()
    text = render(data, fmt)
    if chart is not None:
        from ..plan.chart import write_chart  # matplotlib loads only for a chart

        write_chart(data, chart)
    if output is not None:
        write_output(output, text)
    else:
        sys.stdout.write(text)  # unwrapped: JSON and long config lines stay whole
        sys.stdout.flush()
    if report.best is None:
        raise typer.Exit(1)
