"""Write each profile's option surface into `constraints/engines/<engine>/surfaces/`.

A profile's surface is the options its release has, with the profile's default for each:
the fields of the release's field list (`arbiter/engines/<engine>/fields-<release>.yaml`) that the engine's
dialect map turns into option paths, plus the options that dialect derives from what it
reads (`DERIVED` below, each with its reason). `constraints` cannot import `arbiter`, so
the surfaces are written here as data, one small module per profile; the compiler gives
every option outside a profile's surface its default as a constant.

Run from the repository root: `python scripts/gen_surfaces.py` writes the files,
`python scripts/gen_surfaces.py --check` exits 1 naming the files that differ.
`tests/arbiter/test_surfaces_generated.py` regenerates and compares, so the data cannot
drift from the field lists and maps.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from arbiter.engines.mlc import native as mlc
from arbiter.engines.sglang import map as sglang_map
from arbiter.engines.trtllm import map as trt_map
from arbiter.engines.trtllm.fields import catalogue
from arbiter.engines.trtllm.prebuilt import PLUGIN_MOVED
from arbiter.engines.vllm import map as vllm_map
from constraints.profiles import PROFILES, Profile, surface_module
from constraints.schema import options

ROOT = Path(__file__).resolve().parent.parent

# options every engine has though no field names them one to one: the checkpoint's and
# the KV cache's precision (machine claims from the model's quantization config), and the
# expert-parallel layout the parallel rules derive from the sizes the user gives
COMMON = (
    "quant_config.quant_algo",
    "quant_config.kv_cache_quant_algo",
    "parallel_config.moe_expert_parallel_used",
    "parallel_config.moe_tensor_parallel_used",
)
# options a dialect sets from what it reads though no map entry names them
DERIVED: dict[str, tuple[str, ...]] = {
    # vllm_map: an EAGLE-3 method sets speculative_config.eagle3; the dialect's own
    # section (vllm_config.*) holds the fields and the facts vLLM derives (all of it)
    "vllm": ("speculative_config.eagle3",),
    # sglang: options its rules derive from its own fields (sglang rules): chunked
    # prefill from chunked_prefill_size, CUDA graphs from the attention backend
    "sglang": ("cuda_graph_config.enabled", "scheduler_config.enable_chunked_context"),
    # mlc: speculative_mode -> speculative_config.decoding_type (mlc.SPECULATIVE_MODES);
    # prefix_cache_mode radix/disable -> kv_cache_config.enable_block_reuse
    "mlc": ("speculative_config.decoding_type", "kv_cache_config.enable_block_reuse"),
    "trtllm": (),
}
# the TensorRT-LLM field list each profile reads (trtllm-0.10 has none of its own: the
# closest is the TensorRT-engine backend's TrtLlmArgs of 1.2, whose option set it shares)
TRTLLM_FIELD_LISTS = {
    "trtllm-1.2": "1.2",
    "trtllm-1.0": "1.0",
    "trtllm-tensorrt": "1.2",
    "trtllm-0.10": "1.2",
}


def _option_paths() -> list[str]:
    return [s.path for s in options() if not s.fact]


def _trtllm(profile: Profile) -> set[str]:
    release = TRTLLM_FIELD_LISTS[profile.name]
    cat = catalogue(release)
    fields = cat.fields(cat.args_class(profile.backend))
    out = {p for p in _option_paths() if trt_map.field_for(p, release, profile.backend)}
    if "build_config" in fields:  # a plugin option later releases moved (trtllm_engine)
        out |= set(PLUGIN_MOVED.values())
    if "speculative_config" in fields:
        out |= {*trt_map.SPEC_FIELDS.values(), trt_map.TYPE, trt_map.EAGLE3}
    if "cuda_graph_config" in fields:  # trtllm_map._section derives these two
        out |= {"cuda_graph_config.enabled", "cuda_graph_config.batch_sizes_max"}
    if "moe_config" in fields:
        out.add("moe_config.load_balancer")
    return out


def _vllm(profile: Profile) -> set[str]:
    own = {p for p in _option_paths() if p.startswith("vllm_config.")}
    return set(vllm_map.option_fields()) | own


def _sglang(profile: Profile) -> set[str]:
    own = {p for p in _option_paths() if p.startswith("sglang_config.")}
    resolved = {path for path, _ in sglang_map.RESOLVED.values()}
    return set(sglang_map.SHARED.values()) | own | resolved


def _mlc(profile: Profile) -> set[str]:
    return set(mlc.FIELDS.values())


MAPPED = {"trtllm": _trtllm, "vllm": _vllm, "sglang": _sglang, "mlc": _mlc}


def surface_of(profile: Profile) -> dict[str, Any]:
    """{path: default} of every option `profile`'s release has, in schema order."""
    paths = MAPPED[profile.engine](profile) | set(COMMON) | set(DERIVED[profile.engine])
    known = set(_option_paths())
    unknown = sorted(paths - known)
    if unknown:
        raise SystemExit(f"{profile.name}: the map names paths the schema lacks: {unknown}")
    return {
        s.path: profile.defaults.get(s.path, s.default)
        for s in options()
        if not s.fact and s.path in paths
    }


def render(profile: Profile, surface: Mapping[str, Any]) -> str:
    """The module text of one profile's surface."""
    lines = [
        f'"""The option surface of profile {profile.name} ({profile.line}).',
        "",
        "Every option the release has, with the profile's default. Generated by",
        'scripts/gen_surfaces.py from the field list and the dialect map; do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "SURFACE: dict[str, Any] = {",
    ]
    lines += [f"    {_literal(path)}: {_literal(value)}," for path, value in surface.items()]
    lines += ["}", ""]
    return "\n".join(lines)


def _literal(value: Any) -> str:
    """A Python literal as ruff formats it (strings in double quotes)."""
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def targets() -> dict[Path, str]:
    """Every surface file and the text it must hold."""
    out: dict[Path, str] = {}
    for profile in PROFILES.values():
        module = surface_module(profile)
        path = ROOT / (module.replace(".", "/") + ".py")
        out[path] = render(profile, surface_of(profile))
    return out


def stale(files: Mapping[Path, str]) -> list[Path]:
    return [p for p, text in files.items() if not p.exists() or p.read_text() != text]


def write(files: Mapping[Path, str]) -> Iterable[Path]:
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        init = path.parent / "__init__.py"
        if not init.exists():
            init.write_text('"""The option surfaces of this engine\'s profiles (generated)."""\n')
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs")
    args = parser.parse_args(argv)
    files = targets()
    if args.check:
        bad = stale(files)
        for path in bad:
            print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
        return 1 if bad else 0
    for path in write(files):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
