"""The options a vLLM release line has: its fields through the map, and the dialect's own
section (`scripts/gen_surfaces.py` writes them into the profile's surface in `constraints`)."""

from __future__ import annotations

from constraints.profiles import Profile
from constraints.schema import options

from . import map as vllm_map

# an EAGLE-3 method sets speculative_config.eagle3; the dialect's own section
# (vllm_config.*) holds the fields and the facts vLLM derives (all of it)
DERIVED: tuple[str, ...] = ("speculative_config.eagle3",)


def surface_options(profile: Profile) -> set[str]:
    """The option paths `profile`'s release has."""
    own = {s.path for s in options(["vllm"]) if not s.fact and s.path.startswith("vllm_config.")}
    return set(vllm_map.option_fields()) | own
