"""MLC's key vocabulary: what detection reads (`vocabulary`) and the field names the
service's fuzzer writes (`config_keys`), from the `EngineConfig` field table of `native`; the
spellings of its parallel sizes (`PARALLEL`, which a check's GPU count reads)."""

from __future__ import annotations

from ...sources.vocab import Vocabulary
from . import native

# the keys MLC reads besides the field table: its mode and the two modes of its features
MODE_KEYS = ("speculative_mode", "prefix_cache_mode", "mode")
# python/mlc_llm/serve/config.py EngineConfig.prefix_cache_mode (mlc-ai/mlc-llm @79d603f0)
PREFIX_CACHE_MODES = ("disable", "radix")

# the parallel sizes in MLC's spelling: GPUs are shards x stages
PARALLEL = {
    "tp": ("tensor_parallel_shards",),
    "pp": ("pipeline_parallel_stages",),
}


def vocabulary() -> Vocabulary:
    """MLC's keys for detection, with the values its three modes list."""
    keys = {*native.FIELDS, *native.PASSTHROUGH, *MODE_KEYS}
    choices = {
        "mode": frozenset(native.MODES),
        "speculative_mode": frozenset(native.SPECULATIVE_MODES),
        "prefix_cache_mode": frozenset(PREFIX_CACHE_MODES),
    }
    return Vocabulary("mlc", frozenset(keys), choices=choices, native=frozenset(keys))


def config_keys() -> tuple[str, ...]:
    """The field table's keys, the mode keys, then the fields carried through."""
    return (*native.FIELDS, *MODE_KEYS, *native.PASSTHROUGH)
