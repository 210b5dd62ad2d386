"""The options an SGLang release line has: its fields through the map, what its rules
resolve, and the dialect's own section (`scripts/gen_surfaces.py` writes them into the
profile's surface in `constraints`)."""

from __future__ import annotations

from constraints.profiles import Profile
from constraints.schema import options

from ...dialects.surface import load_surface
from . import map as sglang_map

# options its rules derive from its own fields: chunked prefill from chunked_prefill_size,
# CUDA graphs from the attention backend
DERIVED: tuple[str, ...] = ("cuda_graph_config.enabled", "scheduler_config.enable_chunked_context")


def surface_options(profile: Profile) -> set[str]:
    """The option paths `profile`'s release has: the shared options its field list maps
    to (every field the map names is in both 0.5.16 and 0.5.23), its own section and what
    its rules resolve."""
    fields = load_surface(profile.name).fields
    own = {
        s.path for s in options(["sglang"]) if not s.fact and s.path.startswith("sglang_config.")
    }
    resolved = {path for path, _ in sglang_map.RESOLVED.values()}
    shared = {path for name, path in sglang_map.SHARED.items() if name in fields}
    return shared | own | resolved
