"""vLLM's front door: `vllm serve` arguments (the `--config` YAML and/or the command line)
read into claims on the `vllm-0.33` profile, written back in the same YAML, judged in
vLLM's words.

Adding a field / a rule here: a field of the release goes into its field list
(`fields/vllm-<release>.yaml`) and, when it shapes arbitration, into the map of native
fields to option paths; what vLLM derives for a field left open into its defaults; a rule
on existing options is one module of the vLLM rule pack in `constraints`; the verdict's
words are `judge.py`'s.
"""

from __future__ import annotations

import importlib
from typing import Any

# the pack's Dialect lives in `dialect`, imported on first use: importing a role module
# of the pack (its vocabulary, its field lists) does not import the whole pack
_LAZY = ("DIALECT", "VllmDialect")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.dialect"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DIALECT", "VllmDialect"]
