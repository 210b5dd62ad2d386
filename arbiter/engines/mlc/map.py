"""MLC's map between its `EngineConfig` fields and arbiter's options: the field table of
`native` (`FIELDS`, field -> option path), turned around for the reports' words."""

from __future__ import annotations

from .native import FIELDS


def option_fields() -> dict[str, str]:
    """Option path -> the MLC field that sets it."""
    return {path: name for name, path in FIELDS.items()}
