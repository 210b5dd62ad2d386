"""Per-layer attention kinds of a decoder, and the spellings every family shares.

Kinds: `full` (grows with the sequence), `sliding` (keeps the last `sliding_window`
tokens), `chunked` (Llama-4: attends within chunks of `attention_chunk_size`, so it keeps
at most one chunk), `linear` (Qwen3-Next's Gated DeltaNet: a fixed-size recurrent state).

The shared spellings, in order of precedence (a family reader in families.py puts its own
pattern between the interleaved and the uniform one):
- `layer_types` (transformers >= 4.53: "full_attention", "sliding_attention",
  "chunked_attention", "linear_attention"): `named`;
- `sliding_window_pattern` N (every N-th layer is full, the others slide) or
  `full_attention_interval` N (every N-th layer full, the others linear): `interleaved`;
- one `sliding_window` for every layer (Mistral-7B-v0.1), or all full: `uniform`.

Family patterns (families.py): Gemma-2 (every even layer slides), Qwen2/Qwen3
(`use_sliding_window` with `max_window_layers`), Llama-4 (`attention_chunk_size` with
`no_rope_layers`). A sliding layer without a window attends to every token (transformers
passes a window of None), so it counts as full.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import SpecError

FULL, SLIDING, CHUNKED, LINEAR = "full", "sliding", "chunked", "linear"
_NAMES = {
    "full_attention": FULL,
    "attention": FULL,
    "sliding_attention": SLIDING,
    "chunked_attention": CHUNKED,
    "linear_attention": LINEAR,
}


def count(cfg: Mapping[str, Any], key: str, source: str, default: int = 0) -> int:
    """A non-negative int of the config (`default` when absent or null), or a SpecError
    naming the key and the value."""
    value = cfg.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(
            f"expected a non-negative int, got {value!r}", source=source, key=key, value=value
        )
    return value


def name(value: Any, key: str, source: str) -> str:
    """`value` when it is a string (a model type, an architecture), else a SpecError naming
    the key and the value."""
    if not isinstance(value, str):
        raise SpecError(f"expected a name, got {value!r}", source=source, key=key, value=value)
    return value


def counts(cfg: Mapping[str, Any], key: str, source: str, length: int | None = None) -> list[int]:
    """A list of non-negative ints (empty when absent), of `length` entries when given."""
    value = cfg.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        raise SpecError(
            f"expected a list of non-negative ints, got {value!r}",
            source=source,
            key=key,
            value=value,
        )
    if length is not None and len(value) != length:
        raise SpecError(
            f"has {len(value)} entries for {length} layers", source=source, key=key, value=value
        )
    return value


Kinds = tuple[tuple[str, ...], int]  # (kind per layer, window of the windowed kinds; 0: none)


def named(cfg: Mapping[str, Any], layers: int, window: int, chunk: int, source: str) -> Kinds:
    """The kinds `layer_types` names (which must be a list of one known name per layer)."""
    names = cfg["layer_types"]
    if not isinstance(names, list):
        raise SpecError(
            f"expected a list of layer types, got {names!r}",
            source=source,
            key="layer_types",
            value=names,
        )
    kinds = []
    for i, kind in enumerate(names):
        if not isinstance(kind, str) or kind not in _NAMES:
            raise SpecError(
                f"unknown layer type {kind!r} (known: {', '.join(_NAMES)})",
                source=source,
                key=f"layer_types[{i}]",
                value=kind,
            )
        kinds.append(_NAMES[kind])
    if len(kinds) != layers:
        raise SpecError(
            f"has {len(kinds)} entries for {layers} layers", source=source, key="layer_types"
        )
    if SLIDING in kinds and not window:
        kinds = [FULL if k == SLIDING else k for k in kinds]  # no window: attends to all
    if SLIDING not in kinds:
        window = chunk if CHUNKED in kinds else 0
    elif CHUNKED in kinds:
        window = max(window, chunk)
    return tuple(kinds), window


def interleaved(cfg: Mapping[str, Any], layers: int, window: int, source: str) -> Kinds | None:
    """Every N-th layer full: the others slide (`sliding_window_pattern`, with a window)
    or are linear (`full_attention_interval`); None when neither is spelled."""
    key = "sliding_window_pattern"
    if cfg.get(key) is None and cfg.get("_" + key) is not None:
        key = "_" + key
    pattern = count(cfg, key, source)
    if pattern and window:
        return tuple(FULL if (i + 1) % pattern == 0 else SLIDING for i in range(layers)), window
    step = count(cfg, "full_attention_interval", source)
    if step:
        return tuple(FULL if (i + 1) % step == 0 else LINEAR for i in range(layers)), 0
    return None


def uniform(layers: int, window: int) -> Kinds:
    """Every layer slides when there is a window, else every layer is full."""
    if window:
        return (SLIDING,) * layers, window
    return (FULL,) * layers, 0


__all__ = [
    "CHUNKED",
    "FULL",
    "LINEAR",
    "SLIDING",
    "Kinds",
    "count",
    "counts",
    "interleaved",
    "name",
    "named",
    "uniform",
]
