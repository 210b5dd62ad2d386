"""The facts rules and the memory model read, under their historical import path:
`ModelSpec` (a checkpoint's config, read by `read_model`) and `DeviceSpec` (catalog or
probe). They live in the `constraints.facts` package; this module re-exports them."""

from __future__ import annotations

from .facts import (
    CATALOG,
    DeviceSpec,
    MissingKeys,
    ModelSpec,
    SpecError,
    UnknownDevice,
    UnknownQuantization,
    read_model,
)

__all__ = [
    "CATALOG",
    "DeviceSpec",
    "MissingKeys",
    "ModelSpec",
    "SpecError",
    "UnknownDevice",
    "UnknownQuantization",
    "read_model",
]
