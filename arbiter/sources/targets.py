"""From a file arbiter was given to what to check: the front door's reading step.

`targets(text, dialect=..., source=...)` tells what the text is (`detect`), refuses what
`arbiter check` cannot check with a sentence that names the fix (`SourceError`: an empty
document, a claims file, a model's config.json, a dialect it cannot tell), and returns
one `Target` per thing to check: the config itself, or each engine server of a
Kubernetes manifest. A target carries the dialect, the config mapping or the serve
command line, the model the input names (`model:` of a vLLM, TensorRT-LLM or MLC config,
SGLang's `model-path`, a serve command's MODEL), the GPU count a manifest gives, and the
lines of its keys, for the input errors and SARIF.

`dialect` is what the user passed (`--dialect`), None when not: detection decides then,
and a tie or no evidence is a `SourceError` asking for `--dialect`. When the user's
dialect and a confident detection disagree, the target keeps the user's and says so in
`mismatch` ("this looks like a `vllm serve` config: --dialect vllm"), for the front door
to print beside the check's own errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialects import DIALECTS as REGISTRY
from ..errors import SourceError
from .detect import (
    Detection,
    command_message,
    detect_mapping,
    detect_text,
    dialect_hint,
    mismatch_message,
)
from .lines import key_lines
from .vocab import DIALECTS
from .vocab_data import vocabularies

# what an input with no settings gets (a file or a service request's config alike)
EMPTY = (
    "the file holds no settings: nothing to check (an engine config, a serve command line"
    " or a Kubernetes manifest)"
)


@dataclass(frozen=True)
class Target:
    """One thing to check: a dialect with a config mapping or a serve command line."""

    dialect: str
    source: str
    config: Mapping[str, Any] | None = None
    serve_args: str | None = None
    model: str | None = None  # what the input names as its model (None: it names none)
    gpus: int | None = None  # a manifest's GPU count for the engine
    lines: Mapping[str, int] = field(default_factory=dict)
    line: int | None = None  # a manifest container's args line
    where: str = ""  # a manifest's "Deployment/x container 'vllm'"
    mismatch: str | None = None
    notes: tuple[str, ...] = ()
    # values the input may not hold (`constraints.edge`: an integer past INT_LIMIT, a key
    # given twice), left out of `config` so that the dialect names its own problems too
    problems: tuple[Any, ...] = ()


def config_model(dialect: str, config: Mapping[str, Any]) -> str | None:
    """The model a config names, in any spelling its dialect accepts, or None."""
    vocab = vocabularies()[dialect]
    for key, value in config.items():
        if isinstance(key, str) and vocab.field_of(key) == REGISTRY.entries[dialect].model_field:
            return str(value) if isinstance(value, (str, int, float)) and value != "" else None
    return None


def _dialect(found: Detection, given: str | None, source: str) -> tuple[str, str | None]:
    if given is not None:
        if given not in DIALECTS:
            raise SourceError(
                f"unknown dialect {given!r}; use one of {', '.join(DIALECTS)}", file=source
            )
        return given, mismatch_message(found, given)
    if found.dialect is not None:
        return found.dialect, None
    hint = dialect_hint(found)
    if hint is not None:
        raise SourceError(hint, file=source, detection=found)
    raise SourceError(
        "cannot tell the engine from the content (no key is a field of any engine's "
        f"release): pass --dialect {REGISTRY.names()}",
        file=source,
        detection=found,
    )


def targets(
    text: str, *, dialect: str | None = None, source: str = "<input>", suffix: str = ""
) -> tuple[Detection, list[Target]]:
    """What to check in `text` (a file's content; `suffix` its extension, `.json` read as
    JSON). Raises SourceError for what `arbiter check` cannot check, with the fix."""
    found = detect_text(text, suffix=suffix)
    if found.kind == "empty":
        raise SourceError(EMPTY, file=source, detection=found)
    wrong = command_message(found, "check")
    if wrong is not None:
        raise SourceError(wrong, file=source, detection=found)
    if found.kind == "manifest":
        return found, _manifest_targets(text, dialect, source)
    refused: list[Any] = []
    data: Any = None
    if found.kind == "unknown":
        data = _with_refused_values(text, suffix, refused)
        if not refused:
            raise SourceError(_unreadable(text, suffix, found), file=source, detection=found)
        rest = detect_mapping(data) if isinstance(data, Mapping) and data else None
        if rest is None or (rest.dialect is None and dialect is None):
            from ..dialects._base import InputProblems, edge_problem  # the refused values

            raise InputProblems([edge_problem(p) for p in refused], file=source)
        found = rest  # what the rest of the document is
    chosen, mismatch = _dialect(found, dialect, source)
    if found.kind == "serve-command":
        from .command import find_serve_command, split_command_line  # only a command line

        words = split_command_line(text) or []
        command = find_serve_command(words)
        return found, [
            Target(
                chosen,
                source,
                serve_args=command.serve_args if command is not None else text.strip(),
                model=command.model if command is not None else None,
                mismatch=mismatch,
            )
        ]
    from constraints.edge import parse_json, parse_yaml  # the config is read once more here

    if data is None:
        data = parse_json(text) if suffix == ".json" else parse_yaml(text)
    return found, [
        Target(
            chosen,
            source,
            config=data,
            model=config_model(chosen, data),
            lines=key_lines(text),
            mismatch=mismatch,
            problems=tuple(refused),
        )
    ]


def _with_refused_values(text: str, suffix: str, refused: list[Any]) -> Any:
    """The document without the values the edge validator refuses (appended to
    `refused`), or None when its syntax or its size stops the reading."""
    import yaml  # the syntax error is the caller's to word

    from constraints.edge import EdgeError, parse_json, parse_yaml  # read once more

    try:
        if suffix == ".json":
            return parse_json(text, problems=refused)
        return parse_yaml(text, problems=refused)
    except (EdgeError, ValueError, yaml.YAMLError):
        return None


def _unreadable(text: str, suffix: str, found: Detection) -> str:
    """Why a text is no config: its syntax error, else what detection saw."""
    import yaml  # the syntax error's own words

    from constraints.edge import (  # read once more for it
        EdgeError,
        parse_json,
        parse_yaml,
        syntax_message,
    )

    kind = "JSON" if suffix == ".json" else "YAML"
    try:
        parse_json(text) if suffix == ".json" else parse_yaml(text)
    except EdgeError as exc:
        return exc.reason + (f" (limit {exc.limit})" if exc.limit else "")
    except (ValueError, yaml.YAMLError) as exc:
        return syntax_message(exc, kind)
    return "not an engine config: " + (found.evidence[0] if found.evidence else "unrecognised")


def _manifest_targets(text: str, dialect: str | None, source: str) -> list[Target]:
    from .manifest import scan_manifest  # only a manifest is scanned

    manifest = scan_manifest(text, source)
    if not manifest.workloads:
        raise SourceError(
            "a Kubernetes manifest whose containers start no engine server "
            "(vllm serve, python -m sglang.launch_server, trtllm-serve, mlc_llm serve)",
            file=source,
        )
    out = []
    for w in manifest.workloads:
        mismatch = None
        if dialect is not None and dialect != w.dialect:
            mismatch = f"{w.where} runs {w.dialect}: --dialect {w.dialect}"
        out.append(
            Target(
                w.dialect,
                source,
                serve_args=w.serve_args,
                model=w.model,
                gpus=w.check_gpus,
                lines=w.flag_lines,
                line=w.line,
                where=w.where,
                mismatch=mismatch,
                notes=(*w.notes, *(f"{k}: {v}" for k, v in w.env.items())),
            )
        )
    return out
