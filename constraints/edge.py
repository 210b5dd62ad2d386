"""Edge values at the boundary: the one validator every input passes before any solving.

The API (`load_claims`, `claim_from_dict`), the CLI and the HTTP service all read
documents through `parse_json`, `parse_yaml` or `load_text` and check decoded values with
`check_value`, so they accept and refuse the same inputs. The limits, each named in the
error that enforces it:

- `MAX_DEPTH` levels of nesting in a JSON or YAML document, `MAX_EXPR_DEPTH` in an
  expression;
- `MAX_NODES` values in one document once YAML aliases are expanded, and
  `MAX_YAML_ALIASES` aliases in one YAML document (a "billion laughs" is refused, not
  expanded);
- numbers finite (no NaN or Infinity, no 1e400), integers within `INT_LIMIT`;
- strings valid Unicode (no lone surrogates), at most `MAX_STRING_CHARS` characters (a
  key `MAX_KEY_CHARS`), and no value types that JSON lacks;
- `MAX_INPUT_BYTES` bytes in a file, refused before parsing; text must be UTF-8.

`INT_LIMIT` is 2^62 - 1: CP-SAT works in int64, refuses a variable whose domain leaves
[-kint64max / 2, kint64max / 2] = +/-(2^62 - 1) (the variable a product becomes) and a
linear expression whose largest possible magnitude (the sum of |coefficient| x |bound|
over its terms, plus the constant) can overflow int64. Expressions keep every such
magnitude within INT_LIMIT (`constraints.expr` computes it from the option domains),
which leaves half of int64 as margin for what the compiler adds around them.

Every limit is defined once, in `constraints.limits`; `check_count` refuses a collection
over one of them (`LimitExceeded`, naming the limit, the place, the count and the bound).
"""

from __future__ import annotations

import json
import math
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml

from .errors import SchemaError
from .limits import BY_NAME as LIMIT_TABLE
from .limits import (  # noqa: F401 - the limits are also read from here
    INT_LIMIT,
    MAX_DEPTH,
    MAX_EXPR_DEPTH,
    MAX_INPUT_BYTES,
    MAX_KEY_CHARS,
    MAX_NODES,
    MAX_PRIORITY,
    MAX_STRING_CHARS,
    MAX_WEIGHT,
    MAX_YAML_ALIASES,
)

_SCALARS = (str, int, float, bool, type(None))


class EdgeError(SchemaError, ValueError):
    """An input value outside what any option or document may hold.

    `where` locates it in the document (`claims[0].requires.x`), `value` is a safe short
    rendering of it, `limit` names the limit that refused it (e.g. "MAX_DEPTH = 64")."""

    http_status: ClassVar[int] = 422
    code: ClassVar[str] = "invalid_value"
    allowed: str | None = None  # the domain the value must be in, where one is known

    def __init__(self, reason: str, *, where: str = "", value: Any = None, limit: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.where = where if len(where) <= 120 else where[:57] + "..." + where[-60:]
        self.value = value
        self.limit = limit
        self.problems: tuple[EdgeError, ...] = ()  # every problem of the document, when found

    def __str__(self) -> str:
        text = f"{self.where}: {self.reason}" if self.where else self.reason
        if self.limit:
            text += f" (limit {self.limit})"
        return text


class LimitExceeded(EdgeError):
    """A collection or string over one of the limits of `constraints.limits`: `limit` is
    its label (`MAX_SET_VALUES = 1024`), `name` the constant, `count` what was given and
    `allowed` the domain (`at most 1024 values`). A body over its byte limit is 413."""

    def __init__(self, what: str, *, name: str, bound: int, count: int, unit: str, where: str):
        self.name = name
        self.count = count
        self.bound = bound
        self.allowed = f"at most {bound} {unit}"
        super().__init__(
            f"{what} has {count} {unit}, over the limit of {bound}",
            where=where,
            value=count,
            limit=f"{name} = {bound}",
        )


def check_count(count: int, name: str, what: str, where: str = "") -> None:
    """Refuse `count` items of `what` when over the limit named `name` (LimitExceeded)."""
    limit = LIMIT_TABLE[name]
    if count > limit.value:
        raise LimitExceeded(
            what, name=name, bound=limit.value, count=count, unit=limit.unit, where=where
        )


def show(value: Any, width: int = 60) -> str:
    """A short, always-encodable rendering of any value for messages and payloads."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= width else text[: width - 3] + "..."


def check_int(value: int, where: str = "", limit: int = INT_LIMIT, name: str = "INT_LIMIT") -> int:
    if not -limit <= value <= limit:
        exc = EdgeError(
            f"integer {show(value, 30)} is out of range",
            where=where,
            value=show(value, 30),
            limit=f"{name} = {limit}",
        )
        exc.allowed = f"an integer from -{limit} to {limit}"
        raise exc
    return value


def check_float(value: float, where: str = "") -> float:
    if not math.isfinite(value):
        raise EdgeError(
            f"number {value!r} is not finite; NaN and Infinity are never valid",
            where=where,
            value=repr(value),
        )
    return value


def check_text(value: str, where: str = "", *, key: bool = False) -> str:
    if key:
        check_count(len(value), "MAX_KEY_CHARS", "a key", where)
    else:
        check_count(len(value), "MAX_STRING_CHARS", "a string", where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise EdgeError(
            "string is not valid Unicode (it holds a lone surrogate)",
            where=where,
            value=show(value),
        ) from None
    return value


def _plainly_valid(data: Any) -> bool:
    """True when `data` is made of plain JSON values (exact dict, list, str, int, float,
    bool, None; string keys) that pass every check of `check_value`. It builds no
    locations, so the common case costs a fraction of the exact walk; False means "let the
    exact walk decide" (it names the culprit, or accepts what only it knows to accept)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            return False
        kind = type(value)
        if kind is str:
            if len(value) > MAX_STRING_CHARS:
                return False
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif kind is bool or value is None:
            continue
        elif kind is int:
            if not -INT_LIMIT <= value <= INT_LIMIT:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is dict:
            for key, item in value.items():
                if type(key) is not str or len(key) > MAX_KEY_CHARS:
                    return False
                if not key.isascii():
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError:
                        return False
                stack.append((item, depth + 1))
        elif kind is list:
            stack.extend([(item, depth + 1) for item in value])
        else:
            return False
    return True


def check_value(data: Any, where: str = "", *, json_only: bool = True) -> Any:
    """Check a decoded document: depth, node count, finite numbers, bounded integers,
    valid strings, JSON types only. Returns `data` unchanged; raises EdgeError.

    Every value problem of the document is found, not only the first: the error raised is
    the first, and its `problems` holds them all (one EdgeError each, with its `where`).
    A document too deep or too big stops the walk at once.

    With `json_only=False` (claims built in Python) other objects, such as expressions
    and callables, pass here: their own constructors check them."""
    if _plainly_valid(data):  # the common case, without building a location per value
        return data
    problems = value_problems(data, where, json_only=json_only)
    if problems:
        first = problems[0]
        first.problems = tuple(problems)
        raise first
    return data


def value_problems(data: Any, where: str = "", *, json_only: bool = True) -> list[EdgeError]:
    """Every value of `data` outside what an input may hold (an integer past INT_LIMIT, a
    non-finite number, a string too long or not Unicode, a key that is no string, a type
    JSON lacks), in document order. Raises EdgeError at once for a document nested past
    MAX_DEPTH or holding more than MAX_NODES values (its walk stops there)."""
    found: list[EdgeError] = []
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    nodes = 0
    while stack:
        value, at, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise EdgeError(
                "the document holds too many values", where=where, limit=f"MAX_NODES = {MAX_NODES}"
            )
        if depth > MAX_DEPTH:
            raise EdgeError(
                "the document is nested too deeply", where=at, limit=f"MAX_DEPTH = {MAX_DEPTH}"
            )
        try:
            _check_one(value, at, json_only)
        except EdgeError as exc:
            found.append(exc)
            continue
        children: list[tuple[Any, str, int]] = []
        if isinstance(value, Mapping):
            for key, item in value.items():
                try:
                    _check_key(key, at)
                except EdgeError as exc:
                    found.append(exc)
                    continue
                name = key if isinstance(key, str) else show(key)
                children.append((item, f"{at}.{name}" if at else str(name), depth + 1))
        elif isinstance(value, (list, tuple)):
            children = [(item, f"{at}[{i}]", depth + 1) for i, item in enumerate(value)]
        stack.extend(reversed(children))  # popped in document order
    return found


def _check_one(value: Any, at: str, json_only: bool) -> None:
    """Refuse one scalar (containers pass; their items are checked one by one)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        check_int(value, at)
    elif isinstance(value, _Unfit):
        raise _unfit_error(value, at)
    elif isinstance(value, float):
        check_float(value, at)
    elif isinstance(value, str):
        check_text(value, at)
    elif isinstance(value, (Mapping, list, tuple)):
        return
    elif json_only:
        raise EdgeError(
            f"a {type(value).__name__} value is not allowed here; use JSON types",
            where=at,
            value=show(value),
        )


def _check_key(key: Any, at: str) -> None:
    if not isinstance(key, _SCALARS):
        raise EdgeError(
            f"a key must be a string, got {type(key).__name__}", where=at, value=show(key)
        )
    if isinstance(key, str):
        check_text(key, at, key=True)
    elif isinstance(key, float):
        check_float(key, at)


def without_problems(data: Any, problems: list[EdgeError], where: str = "") -> Any:
    """A copy of `data` with the value of each problem's `where` left out (a mapping
    entry dropped, a list item dropped), so that the rest of a document can be read and
    its own problems named beside these."""
    bad = {p.where for p in problems}

    def keep(value: Any, at: str) -> Any:
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                name = key if isinstance(key, str) else show(key)
                inner = f"{at}.{name}" if at else str(name)
                if inner not in bad:
                    out[key] = keep(item, inner)
            return out
        if isinstance(value, list):
            return [keep(v, f"{at}[{i}]") for i, v in enumerate(value) if f"{at}[{i}]" not in bad]
        return value

    return keep(data, where)


# ------------------------------------------------------------------ parsing
class _Unfit(float):
    """A JSON number no 64-bit float holds finitely (`1e400`, `NaN`), kept as written until
    `value_problems` names it at its path (the parser's hooks know no path)."""

    text: str = ""


def _no_constant(name: str) -> Any:
    unfit = _Unfit(name)
    unfit.text = name
    return unfit


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        unfit = _Unfit(value)
        unfit.text = text
        return unfit
    return value


def _unfit_error(value: _Unfit, where: str) -> EdgeError:
    if value.text in ("NaN", "Infinity", "-Infinity"):
        reason = f"number {value.text} is not finite; NaN and Infinity are never valid"
    else:
        reason = f"number {show(value.text, 30)} overflows a 64-bit float"
    return EdgeError(reason, where=where, value=show(value.text, 30))


def parse_json(
    text: str | bytes, where: str = "", *, problems: list[EdgeError] | None = None
) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, finite floats, then `check_value`.
    Raises EdgeError (values) or ValueError (syntax, as json.JSONDecodeError).

    With a `problems` list, the values `check_value` refuses are appended to it instead
    and the document is returned without them (`without_problems`), so a reader can name
    its own problems beside them; what stops parsing still raises."""
    if isinstance(text, bytes):
        text = decode_utf8(text, where)
    duplicates: list[EdgeError] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(duplicate_key(key))
            out[key] = value
        return out

    try:
        data = json.loads(
            text, parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=pairs
        )
    except RecursionError:
        raise EdgeError(
            "the document is nested too deeply", where=where, limit=f"MAX_DEPTH = {MAX_DEPTH}"
        ) from None
    except EdgeError as exc:
        exc.where = exc.where or where
        raise
    return _checked(data, where, problems, duplicates)


def _checked(
    data: Any, where: str, problems: list[EdgeError] | None, duplicates: list[EdgeError]
) -> Any:
    """`data` checked: every value problem and duplicate key raised at once (the first,
    with `problems` holding all), or appended to `problems` when a list is given, the
    refused values left out (a duplicate key keeps its last value)."""
    found = [] if _plainly_valid(data) else value_problems(data, where)
    for dup in duplicates:
        dup.where = f"{where}.{dup.where}" if where else dup.where
    every = [*duplicates, *found]
    if problems is not None:
        problems.extend(every)
        return without_problems(data, found, where) if found else data
    if every:
        every[0].problems = tuple(every)
        raise every[0]
    return data


class _BoundedLoader(yaml.SafeLoader):
    """The safe YAML loader, counting aliases and refusing more than MAX_YAML_ALIASES."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self.aliases = 0
        self.duplicates: list[EdgeError] = []  # a key given twice in one mapping

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                line = key_node.start_mark.line + 1
                name = (key_node.tag, key_node.value)
                if name in seen:
                    self.duplicates.append(duplicate_key(key_node.value, seen[name], line))
                else:
                    seen[name] = line
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                mark = self.peek_event().start_mark
                raise EdgeError(
                    f"too many YAML aliases (line {mark.line + 1})",
                    limit=f"MAX_YAML_ALIASES = {MAX_YAML_ALIASES}",
                )
        return super().compose_node(parent, index)


def duplicate_key(key: str, first: int | None = None, again: int | None = None) -> EdgeError:
    """A key set twice in one mapping: the engines' readers keep the last value silently,
    so which one was meant is the user's to say."""
    lines = ""
    if first is not None and again is not None:
        lines = f" (line {first})" if first == again else f" (lines {first} and {again})"
    return EdgeError(
        f"the key is set twice{lines}; the last value would win silently: keep one",
        where=key,
    )


def syntax_message(exc: Exception, kind: str = "YAML") -> str:
    """A YAML or JSON syntax error in words: where it is (line, column) and what is
    wrong, without the parser's internal stream name; a tab says to indent with spaces."""
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if mark is not None:
        problem = str(getattr(exc, "problem", "") or "").strip()
        context = str(getattr(exc, "context", "") or "").strip()
        what = f"{context}: {problem}" if context and problem else (problem or context)
        text = f"not valid {kind}: line {mark.line + 1}, column {mark.column + 1}: {what}"
        if "tab" in problem.lower() or "\\t" in problem or "\t" in problem:
            text += "; indent with spaces, not tabs (YAML does not allow tabs for indentation)"
        return text
    plain = str(exc).replace(' in "<unicode string>"', "")
    return f"not valid {kind}: {plain}"


def parse_yaml(
    text: str | bytes, where: str = "", *, problems: list[EdgeError] | None = None
) -> Any:
    """Safe YAML with bounded aliases and depth, then `check_value`.
    Raises EdgeError (limits, values) or yaml.YAMLError (syntax); `problems` as for
    `parse_json`."""
    if isinstance(text, bytes):
        text = decode_utf8(text, where)
    loader = _BoundedLoader(text)
    try:
        data = loader.get_single_data()
    except RecursionError:
        raise EdgeError(
            "the document is nested too deeply", where=where, limit=f"MAX_DEPTH = {MAX_DEPTH}"
        ) from None
    except EdgeError as exc:
        exc.where = exc.where or where
        raise
    finally:
        loader.dispose()
    return _checked(data, where, problems, loader.duplicates)


def decode_utf8(raw: bytes, where: str = "") -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EdgeError(
            f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})", where=where
        ) from None


def read_text(path: str | Path, limit: int = MAX_INPUT_BYTES) -> str:
    """A file's text: a regular file (no directory, FIFO or device), at most `limit`
    bytes (refused before reading), UTF-8. Raises EdgeError or OSError."""
    path = Path(path)
    info = path.stat()
    if stat.S_ISDIR(info.st_mode):
        raise EdgeError("is a directory, not a file", where=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise EdgeError("is not a regular file (a FIFO, socket or device?)", where=str(path))
    if info.st_size > limit:
        raise EdgeError(
            f"the file has {info.st_size} bytes, over the limit",
            where=str(path),
            limit=f"MAX_INPUT_BYTES = {limit}",
        )
    with path.open("rb") as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise EdgeError(
            "the file grew over the limit while being read",
            where=str(path),
            limit=f"MAX_INPUT_BYTES = {limit}",
        )
    return decode_utf8(raw, str(path))


def safe_dumps(data: Any, **kwargs: Any) -> str:
    """JSON text for any payload; never fails (non-finite floats and other values that JSON
    cannot hold are written as their short rendering)."""
    try:
        return json.dumps(data, allow_nan=False, ensure_ascii=True, **kwargs)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(_sanitise(data, 0), allow_nan=False, ensure_ascii=True, **kwargs)


def _sanitise(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return "..."
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, Mapping):
        return {
            (k if isinstance(k, str) else show(k)): _sanitise(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_sanitise(v, depth + 1) for v in value]
    return show(value)
