"""Typed errors of the knowledge layer: unknown paths and values outside a domain."""

from __future__ import annotations

from typing import Any


class SchemaError(Exception):
    """Base of every error raised by `constraints`."""


class UnknownPath(SchemaError, KeyError):
    """A dotted path that names no option; carries close matches as suggestions."""

    def __init__(self, path: str, suggestions: tuple[str, ...] = ()):
        super().__init__(path)
        self.path = path
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:
        text = f"unknown option path {self.path!r}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


class DomainError(SchemaError, ValueError):
    """A value that the option's domain does not allow."""

    def __init__(self, path: str, value: Any, domain: str, reason: str = ""):
        super().__init__(path, value, domain)
        self.path = path
        self.value = value
        self.domain = domain
        self.reason = reason

    def __str__(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.path} = {self.value!r} is outside its domain {self.domain}{why}"


class ExpressionError(SchemaError, ValueError):
    """A malformed expression, or one that cannot be read from JSON."""

    def __init__(self, message: str, data: Any = None):
        super().__init__(message)
        self.message = message
        self.data = data

    def __str__(self) -> str:
        if self.data is None:
            return self.message
        return f"{self.message}: {self.data!r}"
