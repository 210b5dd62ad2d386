"""The options a TensorRT-LLM release line has: its field list read through the map
(`scripts/gen_surfaces.py` writes them into the profile's surface in `constraints`)."""

from __future__ import annotations

from constraints.profiles import Profile
from constraints.schema import options

from . import map as trt_map
from .fields import catalogue
from .prebuilt import PLUGIN_MOVED

# the field list each profile reads (trtllm-0.10 has none of its own: the closest is the
# TensorRT-engine backend's TrtLlmArgs of 1.2, whose option set it shares)
FIELD_LISTS = {
    "trtllm-1.2": "1.2",
    "trtllm-1.0": "1.0",
    "trtllm-tensorrt": "1.2",
    "trtllm-0.10": "1.2",
}
# options the dialect sets from what it reads though no map entry names them
DERIVED: tuple[str, ...] = ()


def surface_options(profile: Profile) -> set[str]:
    """The option paths `profile`'s release has."""
    release = FIELD_LISTS[profile.name]
    cat = catalogue(release)
    fields = cat.fields(cat.args_class(profile.backend))
    paths = [s.path for s in options(["trtllm"]) if not s.fact]
    out = {p for p in paths if trt_map.field_for(p, release, profile.backend)}
    if "build_config" in fields:  # a plugin option later releases moved (prebuilt.py)
        out |= set(PLUGIN_MOVED.values())
    if "speculative_config" in fields:
        out |= {*trt_map.SPEC_FIELDS.values(), trt_map.TYPE, trt_map.EAGLE3}
    if "cuda_graph_config" in fields:  # map._section derives these two
        out |= {"cuda_graph_config.enabled", "cuda_graph_config.batch_sizes_max"}
    if "moe_config" in fields:
        out.add("moe_config.load_balancer")
    return out
