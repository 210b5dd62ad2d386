"""SGLang's key vocabulary: what detection reads (`vocabulary`) and the field names the
service's fuzzer writes (`config_keys`), both from the SGLang 0.5 release surface;
the spellings of its parallel sizes (`PARALLEL`, which a check's GPU count reads)."""

from __future__ import annotations

from ...dialects import DIALECTS
from ...dialects.surface import load_surface
from ...sources.vocab import Vocabulary, surface_vocabulary

SURFACE = DIALECTS.entries["sglang"].surface  # detection reads it without this pack
# keys the fuzzer writes beside the surface's fields (names of no SGLang field: bad input)
EXTRA_KEYS = ("speculative-config.method", "speculative-config.num_speculative_tokens")

# the parallel sizes in the spellings SGLang accepts (dashes read as underscores): GPUs are
# tp x pp, x dp unless DP attention runs dp inside tp (python/sglang/srt/server_args.py)
PARALLEL = {
    "tp": ("tp_size", "tp", "tensor_parallel_size"),
    "pp": ("pp_size", "pipeline_parallel_size"),
    "dp": ("dp_size", "dp", "data_parallel_size"),
}


def vocabulary() -> Vocabulary:
    """SGLang's keys: its release surface (what detection reads from the registry's
    entry without importing the pack)."""
    return surface_vocabulary("sglang", SURFACE)


def config_keys() -> tuple[str, ...]:
    """Every field of the release as `ServerArgs` names it, and the extra keys."""
    return (*load_surface(SURFACE).fields, *EXTRA_KEYS)
