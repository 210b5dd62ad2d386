"""SGLang's front door: `ServerArgs` fields (SGLang's `--config` YAML and launch command
line) read into claims on an SGLang profile (`sglang-0.5.23`, `sglang-0.5.16`: each
release's own field list), with what SGLang derives for the fields left unset; written
back in the same YAML; judged in SGLang's words. SGLang sizes its running requests from
the KV pool once the pool is known: `refine` is that second solve.

Adding a field / a rule here: a field of the release goes into its field list
(`fields/sglang-<release>.yaml`) and, when it shapes arbitration, into the map of fields to
option paths; what SGLang derives for an unset field into its derivations; a rule on
existing options is one module of the SGLang rule pack in `constraints`; the verdict's
words are `judge.py`'s.
"""

from __future__ import annotations

import importlib
from typing import Any

# the pack's Dialect lives in `dialect`, imported on first use: importing a role module
# of the pack (its vocabulary, its field lists) does not import the whole pack
_LAZY = ("DIALECT", "SglangDialect", "solve")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.dialect"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DIALECT", "SglangDialect", "solve"]
