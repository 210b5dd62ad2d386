"""MLC LLM's defaults, in the common form (`arbiter.dialects.open_defaults`).

The `EngineConfig` dataclass defaults (mlc-ai/mlc-llm python/mlc_llm/serve/config.py
EngineConfig @79d603f0): `kv_cache_page_size` 16, `prefill_mode` "hybrid",
`prefix_cache_mode` "radix". MLC pins none of its open fields: the batch, the prefill
chunk and the KV capacity it infers from its memory formulas for the mode
(`arbitrate(mode=...)`), so `open_defaults` has no rows. A field that holds its default
is read as that default (a perf claim that may give way with a logged reason, as MLC
itself falls back from hybrid to chunked prefill under speculative decoding): the table
says which values those are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dialects.open_defaults import EngineDefault

CONFIG = "python/mlc_llm/serve/config.py EngineConfig @79d603f0"
DEFAULT = "mlc.default"

OPEN_DEFAULTS = (
    EngineDefault("kv_cache_page_size", "kv_cache_config.tokens_per_block", 16, CONFIG, DEFAULT),
    EngineDefault("prefill_mode", "runtime_config.prefill_mode", "hybrid", CONFIG, DEFAULT),
    EngineDefault(
        "prefix_cache_mode", "kv_cache_config.enable_block_reuse", True, CONFIG, DEFAULT
    ),  # "radix"
)


def open_defaults() -> list[EngineDefault]:
    """The rows MLC pins for the fields an input leaves open: none (see the module)."""
    return []


def is_default(field: str, requirement: Mapping[str, Any]) -> bool:
    """Whether `requirement` (what a value of `field` sets) is MLC's own default of
    `field` (read as a default: a perf claim)."""
    return any(
        row.field == field and dict(requirement) == {row.path: row.value} for row in OPEN_DEFAULTS
    )


__all__ = ["OPEN_DEFAULTS", "is_default", "open_defaults"]
