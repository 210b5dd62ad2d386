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

from arbiter.cli import RUNTIME_COMMAND, make_app
from arbiter.cli import main as run_cli
from arbiter.cli.console import err, fail, out, print_json, working
from arbiter.cli.options import FormatOption, JsonOption, output_format
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
    format_: FormatOption = None,
    as_json: JsonOption = False,
) -> None:
    """Solve the engine's configuration, then generate with it (CPU unless CUDA is present).

    `--beam-width N` sets max_beam_width to N unless the arguments set it; a request the
    configuration can never serve fails before the model is loaded.

    Example (a random tiny model: python -m engine.model.testing tiny-llama):
    arbiter run tiny-llama -p 1,2,3 --set kv_cache_config.tokens_per_block=16 --max-tokens 8
    """
    as_json = output_format(format_, as_json) == "json"
    # the dialect's safe YAML reader loads the rules: only `run` pays for it
    from arbiter.dialects._base import load_mapping

    from .sampling import InvalidSamplingParams, SamplingParams  # torch: only `run` loads it

    try:  # bad sampling values fail before the solver and the model load
        params = SamplingParams(
            max_tokens=max_tokens, temperature=temperature, beam_width=beam_width, seed=seed
        )
    except InvalidSamplingParams as exc:
        fail(str(exc), 2)
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
    imply_beam_width(llm_args, beam_width)
    prompts = [_prompt(p) for p in prompt]
    _check_text_prompts(model, prompts)  # before the solver and the model load
    # torch and the runtime load only when `run` runs, so the other commands stay fast
    from .llm import LLM

    try:
        with working("solving the configuration and loading the model", enabled=not as_json):
            llm = LLM(model, **llm_args)
        with working("generating", enabled=not as_json):
            outputs = llm.generate(prompts, params)
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
    out.print(run_summary(llm.resolution), markup=False, highlight=False)
    for p, o in zip(prompt, outputs, strict=True):
        shown = o.text if o.text is not None else o.token_ids
        out.print(f"[{p}] -> {shown} ({o.finish_reason})")


def _check_text_prompts(model: Path, prompts: list[Any]) -> None:
    """A text prompt needs the model folder's tokenizer.json (engine.llm.LLM reads it from
    there): without one, say so and how to pass token ids, before any work."""
    text = next((p for p in prompts if isinstance(p, str)), None)
    if text is None or (model / "tokenizer.json").is_file() or not model.is_dir():
        return
    fail(
        f"--prompt {text!r}: a text prompt needs the model's tokenizer.json, and {model} has"
        " none; pass token ids instead (-p 1,2,3) or add the tokenizer.json",
        2,
    )


def run_summary(resolution: Any) -> str:
    """What `run` prints about its configuration: the status, the claims kept (the engine
    defaults that stayed as one count), each dropped claim with its reason, and each
    change with what decided it."""
    lines = [f"status: {resolution.status}"]
    defaults = [k for k in resolution.kept if k.name.startswith("default.")]
    for k in resolution.kept:
        if not k.name.startswith("default."):
            alt = "" if k.alternative is None else f" (alternative {k.alternative})"
            lines.append(f"kept     {k.name}{alt}")
    if defaults:
        lines.append(f"kept     {len(defaults)} engine defaults")
    for d in resolution.dropped:
        lines.append(f"dropped  {d.name}: {d.reason}")
    for c in resolution.changes:
        lines.append(f"changed  {c}  ({resolution.provenance(c.path)})")
    return "\n".join(lines)


def imply_beam_width(llm_args: dict[str, Any], beam_width: int) -> None:
    """Make room for `beam_width` beams: set `max_beam_width` when no argument sets it,
    and refuse (exit 2, before any work) a set one that is too small."""
    build = llm_args.get("build_config")
    nested = build.get("max_beam_width") if isinstance(build, dict) else None
    given = [
        (key, value)
        for key, value in (
            ("max_beam_width", llm_args.get("max_beam_width")),
            ("build_config.max_beam_width", nested),
        )
        if value is not None
    ]
    if not given:
        if beam_width > 1:
            llm_args["max_beam_width"] = beam_width
        return
    for key, value in given:
        if isinstance(value, int) and not isinstance(value, bool) and value < beam_width:
            fail(
                f"--beam-width {beam_width} needs {key} >= {beam_width}, but the arguments set"
                f" {key}={value}; raise it or drop it (--beam-width then sets it)",
                2,
            )


app = make_app(RUNTIME_COMMAND)  # the arbiter's commands and the runtime's `run`


def main() -> None:
    """The `arbiter` console script: every command, `run` included."""
    run_cli(app)


if __name__ == "__main__":
    main()
