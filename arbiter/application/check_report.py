"""One check, one report, whichever door asked: the command line (`arbiter check`) and the
service (`POST /v1/check`) both call `check_target`, so the same input gets the same
facts (`check_setup`: the given model, else the config's own model key through the
catalog and the Hugging Face cache; the given GPUs, else the layout's, said as an
assumption) and the same `arbiter.verdict` report (`arbiter.report.schema`).

`check_target(target, ...)` checks one `arbiter.sources.Target`; `request_target(dialect,
config)` is the target of a service request's config mapping, read as a file is (an
empty config is refused with the same sentence, the model is the same key). `for_request(report)` says the assumptions in the request's
words (`gpus`, not `--gpus`); nothing else of the report differs between the doors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dialects import DIALECTS
from ..dialects.verdict import Verdict
from ..report.schema import Assumptions, VerdictReport, from_verdict
from .check_setup import check_setup

# the options a report's assumptions name, and the request field that says the same
_FLAG = re.compile(r"--(model|gpus|device|profile|dialect)\b")


@dataclass(frozen=True)
class Checked:
    """One target checked: the verdict, its report and what it was checked against."""

    verdict: Verdict
    report: VerdictReport
    lines: dict[str, int]
    mismatch: str | None
    where: str


def check_target(
    target: Any,
    source: Path | Mapping[str, Any] | None,
    *,
    model: str | Mapping[str, Any] | None = None,
    device: str | None = None,
    gpus: int | None = None,
    profile: str | None = None,
    serve_args: str | None = None,
    engine: Path | None = None,
    model_optional: bool = False,
    time_limit_s: float | None = None,
) -> Checked:
    """Check `target` (its config read from `source`: a file, or the mapping itself) on the
    machine its facts resolve to. Raises the arbiter's errors for bad input that stops
    before a verdict (no model, a model that does not resolve)."""
    from ..check import check as run_check  # the one pipeline (OR-Tools loads here)
    from ..dialects.protocol import Machine  # the dialects load with the check

    args = " ".join(a for a in (target.serve_args, serve_args) if a) or None
    chosen_line = None
    if profile is None:
        from ..dialects.release import choose_line  # importlib.metadata only for a check

        chosen = choose_line(target.dialect, DIALECTS.get_dialect(target.dialect).default_profile)
        if chosen.installed is not None:  # the line of the engine installed beside arbiter
            profile = chosen.profile
            chosen_line = (chosen.profile, chosen.why)
        # else the dialect reads the line from the config (TensorRT-LLM's backend keys), and
        # the summary names the profile it checked against
    given_profile = profile if chosen_line is None else None
    if getattr(target, "problems", ()):
        raise _every_problem(target, args, profile)
    if model is None and target.model is None and not model_optional:
        # the input's own errors first: the dialect reads it with no machine
        DIALECTS.get_dialect(target.dialect).read(
            source, serve_args=args, machine=Machine(), profile=profile
        )
    inline = model if isinstance(model, Mapping) else None
    ref = model if isinstance(model, str) else None
    setup = check_setup(
        target.dialect,
        model=ref,
        named_model=None if inline is not None else target.model,
        device=device,
        gpus=gpus,
        config=target.config,
        serve_args=args,
        manifest_gpus=target.gpus,
        profile=given_profile,
        chosen_line=chosen_line,
        model_optional=model_optional or inline is not None,
    )
    spec = dict(inline) if inline is not None else setup.model
    if inline is not None:
        _inline_model(setup.assumed, inline)
    verdict = run_check(
        target.dialect,
        source,
        serve_args=args,
        machine=Machine.read(spec, setup.device, setup.gpus),
        profile=profile,
        engine=engine,
        time_limit_s=time_limit_s,
        lines=dict(target.lines),
    )
    setup.assumed.summary = (
        f"{setup.assumed.summary}, {DIALECTS.label(target.dialect)} ({verdict.profile})"
    )
    report = from_verdict(
        verdict,
        dialect=target.dialect,
        source=target.where or target.source,
        assumed=setup.assumed,
        error=verdict.error,
        format="json" if verdict.format == "json" else "yaml",
        lines=dict(target.lines),
    )
    report.workload = target.where or None
    report.mismatch = target.mismatch
    return Checked(verdict, report, dict(target.lines), target.mismatch, target.where)


def _every_problem(target: Any, args: str | None, profile: str | None) -> Exception:
    """The values the edge validator refused in the target's input, and the dialect's
    own problems with the rest of it, as one error (`InputProblems`)."""
    from ..dialects._base import (  # the error of a bad input
        InputProblems,
        KeyProblem,
        edge_problem,
    )
    from ..dialects.protocol import Machine  # the dialects load with the check
    from ..errors import DialectError  # what the dialect's reading raises
    from ..sources.lines import line_of  # the problems in the order of their lines

    found: list[Any] = [_with_domain(edge_problem(p), target.dialect) for p in target.problems]
    against = ""
    try:
        DIALECTS.get_dialect(target.dialect).read(
            dict(target.config or {}), serve_args=args, machine=Machine(), profile=profile
        )
    except DialectError as exc:
        mine = getattr(exc, "problems", None)
        found += list(mine) if mine else [_as_problem(exc, KeyProblem)]
        against = re.sub(r"^\d+ problem\(s\) ?(against |in |for )?", "", exc.reason)
        against = against if mine else ""
    lines = dict(target.lines)

    def where(problem: Any) -> int:
        key = str(getattr(problem, "key", None) or getattr(problem, "path", None) or "")
        return line_of(lines, key.lstrip("-").replace("-", "_")) or line_of(lines, key) or 0

    found.sort(key=where)
    return InputProblems(found, file=target.source, against=against)


def _with_domain(problem: Any, dialect: str) -> Any:
    """A refused integer of a key that sets an option: the option's own domain as what is
    allowed (`int in [1, 65536]` for `max-num-seqs`), where the edge limit said less."""
    import dataclasses  # the problem record is frozen: a copy with the domain

    from constraints.errors import SchemaError  # an option the schema does not know
    from constraints.schema import lookup  # the option's domain

    from ..dialects.words import path_fields  # the engine's keys of the options

    if not str(problem.reason).startswith("integer "):
        return problem
    key = str(problem.key).lstrip("-").replace("-", "_")
    for path, field in path_fields(dialect).items():
        if field.replace("-", "_") != key:
            continue
        try:
            domain = lookup(path).domain
        except (SchemaError, KeyError):
            continue
        if domain.kind == "int":
            return dataclasses.replace(problem, allowed=domain.describe())
    return problem


def _as_problem(exc: Any, record: Any) -> Any:
    """A dialect's single error as one problem of the input (its key, reason, value)."""
    return record(
        str(exc.key) if exc.key is not None else "<input>",
        exc.reason,
        value=exc.value,
        suggestions=tuple(exc.suggestions),
    )


def _inline_model(assumed: Assumptions, config: Mapping[str, Any]) -> None:
    """A request's model given as its config.json mapping, said first among the facts."""
    from ..report.schema import Assumption  # the entry the summary is built from

    name = config.get("_name_or_path") or config.get("model_type") or "config.json"
    label = f"{name} (the request's config.json)"
    assumed.items.insert(
        0, Assumption(name="model", value=str(name), source="the request's config.json")
    )
    assumed.summary = f"{label}, {assumed.summary}" if assumed.summary else label


def request_target(
    dialect: str, config: Mapping[str, Any], source: str, *, refused: tuple[Any, ...] = ()
) -> Any:
    """The target of a service request's config, read as the command line reads a file
    (`arbiter.sources`): an empty config is refused with the same sentence, the model is
    the same key, a dialect the content contradicts the same `mismatch`. The request names
    its dialect, so what else the content looks like is left to the dialect, which names
    every bad key. `refused`: the config's values the service's edge validator left out
    (`constraints.edge.EdgeError`s), named beside the dialect's problems as for a file."""
    from ..errors import SourceError  # the front door's refusal
    from ..sources import Target  # the front door's reading step
    from ..sources.detect import detect_text, mismatch_message
    from ..sources.targets import EMPTY, config_model

    found = detect_text(json.dumps(config), suffix=".json")
    if found.kind == "empty" and not refused:
        raise SourceError(EMPTY, file=source, detection=found)
    return Target(
        dialect,
        source,
        config=config,
        model=config_model(dialect, config),
        mismatch=mismatch_message(found, dialect),
        problems=refused,
    )


def for_request(report: VerdictReport) -> VerdictReport:
    """The report in a request's words: the assumptions name the request's fields
    (`model`, `gpus`, `device`) where the command line names its options."""
    assumed = report.assumptions
    assumed.summary = _FLAG.sub(r"\1", assumed.summary)
    for item in assumed.items:
        item.source = _FLAG.sub(r"\1", item.source)
    return report


__all__ = ["Checked", "check_target", "for_request", "request_target"]
