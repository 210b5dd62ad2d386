"""Claims: named, sourced requirements with a strength (func, perf or setup).

`func(name, requires)` must hold; `perf(name, requires, weight=..., priority=...,
alternatives=..., fallback=...)` should hold; `setup(name, fixes)` states a fact of the
environment. A requirement is `{path: value}` (equality), `{path: predicate}` with the
predicates `ge`, `le`, `ne`, `one_of` (also written `{"ge": 4096}` in JSON), or an
expression from `constraints.expr`. Claims are pydantic models and round-trip through
JSON and YAML; a malformed claim raises `InvalidClaim` naming the claim, path and domain.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sized
from itertools import islice
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, TypeAdapter, model_validator

from constraints.edge import (
    MAX_INPUT_BYTES,
    MAX_PRIORITY,
    MAX_WEIGHT,
    EdgeError,
    LimitExceeded,
    check_count,
    check_value,
    parse_json,
    parse_yaml,
    read_text,
    show,
)
from constraints.errors import DomainError, ExpressionError, SchemaError, UnknownPath
from constraints.expr import EXPR_KEYS, Eq, Expr, Pred, all_of, from_json, pred_from_json
from constraints.limits import MAX_CLAIMS
from constraints.schema import lookup

from .errors import InvalidClaim


def requirement_to_expr(requires: Any, claim: str | None = None) -> Expr:
    """Turn a requirement (mapping or expression, Python or JSON form) into an Expr."""
    try:
        if isinstance(requires, Expr):
            return requires
        if isinstance(requires, Mapping):
            if len(requires) == 1 and next(iter(requires)) in EXPR_KEYS:
                return from_json(requires)
            if not requires:
                raise InvalidClaim("the requirement names no option", claim=claim)
            parts: list[Expr] = []
            for path, wanted in requires.items():
                if not isinstance(path, str):
                    raise InvalidClaim(
                        "requirement keys must be option paths", claim=claim, value=path
                    )
                parts.append(_bind(path, wanted, claim))
            return all_of(*parts)
    except UnknownPath as exc:
        raise _unknown_path(exc, requires, claim) from None
    except EdgeError as exc:
        raise _edge_claim_error(exc, claim) from None
    except DomainError as exc:
        raise InvalidClaim(
            f"value {show(exc.value)} is outside the domain"
            + (f" ({exc.reason})" if exc.reason else ""),
            claim=claim,
            path=exc.path,
            value=exc.value,
            allowed=exc.domain,
        ) from None
    except (ExpressionError, SchemaError) as exc:
        raise InvalidClaim(str(exc), claim=claim) from None
    raise InvalidClaim(
        f"a requirement is a mapping {{path: value}} or an expression, got {type(requires).__name__}",
        claim=claim,
        value=requires,
    )


def _unknown_path(exc: UnknownPath, requires: Any, claim: str | None) -> InvalidClaim:
    """ "unknown option path", with what the user most likely meant: the dotted paths of a
    section written as a nested mapping, or the option an engine flag (`max-num-seqs`)
    sets, else the close matches."""
    path, suggestions = exc.path, exc.suggestions
    nested = requires.get(path) if isinstance(requires, Mapping) else None
    if isinstance(nested, Mapping) and nested and pred_from_json(nested) is None:
        dotted = tuple(f"{path}.{key}" for key in nested)
        return InvalidClaim(
            "a section written as a nested mapping; claims name options by dotted paths",
            claim=claim,
            path=path,
            suggestions=dotted,
        )
    return InvalidClaim("unknown option path", claim=claim, path=path, suggestions=suggestions)


def _edge_claim_error(exc: EdgeError, claim: str | None) -> InvalidClaim:
    """An edge refusal restated for a claim: the limit, and for a count over a limit the
    place (`where`), the count and the allowed domain."""
    over = isinstance(exc, LimitExceeded)
    return InvalidClaim(
        exc.reason if over else str(exc),
        claim=claim,
        path=(exc.where or None) if over else None,
        value=exc.value,
        allowed=exc.allowed if isinstance(exc, LimitExceeded) else None,
        limit=exc.limit or None,
    )


def within_limit(count: int, name: str, what: str, claim: str | None, where: str = "") -> None:
    """Refuse `count` over the limit `name` (constraints.limits) as an InvalidClaim."""
    try:
        check_count(count, name, what, where)
    except LimitExceeded as exc:
        raise _edge_claim_error(exc, claim) from None


def claim_list(claims: Iterable[Any]) -> list[Any]:
    """`claims` as a list, refused over `MAX_CLAIMS` before any claim is validated."""
    if isinstance(claims, (str, bytes, Mapping)) or not isinstance(claims, Iterable):
        raise InvalidClaim(
            f"claims must be a list of claims, got {type(claims).__name__}", value=show(claims)
        )
    items = list(islice(claims, MAX_CLAIMS + 1))
    count = len(claims) if isinstance(claims, Sized) else len(items)
    within_limit(count, "MAX_CLAIMS", "the claim list", None)
    return items


def _bind(path: str, wanted: Any, claim: str | None) -> Expr:
    lookup(path)
    if isinstance(wanted, Pred):
        return wanted.bind(path)
    if isinstance(wanted, Expr):
        raise InvalidClaim(
            "a mapping value must be a value or a predicate; put expressions at the top level",
            claim=claim,
            path=path,
        )
    pred = pred_from_json(wanted)
    if pred is not None:
        return pred.bind(path)
    if isinstance(wanted, Mapping):
        raise InvalidClaim(
            "unknown predicate; use one of eq, ne, ge, le, gt, lt, one_of",
            claim=claim,
            path=path,
            value=dict(wanted),
        )
    return Eq(path, wanted)


def _check_weight(weight: int, claim: Any, what: str) -> None:
    if weight < 1:
        raise InvalidClaim(f"{what} must be >= 1", claim=claim, value=weight)
    if weight > MAX_WEIGHT:
        raise InvalidClaim(
            f"{what} must be at most MAX_WEIGHT = 2^40 = {MAX_WEIGHT}, so that a weighted sum "
            "over many claims stays within the solver's int64",
            claim=claim,
            value=weight,
        )


class _ClaimBase(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    name: str
    source: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _check_name(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            name = data.get("name")
            if not isinstance(name, str) or not name.strip():
                raise InvalidClaim("every claim needs a non-empty string name", value=name)
            within_limit(len(name), "MAX_NAME_CHARS", "the name", show(name))
        return data


class Alternative(BaseModel):
    """One step of a perf claim's fallback chain: a weaker requirement worth less."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    requires: Any
    weight: int
    expr: Expr = Field(default=None, exclude=True, repr=False)  # type: ignore[assignment]


class FuncClaim(_ClaimBase):
    """A functional claim: must hold, or arbitration fails with a conflict."""

    kind: Literal["func"] = "func"
    requires: Any
    expr: Expr = Field(default=None, exclude=True, repr=False)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _compile(self) -> FuncClaim:
        object.__setattr__(self, "expr", requirement_to_expr(self.requires, self.name))
        return self


class PerfClaim(_ClaimBase):
    """A performance claim: kept when the most valuable feasible set includes it."""

    kind: Literal["perf"] = "perf"
    requires: Any
    weight: int = 1
    priority: int = 0
    alternatives: tuple[Alternative, ...] = ()
    fallback: Callable[..., Any] | None = Field(default=None, exclude=True)
    expr: Expr = Field(default=None, exclude=True, repr=False)  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        name = data.get("name")
        for key in ("weight", "priority"):
            value = data.get(key, 1 if key == "weight" else 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidClaim(f"{key} must be an int", claim=name, value=value)
        _check_weight(data.get("weight", 1), name, "weight")
        priority = data.get("priority", 0)
        if not -MAX_PRIORITY <= priority <= MAX_PRIORITY:
            raise InvalidClaim(
                f"priority must be within +/-{MAX_PRIORITY} (MAX_PRIORITY)",
                claim=name,
                value=priority,
            )
        given = data.get("alternatives") or ()
        if not isinstance(given, (list, tuple)):
            raise InvalidClaim(
                "alternatives must be a list of {requires, weight}", claim=name, value=show(given)
            )
        within_limit(len(given), "MAX_ALTERNATIVES", "the claim", name)
        alts = []
        for i, alt in enumerate(given):
            if isinstance(alt, Alternative):
                alts.append(alt)
                continue
            if isinstance(alt, Mapping):
                requires, weight = alt.get("requires"), alt.get("weight")
            elif isinstance(alt, (tuple, list)) and len(alt) == 2:
                requires, weight = alt
            else:
                raise InvalidClaim(
                    f"alternative {i} must be (requires, weight) or {{requires, weight}}",
                    claim=name,
                    value=alt,
                )
            if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
                raise InvalidClaim(
                    f"alternative {i} needs an int weight >= 1", claim=name, value=weight
                )
            _check_weight(weight, name, f"alternative {i}'s weight")
            alts.append(Alternative(requires=requires, weight=weight))
        data["alternatives"] = tuple(alts)
        fallback = data.get("fallback")
        if fallback is not None and not callable(fallback):
            raise InvalidClaim("fallback must be callable", claim=name, value=fallback)
        return data

    @model_validator(mode="after")
    def _compile(self) -> PerfClaim:
        object.__setattr__(self, "expr", requirement_to_expr(self.requires, self.name))
        for i, alt in enumerate(self.alternatives):
            if alt.weight >= self.weight:
                raise InvalidClaim(
                    f"alternative {i} has weight {alt.weight}, which must be less than the claim's weight {self.weight}",
                    claim=self.name,
                    value=alt.weight,
                )
            object.__setattr__(alt, "expr", requirement_to_expr(alt.requires, f"{self.name}[{i}]"))
        return self

    def options(self) -> list[tuple[Expr, int]]:
        """The main requirement and each alternative, with their weights, in order."""
        return [(self.expr, self.weight)] + [(a.expr, a.weight) for a in self.alternatives]


class SetupClaim(_ClaimBase):
    """A fact of the environment: fixes option or fact values. Never blamed, never a fix."""

    kind: Literal["setup"] = "setup"
    fixes: dict[str, Any]
    # the conjunction of the fixes' equalities, built once (every solve and explanation
    # reads it)
    expr: Expr = Field(default=None, exclude=True, repr=False)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _check(self) -> SetupClaim:
        if not self.fixes:
            raise InvalidClaim("a setup claim must fix at least one option", claim=self.name)
        normalised = {}
        for path, value in self.fixes.items():
            if isinstance(value, (Mapping, Pred, Expr)):
                raise InvalidClaim(
                    "setup claims fix exact values, not predicates", claim=self.name, path=path
                )
            expr = requirement_to_expr({path: value}, self.name)
            normalised[path] = expr.value  # type: ignore[attr-defined]
        object.__setattr__(self, "fixes", normalised)
        object.__setattr__(self, "expr", all_of(*(Eq(p, v) for p, v in normalised.items())))
        return self


Claim = Annotated[FuncClaim | PerfClaim | SetupClaim, Discriminator("kind")]
_CLAIM_ADAPTER: TypeAdapter[Any] = TypeAdapter(Claim)
KINDS = ("func", "perf", "setup")
# the keys a claim of each kind takes (its model's fields; extra keys are refused)
_KIND_KEYS: dict[str, frozenset[str]] = {
    cls.model_fields["kind"].default: frozenset(cls.model_fields)
    for cls in (FuncClaim, PerfClaim, SetupClaim)
}


def func(name: str, requires: Any, *, source: str | None = None) -> FuncClaim:
    """A functional claim: `requires` must hold."""
    return FuncClaim(name=name, requires=requires, source=source)


def perf(
    name: str,
    requires: Any,
    *,
    weight: int = 1,
    priority: int = 0,
    alternatives: Iterable[Any] = (),
    fallback: Callable[..., Any] | None = None,
    source: str | None = None,
) -> PerfClaim:
    """A performance claim worth `weight` in tier `priority`; `alternatives` is an ordered
    list of `(requires, weight)` pairs, each worth less; `fallback(reason)` runs once if the
    claim is dropped."""
    return PerfClaim(
        name=name,
        requires=requires,
        weight=weight,
        priority=priority,
        alternatives=tuple(alternatives),
        fallback=fallback,
        source=source,
    )


def setup(name: str, fixes: Mapping[str, Any], *, source: str | None = None) -> SetupClaim:
    """A setup fact: fixes exact values (device, model, read-only prebuilt engine)."""
    return SetupClaim(name=name, fixes=dict(fixes), source=source)


AnyClaim = FuncClaim | PerfClaim | SetupClaim


def claim_from_dict(data: Any, index: int | None = None) -> AnyClaim:
    """One claim from its JSON form; errors name the claim (or its index)."""
    if not isinstance(data, Mapping):
        raise InvalidClaim(f"claim {index} must be an object", value=show(data))
    label = None if index is None else f"#{index}"
    try:
        check_value(data, "claim" if index is None else f"claims[{index}]", json_only=False)
    except EdgeError as exc:
        raise _edge_claim_error(exc, _safe_name(data.get("name"), label)) from None
    kind = data.get("kind")
    if kind not in KINDS:
        close = difflib.get_close_matches(str(kind), KINDS, n=1, cutoff=0.5)
        raise InvalidClaim(
            "kind must be func, perf or setup",
            claim=_safe_name(data.get("name"), label),
            value=kind,
            suggestions=close,
        )
    unknown = [k for k in data if k not in _KIND_KEYS[kind]]
    if unknown:
        key = str(unknown[0])
        raise InvalidClaim(
            f"unknown key {key!r} of a {kind} claim (keys: {', '.join(_shown_keys(kind))})",
            claim=_safe_name(data.get("name"), label),
            suggestions=difflib.get_close_matches(key, sorted(_KIND_KEYS[kind]), n=1, cutoff=0.6),
        )
    try:
        return _CLAIM_ADAPTER.validate_python(dict(data))
    except InvalidClaim:
        raise
    except Exception as exc:  # pydantic's ValidationError: re-state it in our words
        errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
        first = errors[0] if errors else {"loc": (), "msg": str(exc)}
        loc = ".".join(str(p) for p in first.get("loc", ()) if p != kind)
        raise InvalidClaim(
            f"{loc or 'claim'}: {first.get('msg')}", claim=_safe_name(data.get("name"), label)
        ) from None


def claims_from_list(items: Iterable[Any]) -> list[Any]:
    """Every claim of `items` read (dicts as JSON claims, claim objects as they are), the
    count first refused over `MAX_CLAIMS`. A bad claim does not stop the reading: the
    InvalidClaim raised is the first one found, with every one in `problems`, so that a
    request with several bad claims is answered with an entry for each."""
    out: list[Any] = []
    problems: list[InvalidClaim] = []
    for i, item in enumerate(claim_list(items)):
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        try:
            out.append(claim_from_dict(item, i))
        except InvalidClaim as exc:
            exc.index = i
            problems.append(exc)
    if problems:
        first = problems[0]
        first.problems = tuple(problems)
        raise first
    return out


def _shown_keys(kind: str) -> list[str]:
    return sorted(_KIND_KEYS[kind] - {"expr", "fallback"})


def _safe_name(name: Any, fallback: str | None) -> str | None:
    """A claim's name for an error message, if it is a valid string."""
    if isinstance(name, str):
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    return fallback


def load_claims(source: str | Path | Iterable[Any]) -> list[AnyClaim]:
    """Claims from a YAML/JSON file path, a YAML/JSON string, or a list of dicts.

    A document may be a list of claims or an object with a `claims` list."""
    data: Any = source
    if isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and Path(source).suffix in (".yaml", ".yml", ".json")
    ):
        path = Path(source)
        try:
            text = read_text(path, MAX_INPUT_BYTES)
        except OSError as exc:
            raise InvalidClaim(f"cannot read {path}: {exc.strerror}") from None
        except EdgeError as exc:
            raise InvalidClaim(str(exc)) from None
        refused: list[EdgeError] = []  # values past the edge limits, named with the rest
        data = _parse(text, str(path), refused)
        where: str | None = str(path)
    elif isinstance(source, str):
        text, where, refused = source, "<string>", []
        data = _parse(source, where, refused)
    else:
        text, where, refused = None, None, []
    if isinstance(data, Mapping):
        data = data.get("claims")
    if not isinstance(data, list):
        if refused:
            raise _edge_claim_error(refused[0], None)
        raise InvalidClaim("expected a list of claims or an object with a 'claims' list")
    lines = _claim_lines(text) if text is not None else []
    claims = []
    problems = [_refused_value(e, data) for e in refused]
    spoilt = {p.index for p in problems}  # claims whose refused values were left out
    for i, item in enumerate(data):  # every bad claim is named, not only the first
        try:
            claims.append(claim_from_dict(item, i))
        except InvalidClaim as exc:
            exc.index = i
            if i not in spoilt:
                problems.append(exc)
    for problem in problems:
        problem.file = where
        at = problem.index
        if at is not None and at < len(lines):
            start, keys = lines[at]
            problem.line = keys.get(problem.path, start) if problem.path else start
    if problems:
        problems.sort(key=lambda p: (p.index if p.index is not None else -1, p.line or 0))
        first = problems[0]
        first.problems = tuple(problems)
        raise first
    return claims


_CLAIM_AT = re.compile(r"^(?:claims)?\[(\d+)\](?:\.(requires|fixes)\.)?(.*)$")


def _refused_value(exc: EdgeError, data: list[Any]) -> InvalidClaim:
    """A value the edge validator refused, as the problem of the claim holding it (its
    index, name and option path where the value sits under `requires` or `fixes`)."""
    found = _CLAIM_AT.match(exc.where)
    index = int(found.group(1)) if found else None
    item = data[index] if index is not None and index < len(data) else None
    name = item.get("name") if isinstance(item, Mapping) else None
    path = found.group(3).lstrip(".") if found else None
    problem = InvalidClaim(
        exc.reason,
        claim=name if isinstance(name, str) else None,
        path=path or exc.where or None,
        value=exc.value,
        allowed=exc.allowed,
        limit=exc.limit or None,
    )
    problem.index = index
    return problem


def _claim_lines(text: str) -> list[tuple[int, dict[str, int]]]:
    """For each claim of a YAML/JSON document: its 1-based start line and the line of each
    option path under `requires`/`fixes`, so errors can point at the culprit."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return []
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if getattr(k, "value", None) == "claims"), None)
    if not isinstance(root, yaml.SequenceNode):
        return []
    out = []
    for node in root.value:
        keys: dict[str, int] = {}
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) in ("requires", "fixes") and isinstance(
                    value, yaml.MappingNode
                ):
                    for path, _ in value.value:
                        keys[str(path.value)] = path.start_mark.line + 1
        out.append((node.start_mark.line + 1, keys))
    return out


def _parse(text: str, where: str, refused: list[EdgeError] | None = None) -> Any:
    """JSON, else YAML, through the edge validator (limits, finite numbers, Unicode).
    With `refused`, the values the validator refuses are appended there (located from the
    document's root) and left out of the document, instead of raised."""
    if len(text) > MAX_INPUT_BYTES:
        raise InvalidClaim(
            f"{where}: {len(text)} characters, over the limit MAX_INPUT_BYTES = {MAX_INPUT_BYTES}"
        )
    at = "" if refused is not None else where
    try:
        return parse_json(text, at, problems=refused)
    except EdgeError as exc:
        raise _edge_claim_error(exc, None) from None
    except ValueError:
        pass
    try:
        return parse_yaml(text, at, problems=refused)
    except EdgeError as exc:
        raise _edge_claim_error(exc, None) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InvalidClaim(f"{where} is neither JSON nor YAML{at}") from None


def claim_to_dict(claim: AnyClaim) -> dict[str, Any]:
    """The JSON form of a claim (fallback callables are not serialised)."""
    out: dict[str, Any] = {"kind": claim.kind, "name": claim.name}
    if isinstance(claim, SetupClaim):
        out["fixes"] = dict(claim.fixes)
    else:
        out["requires"] = _requirement_json(claim.requires)
    if isinstance(claim, PerfClaim):
        out["weight"] = claim.weight
        out["priority"] = claim.priority
        if claim.alternatives:
            out["alternatives"] = [
                {"requires": _requirement_json(a.requires), "weight": a.weight}
                for a in claim.alternatives
            ]
    if claim.source is not None:
        out["source"] = claim.source
    return out


def _requirement_json(requires: Any) -> Any:
    if isinstance(requires, Expr):
        return requires.to_json()
    if isinstance(requires, Mapping):
        return {path: (v.to_json() if isinstance(v, Pred) else v) for path, v in requires.items()}
    return requires
