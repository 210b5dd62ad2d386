"""TensorRT-LLM's key vocabulary: what detection reads (`vocabulary`: the `LlmArgs` fields
of every release catalogue, their nested section fields and trtllm-serve's options) and
what the service's fuzzer writes (`config_keys`, and the shape of a built engine's
config.json, `PREBUILT`); the spellings of its parallel sizes (`PARALLEL`, which a
check's GPU count reads)."""

from __future__ import annotations

import re
from typing import Any

from ...sources.vocab import Vocabulary, norm
from .fields import catalogue, releases
from .serve import CONFIG_OPTIONS, LLM_OPTIONS, SERVER_OPTIONS

ARGS_CLASSES = ("TorchLlmArgs", "TrtLlmArgs")
FUZZ_RELEASE = "1.2"
_ENUM = re.compile(r"enum\(([^)]*)\)")
# a built engine's config.json for the fuzzer, and the sections it writes bad values into
PREBUILT: dict[str, Any] = {"build_config": {"max_batch_size": 8}, "pretrained_config": {}}
PREBUILT_SECTIONS = ("build_config", "pretrained_config", "build_config.plugin_config")

# the parallel sizes in the spellings TensorRT-LLM accepts (the LLM API's and
# trtllm-serve's): GPUs are tp x pp (tensorrt_llm/llmapi/llm_args.py, world_size)
PARALLEL = {
    "tp": ("tensor_parallel_size", "tp_size"),
    "pp": ("pipeline_parallel_size", "pp_size"),
}


def serve_options() -> frozenset[str]:
    """trtllm-serve's own options (`--tp_size`, `--kv_cache_free_gpu_memory_fraction`)."""
    return frozenset((*LLM_OPTIONS, *SERVER_OPTIONS, *CONFIG_OPTIONS))


def vocabulary() -> Vocabulary:
    """The keys of every release's `LlmArgs` classes, their enum values, the keys of the
    sections they hold, and trtllm-serve's options (its serve flags)."""
    keys: set[str] = set()
    nested: set[str] = set()
    choices: dict[str, set[str]] = {}
    sections: dict[str, set[str]] = {}
    for release in releases():
        cat = catalogue(release)
        for cls in ARGS_CLASSES:
            for name, spec in cat.fields(cls).items():
                keys.add(name)
                enum = _ENUM.search(spec.type)
                if enum:
                    choices.setdefault(name, set()).update(enum.group(1).split("|"))
                sections.setdefault(name, set()).update(_section_keys(cat, spec.base_type))
        for model in cat.models:
            nested.update(cat.fields(model))
    options = serve_options()
    return Vocabulary(
        "trtllm",
        frozenset(keys),
        nested=frozenset(nested - keys),
        choices={k: frozenset(v) for k, v in choices.items()},
        native=frozenset(keys),
        sections={k: frozenset(v) for k, v in sections.items() if v},
        also=frozenset(norm(option) for option in options),
        serve_flags=options,
    )


def _section_keys(cat: Any, type_text: str) -> set[str]:
    """The keys of the nested model a field holds (a tagged union: all its members')."""
    if cat.is_model(type_text):
        return set(cat.fields(type_text))
    if type_text.startswith("tagged(") and type_text.endswith(")"):
        union = cat.unions.get(type_text[len("tagged(") : -1]) or {}
        out = {str(union.get("field", ""))} - {""}
        for model in (union.get("choices") or {}).values():
            if cat.is_model(model):
                out.update(cat.fields(model))
        return out
    return set()


def config_keys() -> tuple[str, ...]:
    """Every `LlmArgs` field of the fuzzed release, with the fields of a nested section as
    dotted paths (`build_config.plugin_config`), and each tagged union's tag field."""
    cat = catalogue(FUZZ_RELEASE)
    keys: list[str] = []
    for cls in ARGS_CLASSES:
        for name, spec in cat.fields(cls).items():
            keys.append(name)
            model = spec.base_type
            if cat.is_model(model):
                keys += [f"{name}.{inner}" for inner in cat.fields(model)]
    for union in cat.unions.values():
        keys.append(str(union["field"]))
    return tuple(dict.fromkeys(keys))
