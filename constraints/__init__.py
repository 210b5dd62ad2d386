"""What is true about engines: option schema, expressions, rules, specs.

`EngineConfig` is the model of every section; `lookup(path)` gives the domain, default and
description of any dotted path and raises `UnknownPath` (with suggestions) otherwise.
"""

from __future__ import annotations

from .check import violations
from .errors import DomainError, ExpressionError, SchemaError, UnknownPath
from .rules import Rule, Source, all_rules, get_rule
from .schema import EngineConfig, OptionSpec, lookup, options, suggest

__all__ = [
    "DomainError",
    "EngineConfig",
    "ExpressionError",
    "OptionSpec",
    "Rule",
    "SchemaError",
    "Source",
    "UnknownPath",
    "all_rules",
    "get_rule",
    "lookup",
    "options",
    "suggest",
    "violations",
]
