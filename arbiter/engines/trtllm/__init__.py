"""TensorRT-LLM's front door: LLM-API arguments (`extra_llm_api_options` YAML, keyword
arguments, trtllm-serve's command line) and prebuilt engine folders read into claims,
written back in the same YAML, judged in the engine's words.

Adding a field / a rule here: a field of a release is in its field list (read by the
fields module) and, when it shapes arbitration, in the map of native fields to option
paths; a refusal of the engine's own validators is a check; a rule on existing options is
one module of the TensorRT-LLM rule pack in `constraints`; the verdict's words are
`judge.py`'s.
"""

from __future__ import annotations

import importlib
from typing import Any

# the pack's Dialect lives in `dialect`, imported on first use: importing a role module
# of the pack (its vocabulary, its field lists) does not import the whole pack
_LAZY = ("DIALECT", "TrtllmDialect")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.dialect"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DIALECT", "TrtllmDialect"]
