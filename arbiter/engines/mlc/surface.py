"""The options MLC's serving `EngineConfig` has: its field table, and the two its reader
sets from named values (`scripts/gen_surfaces.py` writes them into the `mlc` surface)."""

from __future__ import annotations

from constraints.profiles import Profile

from . import native

# speculative_mode -> speculative_config.decoding_type (native.SPECULATIVE_MODES);
# prefix_cache_mode radix/disable -> kv_cache_config.enable_block_reuse
DERIVED: tuple[str, ...] = (
    "speculative_config.decoding_type",
    "kv_cache_config.enable_block_reuse",
)


def surface_options(profile: Profile) -> set[str]:
    """The option paths `profile`'s release has."""
    return set(native.FIELDS.values())
