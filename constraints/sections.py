"""What every section of the option schema is made of: the section base (`Section`: no
extra keys, every assignment validated), the option field (`opt`: a default and a
description) and the domains shared across sections. `constraints.schema` and the engine
packs' own sections (`constraints/engines/<engine>/schema.py`) build on it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .domains import BoolDomain

BOOL = BoolDomain()
MAX_TOKENS = 1 << 22  # bound of every token-count option (4M tokens)


class Section(BaseModel):
    """A group of options; assignment is validated so a config can never hold a bad value."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def opt(default: Any, description: str) -> Any:
    """An option's field: its default and what it means."""
    return Field(default, description=description)


__all__ = ["BOOL", "MAX_TOKENS", "Section", "opt"]
