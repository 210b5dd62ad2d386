"""What is true about engines: option schema, expressions, rules, specs.

`EngineConfig` is the model of every section; `lookup(path)` gives the domain, default and
description of any dotted path and raises `UnknownPath` (with suggestions) otherwise.

The names below load on first use, so importing one small module (`constraints.errors`,
`constraints.profiles`) does not build the schema and every rule (about half a second).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "violations": "constraints.check",
    "DomainError": "constraints.errors",
    "ExpressionError": "constraints.errors",
    "SchemaError": "constraints.errors",
    "OutOfScope": "constraints.errors",
    "UnknownPath": "constraints.errors",
    "Rule": "constraints.rules",
    "Source": "constraints.rules",
    "all_rules": "constraints.rules",
    "get_rule": "constraints.rules",
    "EngineConfig": "constraints.schema",
    "OptionSpec": "constraints.schema",
    "lookup": "constraints.schema",
    "options": "constraints.schema",
    "suggest": "constraints.schema",
}

__all__ = [
    "DomainError",
    "EngineConfig",
    "ExpressionError",
    "OptionSpec",
    "Rule",
    "SchemaError",
    "Source",
    "OutOfScope",
    "UnknownPath",
    "all_rules",
    "get_rule",
    "lookup",
    "options",
    "suggest",
    "violations",
]

if TYPE_CHECKING:
    from .check import violations
    from .errors import DomainError, ExpressionError, SchemaError, UnknownPath
    from .rules import Rule, Source, all_rules, get_rule
    from .schema import EngineConfig, OptionSpec, lookup, options, suggest


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if find_spec(f"{__name__}.{name}") is not None:  # a submodule, as an eager import gave
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'constraints' has no attribute {name!r}")
