"""Model and machine facts: the front door `read_model` (read.py) over the reader of a
checkpoint's config (model.py, with its quantization in quant.py and layer kinds in
layers.py) and MLC's own config (mlc.py), the device catalog (devices.py), and the memory
knowledge every sizing reads (memory.py)."""

from __future__ import annotations

from .devices import CATALOG, DeviceSpec
from .errors import MissingKeys, SpecError, UnknownDevice, UnknownQuantization
from .model import ModelSpec, ParamBreakdown
from .quant import MLC_QUANTIZATIONS, CheckpointQuant
from .read import read_model

__all__ = [
    "CATALOG",
    "MLC_QUANTIZATIONS",
    "CheckpointQuant",
    "DeviceSpec",
    "MissingKeys",
    "ModelSpec",
    "ParamBreakdown",
    "SpecError",
    "UnknownDevice",
    "UnknownQuantization",
    "read_model",
]
