"""MLC LLM's front door: the serving `EngineConfig` JSON read into claims on the `mlc`
profile (its `mode` passed to arbitration, so unset batch, prefill chunk and KV capacity
are inferred as MLC does), written back as MLC JSON, judged in MLC's words.

Adding a field / a rule here: a field maps onto an option path in the field table of the
reader; a default MLC's dataclass holds becomes a perf claim there; a refusal of MLC's
engine is a refusal of the reader; a rule on existing options is one module of the MLC
rule pack in `constraints`; the verdict's words are `judge.py`'s.
"""

from __future__ import annotations

import importlib
from typing import Any

# the pack's Dialect lives in `dialect`, imported on first use: importing a role module
# of the pack (its vocabulary, its field lists) does not import the whole pack
_LAZY = ("DIALECT", "MlcDialect")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.dialect"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DIALECT", "MlcDialect"]
