"""JSON types at a dialect's reading: a value of the wrong type is refused by name.

A reader that indexes into a config (`value.items()`, `value in CHOICES`, `int(value)`)
first passes the value through `expect` or `expect_choice`, so a list where an object
belongs, or an object where a string does, is a `DialectError` naming the key, the file,
the expected JSON type and the type given, never a TypeError from inside the reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from constraints.edge import show

from .errors import DialectError


class WrongType(DialectError, ValueError):
    """A config value of the wrong JSON type: `key`, `file`, `value`, `allowed` (the JSON
    types or choices expected). A ValueError too, so a reader that gathers every bad
    value of a config (SGLang's) gathers this one with them."""


# JSON type name -> the Python types a decoded document holds for it
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def json_type(value: Any) -> str:
    """The JSON name of `value`'s type: object, array, string, integer, number, boolean
    or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name in ("object", "array", "string", "integer", "number"):
        if isinstance(value, _TYPES[name]):
            return name
    return type(value).__name__


def expect(value: Any, kinds: str, *, key: str, file: str | None) -> Any:
    """`value` when its JSON type is one of `kinds` ("object", "string|null" ...), else a
    DialectError naming `key`, the expected and the given type."""
    wanted = kinds.split("|")
    given = json_type(value)
    if given in wanted or (given == "integer" and "number" in wanted):
        return value
    exc = WrongType(
        f"expected {' or '.join(wanted)}, got {given}", key=key, file=file, value=show(value)
    )
    exc.allowed = " or ".join(wanted)
    raise exc


def expect_choice(value: Any, choices: Iterable[Any], *, key: str, file: str | None) -> Any:
    """`value` as it is when it is a JSON scalar (the reader's own check names a wrong
    string); an object or an array (not even hashable) is refused here, naming the
    choices."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    options = [str(c) for c in choices]
    exc = WrongType(
        f"expected a string, one of {', '.join(options)}; got {json_type(value)}",
        key=key,
        file=file,
        value=show(value),
    )
    exc.allowed = "one of " + ", ".join(options)
    raise exc


def as_int(value: Any, *, key: str, file: str | None) -> int:
    """`int(value)` for a number or a numeric string (pydantic's lax reading, as the
    engine's own config classes read it); anything else is refused naming the key."""
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    exc = WrongType(
        f"expected an integer, got {json_type(value)} {show(value, 30)}",
        key=key,
        file=file,
        value=show(value),
    )
    exc.allowed = "integer"
    raise exc
