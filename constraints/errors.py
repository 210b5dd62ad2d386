"""Typed errors of the knowledge layer: unknown paths and values outside a domain.

Each error carries what a command line and a service answer for it (`exit_code`,
`http_status`, a stable `code`); by default it is bad input (exit 2, HTTP 400).
"""

from __future__ import annotations

from typing import Any, ClassVar


class SchemaError(Exception):
    """Base of every error raised by `constraints`."""

    exit_code: ClassVar[int] = 2
    http_status: ClassVar[int] = 400
    code: ClassVar[str] = "invalid_input"


class UnknownPath(SchemaError, KeyError):
    """A dotted path that names no option; carries close matches as suggestions."""

    http_status: ClassVar[int] = 404
    code: ClassVar[str] = "not_found"

    def __init__(self, path: str, suggestions: tuple[str, ...] = ()):
        super().__init__(path)
        self.path = path
        self.suggestions = tuple(suggestions)

    def __str__(self) -> str:
        text = f"unknown option path {self.path!r}"
        if self.suggestions:
            text += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return text


class UnknownSection(SchemaError, KeyError):
    """A section name that names no section of the schema; `sections` lists those that do."""

    http_status: ClassVar[int] = 404
    code: ClassVar[str] = "not_found"

    def __init__(self, section: str, sections: tuple[str, ...]):
        super().__init__(section)
        self.path = section
        self.sections = tuple(sections)

    def __str__(self) -> str:
        return f"unknown section {self.path!r}; sections: {', '.join(self.sections)}"


class OutOfScope(SchemaError, KeyError):
    """An option of an engine's own section asked of a config or resolution composed
    without that engine's pack (a vLLM profile's resolution holds no `sglang_config`)."""

    http_status: ClassVar[int] = 404
    code: ClassVar[str] = "not_found"

    def __init__(self, path: str, engine: str, scope: tuple[str, ...]):
        super().__init__(path)
        self.path = path
        self.engine = engine
        self.scope = tuple(scope)

    def __str__(self) -> str:
        held = ", ".join(self.scope) or "no engine"
        return (
            f"{self.path!r} is an option of {self.engine}'s own section; this config holds "
            f"the shared sections and {held}'s only"
        )


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
        text = repr(self.data)  # bounded: a message never echoes a whole hostile body
        return f"{self.message}: {text if len(text) <= 200 else text[:197] + '...'}"
