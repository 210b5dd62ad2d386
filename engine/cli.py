"""`arbiter run`: arbitrate an engine's arguments, then generate with the runtime.

The runtime's command lives with the runtime: this module adds `run` to the arbiter's
commands (`arbiter.cli.make_app`), and `main` here is the `arbiter` console script, so
the arrow points from `engine` to `arbiter` and never back.

The arguments are TensorRT-LLM `LlmArgs` names, given in a YAML file (the
`extra_llm_api_options` shape) and/or as `--set key=value` pairs; explicit values are
functional claims, engine defaults are performance claims (see `engine.args`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from arbiter.cli import main as run_cli
from arbiter.cli import make_app
from arbiter.cli.console import err, fail, out, print_json
from arbiter.dialects._base import load_mapping
from arbiter.errors import ConflictError, InvalidClaim

from .errors import EngineError


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _prompt(text: str) -> Any:
    """`1,2,3` is a list of token ids; anything else is text for the tokenizer."""
    parts = [p.strip() for p in text.split(",")]
    if parts and all(p.lstrip("-").isdigit() for p in parts):
        return [int(p) for p in parts]
    return text


def run(
    model: Annotated[
        Path,
        typer.Argument(help="A local Hugging Face model folder (config.json + *.safetensors)."),
    ],
    prompt: Annotated[
        list[str],
        typer.Option(
            "--prompt",
            "-p",
            help="A prompt: text (needs tokenizer.json) or token ids '1,2,3'. Repeatable.",
        ),
    ],
    args_file: Annotated[
        Path | None,
        typer.Option("--args", help="LLM arguments in YAML (extra_llm_api_options shape)."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="One LLM argument as key=value (YAML value); dotted keys nest. Repeatable.",
        ),
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens to generate per prompt.")] = 16,
    temperature: Annotated[float, typer.Option(help="0 is greedy.")] = 0.0,
    beam_width: Annotated[int, typer.Option(help="Beams (beam search when > 1).")] = 1,
    seed: Annotated[int | None, typer.Option(help="Sampling seed.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Solve the engine's configuration, then generate with it (CPU unless CUDA is present).

    Example: arbiter run ./tiny-llama -p 1,2,3 --set kv_cache_config.tokens_per_block=16 --max-tokens 8
    """
    llm_args: dict[str, Any] = {}
    if args_file is not None:
        if not args_file.exists():
            fail(f"{args_file}: no such file", 2)
        try:  # size, UTF-8, safe YAML with bounded aliases, finite numbers
            loaded, _ = load_mapping(args_file, "llm_args")
        except InvalidClaim as exc:
            fail(str(exc), 2)
        llm_args.update(loaded)
    for item in set_ or []:
        if "=" not in item:
            fail(f"--set {item!r}: expected key=value", 2)
        key, value = item.split("=", 1)
        target = llm_args
        *parents, leaf = key.strip().split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = _parse_value(value)
    # torch and the runtime load only when `run` runs, so the other commands stay fast
    from .llm import LLM
    from .sampling import SamplingParams

    try:
        llm = LLM(model, **llm_args)
        params = SamplingParams(
            max_tokens=max_tokens, temperature=temperature, beam_width=beam_width, seed=seed
        )
        outputs = llm.generate([_prompt(p) for p in prompt], params)
    except InvalidClaim as exc:
        fail(str(exc), 2)
    except ConflictError as exc:
        err.print(exc.report("text"))
        raise typer.Exit(1) from None
    except EngineError as exc:
        fail(str(exc), exc.exit_code)
    except (ValueError, OSError) as exc:
        fail(str(exc), 2)
    if as_json:
        print_json(
            {
                "resolution": llm.resolution.to_json(),
                "outputs": [
                    {
                        "prompt": p,
                        "token_ids": o.token_ids,
                        "text": o.text,
                        "finish_reason": o.finish_reason,
                    }
                    for p, o in zip(prompt, outputs, strict=True)
                ],
            }
        )
        return
    out.print(llm.resolution.summary())
    for p, o in zip(prompt, outputs, strict=True):
        shown = o.text if o.text is not None else o.token_ids
        out.print(f"[{p}] -> {shown} ({o.finish_reason})")


app = make_app(run)  # the arbiter's commands and the runtime's `run`


def main() -> None:
    """The `arbiter` console script: every command, `run` included."""
    run_cli(app)


if __name__ == "__main__":
    main()
