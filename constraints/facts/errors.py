"""Errors of the facts readers: a model config, a quantization or a device that cannot
become facts. Each names the file, the key and the value at fault."""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError


class SpecError(SchemaError, ValueError):
    """A model config or device name that cannot become facts."""

    def __init__(self, reason: str, *, source: str = "", key: str | None = None, value: Any = None):
        super().__init__(reason)
        self.reason = reason
        self.source = source
        self.key = key
        self.value = value

    def __str__(self) -> str:
        where = self.source or "model config"
        if self.key is not None:
            where += f", key {self.key!r}"
        return f"{where}: {self.reason}"


class MissingKeys(SpecError):
    """A config that lacks what its architecture needs; `keys` lists every missing key."""

    def __init__(self, family: str, keys: tuple[str, ...], *, source: str = ""):
        super().__init__(
            f"a {family} config needs {', '.join(keys)} (missing)",
            source=source,
            key=keys[0],
        )
        self.family = family
        self.keys = keys


class UnknownQuantization(SpecError):
    """A `quantization_config.quant_method` (or MLC quantization name) we do not know;
    `known` lists the ones we do."""

    def __init__(self, method: Any, known: tuple[str, ...], *, source: str = "", key: str = ""):
        super().__init__(
            f"unknown quantization {method!r}; known: {', '.join(known)}",
            source=source,
            key=key or "quantization_config.quant_method",
            value=method,
        )
        self.method = method
        self.known = known


class UnknownDevice(SpecError):
    def __init__(self, name: str, suggestions: tuple[str, ...]):
        hint = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"unknown device {name!r}{hint}", source="device catalog", value=name)
        self.suggestions = suggestions


__all__ = ["MissingKeys", "SpecError", "UnknownDevice", "UnknownQuantization"]
