"""The verdict output as a contract: one pydantic model, its JSON Schema, and the builder.

`VerdictReport` is what `check` prints under `--format json` and what the service returns
for a check; `docs/schema/verdict.schema.json` is its JSON Schema (written by
`scripts/export_verdict_schema.py`, checked by `tests/arbiter/report/test_verdict_schema.py`).
Schema `arbiter.verdict`, version `SCHEMA_VERSION`: a field is only ever added in a new
minor version; renaming or removing one bumps the major.

- `verdict`: accept | adjust | reject | error (the input could not be judged: bad
  input, every problem an `input_errors` entry);
- `assumptions`: what the check was made against (dialect, profile, model, device, GPUs,
  each with where it came from) and the one-line `summary` of them;
- `engine_changes`: what the engine will change silently: the values it rewrites
  (`rewrites`) and those it derives for fields left open (`derives`);
- `conflicts` (claims, rules, text), `fixes` (text, the claims to drop, the changes as
  values), `warnings`, `input_errors` (`path`, `value`, `reason`, `suggestions`, `limit`,
  `allowed`, the same entry names as the service's error entries, plus `file` and
  `line`; `path` is the key as the file or the request's config writes it);
- `rules`: every rule id the report cites, with its text and source;
- `written`: the config as written back, and its format.

Version 1.1 (added, nothing renamed) carries the rest of what the text report shows and
what the service returned beside it: `error` and `message` (the stable code of an
`error` or a `reject`, as the service's error payloads name it, and the sentence), `profile` (the release line checked
against), `changes` (option changes from the defaults, each with what decided it),
`dropped` (soft claims given up, each with its reason), `overridden_defaults` (engine
default rules given way), `capacity` (the KV figures and their one-line text), and, for
a manifest or a contradicted `--dialect`, `workload` and `mismatch`.

One entry type per kind, reused by every command: `ConflictEntry`, `FixEntry`,
`WarningEntry` and `InputErrorEntry` are also what `arbiter solve --format json` prints
for a conflict (`conflict_report`), so a program reads a conflict the same way whichever
command found it.

`from_verdict(verdict, **context)` builds the report from a dialect's `Verdict`;
`from_error(exc, **context)` from bad input that raised before any verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_NAME = "arbiter.verdict"
SCHEMA_VERSION = "1.1"
VERDICTS = ("accept", "adjust", "reject", "error")
# what a dialect says it derives for a field left open: "vLLM would set X = ...",
# "SGLang derives X = ..."
_DERIVES = re.compile(
    r"^(?:vLLM|SGLang|TensorRT-LLM|MLC(?: LLM)?) (?:would set|derives) (?:(\S+) = )?"
)
_DIALECT_ERROR = re.compile(r"^(?P<file>[^\n,]+), key '(?P<key>[^']+)': (?P<reason>.+)$", re.S)
_GOT = re.compile(r" \(got (.+)\)$")
_SUGGEST = re.compile(r"; did you mean (.+)\?$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Assumption(_Model):
    """One fact the check was made against, and where it came from."""

    name: Literal["dialect", "profile", "model", "device", "gpus"]
    value: Any = Field(description="the fact (a name, a path, a count)")
    source: str = Field(description="where it came from: given, the config's key, assumed")


class Assumptions(_Model):
    summary: str = Field(description="one line: what the check was made against")
    items: list[Assumption] = Field(default_factory=list)


class EngineChange(_Model):
    """Something the engine changes without being asked."""

    kind: Literal["rewrites", "derives"] = Field(
        description="rewrites: a value the user wrote; derives: a field left open"
    )
    text: str
    path: str | None = Field(None, description="the key it changes, where known")


class ConflictEntry(_Model):
    claims: list[str] = Field(default_factory=list, description="the claims that collide")
    rules: list[str] = Field(default_factory=list, description="rule ids connecting them")
    setups: list[str] = Field(default_factory=list, description="setup facts in the background")
    text: str
    path: str | None = Field(None, description="the user's key at fault, where known")


class FixEntry(_Model):
    text: str
    drop: list[str] = Field(default_factory=list, description="claims to remove")
    changes: dict[str, Any] = Field(
        default_factory=dict, description="option values the fixed config takes"
    )
    verified: bool = Field(False, description="re-solved: the rest holds with it")


class WarningEntry(_Model):
    text: str
    path: str | None = None


class InputErrorEntry(_Model):
    """One problem of the input, with the same names the service's error entries use."""

    path: str | None = Field(None, description="the key or flag at fault, as the user wrote it")
    value: Any = None
    reason: str
    suggestions: list[str] = Field(default_factory=list)
    limit: str | None = Field(None, description="the input limit passed, where one was")
    allowed: str | None = Field(None, description="the domain the value must be in (1.1)")
    file: str | None = None
    line: int | None = Field(None, ge=1, description="1-based line of the key in the file")


class RuleEntry(_Model):
    id: str
    text: str = ""
    source: str = ""


class Written(_Model):
    format: Literal["yaml", "json"] = "yaml"
    config: dict[str, Any] | None = None


class OptionChange(_Model):
    """One option the solved configuration takes away from its default (1.1)."""

    path: str = Field(description="the option path (`build_config.max_batch_size`)")
    old: Any = Field(None, description="the default")
    new: Any = Field(None, description="the solved value")
    decided_by: str = Field("", description="what decided it: a claim, a rule, a fact")


class DroppedEntry(_Model):
    """A soft claim the solve gave up, and why (1.1)."""

    name: str
    reason: str


class CapacityEntry(_Model):
    """The KV capacity of the solved configuration (1.1)."""

    text: str = Field(description="the one line the text report prints")
    figures: dict[str, Any] = Field(
        default_factory=dict,
        description="KV blocks and tokens, bytes of each memory term, headroom, the limit",
    )


class VerdictReport(_Model):
    """A check's whole answer, for machines (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_name: Literal["arbiter.verdict"] = Field("arbiter.verdict", alias="schema")
    version: str = SCHEMA_VERSION
    verdict: Literal["accept", "adjust", "reject", "error"]
    error: str | None = Field(
        None,
        description="the stable code of an `error` or a `reject` (invalid_config, conflict,"
        " refused ...), as the service's error payloads and its error header name it",
    )
    message: str | None = Field(
        None, description="an `error` or a `reject` in one sentence, as the text shows it"
    )
    headline: str | None = Field(
        None, description="the verdict in one line, in the engine's words, as the text shows it"
    )
    dialect: str | None = None
    profile: str | None = Field(None, description="the release line checked against")
    source: str | None = Field(None, description="the file or '--serve-args' checked")
    workload: str | None = Field(None, description="the manifest's workload checked")
    mismatch: str | None = Field(None, description="a --dialect the content contradicts")
    assumptions: Assumptions = Field(default_factory=lambda: Assumptions(summary=""))
    engine_changes: list[EngineChange] = Field(default_factory=list)
    conflicts: list[ConflictEntry] = Field(default_factory=list)
    fixes: list[FixEntry] = Field(default_factory=list)
    warnings: list[WarningEntry] = Field(default_factory=list)
    input_errors: list[InputErrorEntry] = Field(default_factory=list)
    unknown_keys: list[str] = Field(default_factory=list)
    not_arbitrated: dict[str, str] = Field(default_factory=dict)
    rules: list[RuleEntry] = Field(default_factory=list)
    changes: list[OptionChange] = Field(default_factory=list)
    dropped: list[DroppedEntry] = Field(default_factory=list)
    overridden_defaults: list[str] = Field(default_factory=list)
    capacity: CapacityEntry | None = None
    written: Written | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of `VerdictReport` (what `docs/schema/verdict.schema.json` holds)."""
    schema = VerdictReport.model_json_schema(by_alias=True, mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:arbiter:schema:{SCHEMA_NAME}:{SCHEMA_VERSION}",
        **schema,
    }


# ------------------------------------------------------------------------- builders
def assumptions(
    *,
    dialect: tuple[str, str] | None = None,
    profile: tuple[str, str] | None = None,
    model: tuple[Any, str] | None = None,
    device: tuple[Any, str] | None = None,
    gpus: tuple[int, str] | None = None,
) -> Assumptions:
    """What a check assumed, each fact as (value, where it came from), with a summary line
    ("llama-3.1-8b (the config's `model`), 2x H100 (assumed from tensor-parallel-size 2),
    profile vllm-0.33 (given)")."""
    items = []
    for name, fact in (
        ("dialect", dialect),
        ("profile", profile),
        ("model", model),
        ("device", device),
        ("gpus", gpus),
    ):
        if fact is not None:
            items.append(Assumption(name=name, value=fact[0], source=fact[1]))  # type: ignore[arg-type]
    parts = []
    if model is not None:
        parts.append(f"{model[0]} ({model[1]})")
    if device is not None or gpus is not None:
        count = gpus[0] if gpus is not None else 1
        where = gpus[1] if gpus is not None else device[1] if device is not None else ""
        parts.append(f"{count}x {device[0] if device is not None else 'GPU'} ({where})")
    if profile is not None:
        parts.append(f"profile {profile[0]} ({profile[1]})")
    return Assumptions(summary=", ".join(parts), items=items)


def _engine_changes(
    changes: Iterable[str], warnings: Iterable[str], derivations: Iterable[str] = ()
) -> tuple[list[EngineChange], list[WarningEntry]]:
    """The engine's rewrites, what it derives, and the other warnings; a derivation the
    warnings do not already say is a `derives` change (the text report shows it too)."""
    out = [EngineChange(kind="rewrites", text=c, path=_leading_key(c)) for c in changes]
    rest: list[WarningEntry] = []
    warnings = list(warnings)
    for d in derivations:
        if d not in warnings:
            warnings.append(d)
    for w in warnings:
        derived = _DERIVES.match(w)
        if derived:
            out.append(EngineChange(kind="derives", text=w, path=derived.group(1)))
        else:
            rest.append(WarningEntry(text=w, path=_leading_key(w)))
    return out, rest


def _leading_key(text: str) -> str | None:
    """The key a sentence starts with (`max-num-seqs: 1024 -> 512 ...`), where it does."""
    head, colon, _ = text.partition(":")
    if colon and head and " " not in head.strip() and len(head) < 80:
        return head.strip().strip("`")
    head = text.split(" ", 1)[0].strip("`")
    return (
        head
        if re.fullmatch(r"[A-Za-z_][\w.\-\[\]]*", head)
        and ("." in head or "_" in head or "-" in head)
        else None
    )


def _problem(problem: Any, file: str | None, lines: Mapping[str, int] | None) -> InputErrorEntry:
    path = getattr(problem, "key", None) or getattr(problem, "path", None)
    entry = InputErrorEntry(
        path=path,
        value=_jsonable(getattr(problem, "value", None)),
        reason=str(getattr(problem, "reason", problem)),
        suggestions=[str(s) for s in getattr(problem, "suggestions", ()) or ()],
        limit=getattr(problem, "limit", None),
        allowed=_allowed(getattr(problem, "allowed", None)),
        file=file,
    )
    if lines and path:
        from ..sources.lines import line_of  # key lines only where a file's text was given

        entry.line = line_of(dict(lines), str(path).lstrip("-").replace("-", "_")) or line_of(
            dict(lines), str(path).lstrip("-")
        )
    return entry


def _allowed(domain: Any) -> str | None:
    """An error's allowed domain as one line (`1, 2, 4 or 8`, `object`)."""
    if domain is None or domain == "":
        return None
    if isinstance(domain, (list, tuple, set, frozenset)):
        return ", ".join(str(d) for d in domain)
    return str(domain)


def _literal(text: str) -> Any:
    """A value as a dialect printed it (`repr`), read back; the text itself otherwise."""
    import ast  # only a reason that quotes its value needs it

    try:
        return _jsonable(ast.literal_eval(text))
    except (ValueError, SyntaxError, RecursionError):
        return text


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def input_errors(
    exc: BaseException, *, file: str | None = None, lines: Mapping[str, int] | None = None
) -> list[InputErrorEntry]:
    """One entry per problem of a bad-input error (every problem of a dialect's error that
    names several; the error itself otherwise)."""
    where = getattr(exc, "file", None) or file
    if file and str(where).startswith("<"):  # a placeholder (`<vllm>`: no file): the caller's
        where = file
    problems = getattr(exc, "problems", None)
    if problems:
        return [_problem(p, where, lines) for p in problems]
    entry = InputErrorEntry(
        path=getattr(exc, "key", None) or getattr(exc, "path", None) or getattr(exc, "where", None),
        value=_jsonable(getattr(exc, "value", None)),
        reason=str(getattr(exc, "reason", None) or exc),
        suggestions=[str(s) for s in getattr(exc, "suggestions", ()) or ()],
        limit=getattr(exc, "limit", None),
        allowed=_allowed(getattr(exc, "allowed", None)),
        file=where,
    )
    if lines and entry.path:
        from ..sources.lines import line_of  # key lines only where a file's text was given

        entry.line = line_of(dict(lines), str(entry.path))
    return [entry]


def _reason_entries(
    reasons: Iterable[str],
    unknown: Iterable[str],
    file: str | None,
    lines: Mapping[str, int] | None,
) -> list[InputErrorEntry]:
    keys = sorted(unknown, key=len, reverse=True)
    out = []
    for text in reasons:
        said = _DIALECT_ERROR.match(text)  # a DialectError's "FILE, key 'K': reason"
        if said:
            text = f"{said.group('key')}: {said.group('reason')}"
            file = file or said.group("file")
        path = next((k for k in keys if text.startswith(f"{k}:")), None) or _leading_key(text)
        reason = text[len(path) + 1 :].strip() if path and text.startswith(f"{path}:") else text
        suggestions: list[str] = []
        value: Any = None
        match = _SUGGEST.search(reason)
        if match:
            suggestions = re.findall(r"'([^']+)'", match.group(1))
            reason = reason[: match.start()]
        got = _GOT.search(reason)
        if got:
            value, reason = _literal(got.group(1)), reason[: got.start()]
        out.append(
            _problem(
                InputErrorEntry(path=path, value=value, reason=reason, suggestions=suggestions),
                file,
                lines,
            )
        )
    return out


def _conflicts(verdict: Any) -> tuple[list[ConflictEntry], list[FixEntry], list[RuleEntry]]:
    exc = getattr(verdict, "conflict", None)
    if exc is None:
        entries = [ConflictEntry(rules=list(verdict.rules), text=r) for r in verdict.reasons]
        return entries, [], _rule_entries(verdict.rules)
    return conflict_entries(exc)


def conflict_entries(exc: Any) -> tuple[list[ConflictEntry], list[FixEntry], list[RuleEntry]]:
    """A `ConflictError`'s conflicts, fixes and cited rules as the schema's entries: what
    `check` and `solve` both print for a conflict."""
    rules: dict[str, RuleEntry] = {}
    data = exc.explanation.to_json() if exc.explanation is not None else {}
    explained = data.get("conflicts") or []
    entries = []
    for i, conflict in enumerate(exc.conflicts):
        entries.append(
            ConflictEntry(
                claims=list(conflict.claims),
                rules=list(conflict.rules),
                setups=list(conflict.setups),
                text=str(conflict),
            )
        )
        for rule in explained[i].get("rules", []) if i < len(explained) else []:
            rules[rule["id"]] = RuleEntry(
                id=rule["id"], text=rule.get("text", ""), source=str(rule.get("source", ""))
            )
    fixes = [
        FixEntry(
            text="drop " + " and ".join(f"`{c}`" for c in fix.get("drop", [])),
            drop=list(fix.get("drop", [])),
            changes={a["path"]: _jsonable(a["value"]) for a in fix.get("allows", [])},
            verified=bool(fix.get("verified", False)),
        )
        for fix in data.get("corrections", [])
    ]
    if not data:  # no explanation searched: the corrections the error carries
        fixes = [
            FixEntry(text="drop " + " and ".join(f"`{c}`" for c in fix), drop=list(fix))
            for fix in getattr(exc, "corrections", ()) or ()
        ]
    for text in getattr(exc, "fixes", ()) or ():  # a memory conflict's checked fixes
        fixes.append(FixEntry(text=f"fits with: {text}", verified=True))
    cited = [r for c in entries for r in c.rules if r not in rules]
    return entries, fixes, [*rules.values(), *_rule_entries(cited)]


def conflict_report(exc: Any, *, profile: str | None = None) -> dict[str, Any]:
    """What `arbiter solve --format json` prints for claims that conflict: the verdict
    report's conflict part (`verdict`, `profile`, `conflicts`, `fixes`, `rules`), the
    same entries `check` gives, validated by the same schema's `$defs`."""
    conflicts, fixes, rules = conflict_entries(exc)
    return VerdictReport(
        verdict="reject",
        error=_code(exc),
        message=str(exc),
        profile=profile,
        conflicts=conflicts,
        fixes=fixes,
        rules=rules,
    ).to_json()


def _rule_entries(ids: Iterable[str]) -> list[RuleEntry]:
    ids = list(dict.fromkeys(ids))
    if not ids:
        return []
    from constraints.rules import (  # the rule registry loads only when rules are cited
        UnknownRule,
        get_rule,
    )

    out = []
    for rule_id in ids:
        try:
            rule = get_rule(rule_id)
        except UnknownRule:
            out.append(RuleEntry(id=rule_id))
            continue
        out.append(RuleEntry(id=rule.id, text=rule.text, source=str(rule.source)))
    return out


def from_verdict(
    verdict: Any,
    *,
    dialect: str | None = None,
    source: str | None = None,
    assumed: Assumptions | None = None,
    error: BaseException | None = None,
    format: Literal["yaml", "json"] = "yaml",
    lines: Mapping[str, int] | None = None,
) -> VerdictReport:
    """The report of a dialect's `Verdict` (today's `arbiter.dialects._base.Verdict`).

    `dialect`, `source` (the file checked) and `assumed` (see `assumptions()`) say what
    was checked against what; `error` is the bad-input exception behind a reject, when the
    caller has it (its problems become one entry each, with their suggestions); `lines`
    (`arbiter.sources.key_lines(text)`) puts the line of each key on its entry."""
    words = _words(verdict)
    changes, warnings = _engine_changes(
        [words(c) for c in verdict.changes],
        [words(w) for w in verdict.warnings],
        [words(d) for d in getattr(verdict, "derivations", ())],
    )
    bad_input = verdict.verdict == "reject" and verdict.error is not None
    report = VerdictReport(
        verdict="error" if bad_input else verdict.verdict,
        error=_code(verdict.error) if bad_input else _reject_code(verdict),
        message=str(verdict.error) if bad_input else _reject_message(verdict),
        headline=None if bad_input else getattr(verdict, "headline", None),
        dialect=dialect,
        profile=getattr(verdict, "profile", None) or None,
        source=source,
        assumptions=assumed or Assumptions(summary=""),
        engine_changes=changes,
        warnings=warnings,
        unknown_keys=list(verdict.unknown_keys),
        not_arbitrated=dict(verdict.not_arbitrated),
        written=Written(format=format, config=verdict.config)
        if verdict.config is not None
        else None,
    )
    resolution = getattr(verdict, "resolution", None)
    if resolution is not None and verdict.verdict != "reject":
        _solved(report, resolution)
    if verdict.verdict != "reject":
        return report
    if error is None:  # the bad input behind the reject, as the verdict keeps it
        error = getattr(verdict, "error", None)
    if error is not None:
        report.input_errors = input_errors(error, file=source, lines=lines)
    elif verdict.conflict is not None or verdict.rules:
        report.conflicts, report.fixes, report.rules = _conflicts(verdict)
    else:
        report.input_errors = _reason_entries(verdict.reasons, verdict.unknown_keys, source, lines)
    return report


def _words(verdict: Any) -> Any:
    """The engine's words for the lines the text shows (internal paths named as the engine
    spells them), or the text as it is for a verdict of no engine dialect."""
    dialect = getattr(verdict, "dialect", None)
    if not dialect:
        return lambda text: text
    from ..dialects.words import Words  # the packs' maps load with a report

    words = Words.of(dialect, None)
    return words.text


def _solved(report: VerdictReport, resolution: Any) -> None:
    """What the solve behind an accept or an adjust adds: the option changes with what
    decided each, the dropped soft claims with their reasons, the default rules given
    way, the KV capacity."""
    report.changes = [
        OptionChange(
            path=c.path,
            old=_jsonable(c.old),
            new=_jsonable(c.new),
            decided_by=str(resolution.provenance(c.path)),
        )
        for c in resolution.changes
    ]
    report.dropped = [DroppedEntry(name=d.name, reason=str(d.reason)) for d in resolution.dropped]
    report.overridden_defaults = list(resolution.overridden_defaults)
    capacity = resolution.capacity
    report.capacity = CapacityEntry(text=str(capacity), figures=_jsonable(capacity.to_json()))


def _reject_message(verdict: Any) -> str | None:
    """A reject in one sentence: the conflict's, else the engine's refusal's."""
    if verdict.verdict != "reject":
        return None
    if verdict.conflict is not None and getattr(verdict, "engine_conflicts", None):
        from .verdict_text import reject_text  # the engine's words, as the text shows them

        return "\n".join(reject_text(verdict))
    if verdict.conflict is not None:
        return str(verdict.conflict)
    from ..errors import EngineRefusal  # the refusal's own words

    return str(EngineRefusal(verdict.reasons, verdict.rules))


def _reject_code(verdict: Any) -> str | None:
    """A reject's code: the conflict's, else the engine's refusal's."""
    if verdict.verdict != "reject":
        return None
    if verdict.conflict is not None:
        return _code(verdict.conflict)
    from ..errors import EngineRefusal  # the refusal's own code

    return EngineRefusal.code


def _code(exc: BaseException | None) -> str:
    """The stable code of a bad-input error (`invalid_config`, ...), as the service's
    error payloads name it."""
    code = getattr(type(exc), "code", None)
    return code if isinstance(code, str) else "invalid_input"


def from_error(
    exc: BaseException,
    *,
    dialect: str | None = None,
    source: str | None = None,
    assumed: Assumptions | None = None,
    lines: Mapping[str, int] | None = None,
) -> VerdictReport:
    """The report of bad input that raised before any verdict (verdict `error`)."""
    return VerdictReport(
        verdict="error",
        error=_code(exc),
        message=str(exc),
        dialect=dialect,
        source=source,
        assumptions=assumed or Assumptions(summary=""),
        input_errors=input_errors(exc, file=source, lines=lines),
    )
