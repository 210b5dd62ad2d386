"""Each dialect's key vocabulary, read from the field lists it already ships.

Detection (`arbiter.sources.detect`) asks, for one key of a config, which dialects know it
and which of their listed values a value is. The answers come from the release field
lists the dialects read themselves, never from a hand list: vLLM 0.33 and SGLang 0.5
through `arbiter.dialects.surface` (`fields/vllm-0.33.yaml`, `fields/sglang-0.5.yaml`),
TensorRT-LLM 1.0 and 1.2 through `arbiter.engines.trtllm.fields` (the `TorchLlmArgs` and
`TrtLlmArgs` classes and their nested models), MLC through the field table of
`arbiter.dialects.mlc` (its `EngineConfig` keys). The only place that names the dialect
modules, so the move of the dialects changes this file's imports and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..dialects.surface import Surface, load_surface
from ..engines.mlc import native as mlc
from ..engines.trtllm.fields import catalogue, releases
from ..engines.trtllm.serve import CONFIG_OPTIONS, LLM_OPTIONS, SERVER_OPTIONS
from ..engines.vllm.fields import QUANTIZATION_METHODS, literals

DIALECTS = ("vllm", "sglang", "trtllm", "mlc")
LABELS = {
    "vllm": "a `vllm serve` config",
    "sglang": "an SGLang `--config` file",
    "trtllm": "a TensorRT-LLM `extra_llm_api_options` YAML (LlmArgs)",
    "mlc": "an MLC `EngineConfig` JSON",
}
ENGINES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "mlc": "MLC LLM"}
# vLLM's --attention-backend takes an AttentionBackendEnum member's name, in any case
# (vllm/config/attention.py AttentionConfig.validate_backend_before: "auto" is None, any
# other string is `AttentionBackendEnum[value.upper()]`); the members as listed in
# vllm/v1/attention/backends/registry.py (vllm-project/vllm, the stored version at
# 0033bf03, read 2026-12-02; the field list records the type only, not the members). The
# field list's type names the enum without its members, so they are written here.
VLLM_ATTENTION_BACKENDS = frozenset(
    name.lower()
    for name in (
        "FLASH_ATTN",
        "FLASH_ATTN_DIFFKV",
        "TRITON_ATTN",
        "ROCM_ATTN",
        "ROCM_AITER_MLA",
        "ROCM_AITER_TRITON_MLA",
        "ROCM_AITER_FA",
        "ROCM_AITER_MLA_SPARSE",
        "XPU_MLA_SPARSE",
        "TORCH_SDPA",
        "FLASHINFER",
        "FLASHINFER_MLA",
        "FLASHINFER_MLA_SPARSE",
        "TRITON_MLA",
        "TRITON_MLA_SPARSE",
        "CUTLASS_MLA",
        "FLASHMLA",
        "FLASHMLA_SPARSE",
        "FLASH_ATTN_MLA",
        "NO_ATTENTION",
        "FLEX_ATTENTION",
        "TREE_ATTN",
        "ROCM_AITER_UNIFIED_ATTN",
        "CPU_ATTN",
        "TURBOQUANT",
        "CUSTOM",
        "AUTO",
    )
)
_LITERAL = re.compile(r"Literal\[([^\]]*)\]")
_ENUM = re.compile(r"enum\(([^)]*)\)")


def norm(key: str) -> str:
    """A key in the one spelling the vocabularies use: no leading dashes, underscores."""
    return key.strip().lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Vocabulary:
    """The keys one dialect accepts at the top of its config (`keys`, normalised), the
    names one level down (`nested`: a TensorRT-LLM field written at the wrong level), the
    listed values of a key (`choices`) and whether its spelling takes dashes (`dashes`)."""

    dialect: str
    keys: frozenset[str]
    nested: frozenset[str] = frozenset()
    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    dashes: bool = False
    surface: Surface | None = None  # vLLM and SGLang: the release surface (spellings)
    native: frozenset[str] = frozenset()  # the spellings a config of this engine is written in
    sections: Mapping[str, frozenset[str]] = field(default_factory=dict)  # field -> its keys
    also: frozenset[str] = frozenset()  # names that are no config key: serve-only options
    any_case: frozenset[str] = frozenset()  # fields whose listed values match in any case

    def is_native(self, key: str) -> bool:
        """True when `key` is spelled the way this engine spells it (vLLM and SGLang: the
        field name with dashes, `max-num-seqs`; an alias flag or underscores are accepted
        spellings, not native ones)."""
        written = key.strip().lstrip("-")
        return written in self.native or written in self.keys and not self.dashes

    def field_of(self, key: str) -> str | None:
        """The field a key names in this dialect (any accepted spelling), or None."""
        if self.surface is not None:
            found = self.surface.resolve(key)
            return found.field.name if found is not None else None
        name = norm(key) if self.dashes else key.strip()
        return name if name in self.keys else None

    def close(self, key: str) -> tuple[str, float] | None:
        """The closest of this dialect's names to an unknown key, with its similarity
        (difflib's ratio, at least 0.75), among its keys, the nested section fields and
        the command-line options (`also`), or None."""
        import difflib  # only an unknown key needs it

        target = norm(key)
        names = sorted({*(norm(k) for k in self.keys), *self.nested, *self.also})
        found = difflib.get_close_matches(target, names, n=1, cutoff=0.75)
        if not found:
            return None
        return found[0], difflib.SequenceMatcher(None, target, found[0]).ratio()

    def lists(self, name: str, value: Any) -> bool | None:
        """True when `value` is a listed value of field `name`, False when the field lists
        its values and `value` is none of them, None when the field lists none."""
        listed = self.choices.get(name)
        if listed is None or isinstance(value, (Mapping, list, bool)) or value is None:
            return None
        return (str(value).lower() if name in self.any_case else str(value)) in listed


def _vllm_extra() -> dict[str, frozenset[str]]:
    """vLLM values its field list types without listing them as choices: the attention
    backends (above); `kv_cache_dtype`, whose `Literal[...] | str` the parser takes as any
    string while `CacheConfig` refuses all but the literals; `quantization`, a string
    the release checks against its quantization methods (both as the dialect does:
    `arbiter.engines.vllm.fields`)."""
    kv = load_surface("vllm-0.33").fields["kv_cache_dtype"]
    return {
        "attention_backend": VLLM_ATTENTION_BACKENDS,
        "kv_cache_dtype": frozenset(literals(kv.type)),
        "quantization": frozenset(QUANTIZATION_METHODS),
    }


def _surface_vocabulary(
    dialect: str, name: str, extra: Mapping[str, frozenset[str]] | None = None
) -> Vocabulary:
    surf = load_surface(name)
    keys = set(surf.fields)
    choices: dict[str, frozenset[str]] = {}
    for f in surf.fields.values():
        keys.update(norm(flag) for flag in (*f.flags, *f.off_flags) if flag)
        if f.negation:
            keys.add(norm(f.negation))
        listed = _listed(f.choices, f.type)
        if listed:
            choices[f.name] = listed
    choices.update(extra or {})
    native = set()
    for f in surf.fields.values():
        native.add(f.name.replace("_", "-"))
        native.update(norm(off).replace("_", "-") for off in (f.negation, *f.off_flags) if off)
    return Vocabulary(
        dialect,
        frozenset(keys),
        choices=choices,
        dashes=True,
        surface=surf,
        native=frozenset(native),
        any_case=frozenset(("attention_backend",)) if extra else frozenset(),
    )


def _listed(choices: Iterable[Any] | None, type_text: str) -> frozenset[str] | None:
    """The values a field lists: its `choices`, else the members of a `Literal[...]` type
    that is the whole type (optionally `| None` or `Optional[...]`); a Literal in a union
    with `str` lists nothing, since any string passes."""
    if choices:
        return frozenset(str(c) for c in choices)
    text = type_text.strip().removesuffix(" | None")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    match = _LITERAL.fullmatch(text)
    if match is None:
        return None
    return frozenset(part.strip().strip("'\"") for part in match.group(1).split(","))


def _trtllm_vocabulary() -> Vocabulary:
    keys: set[str] = set()
    nested: set[str] = set()
    choices: dict[str, set[str]] = {}
    sections: dict[str, set[str]] = {}
    for release in releases():
        cat = catalogue(release)
        for cls in ("TorchLlmArgs", "TrtLlmArgs"):
            for name, spec in cat.fields(cls).items():
                keys.add(name)
                enum = _ENUM.search(spec.type)
                if enum:
                    choices.setdefault(name, set()).update(enum.group(1).split("|"))
                sections.setdefault(name, set()).update(_section_keys(cat, spec.base_type))
        for model in cat.models:
            nested.update(cat.fields(model))
    return Vocabulary(
        "trtllm",
        frozenset(keys),
        nested=frozenset(nested - keys),
        choices={k: frozenset(v) for k, v in choices.items()},
        native=frozenset(keys),
        sections={k: frozenset(v) for k, v in sections.items() if v},
        also=frozenset(norm(option) for option in serve_options()),
    )


def serve_options() -> frozenset[str]:
    """trtllm-serve's own options (`--tp_size`, `--kv_cache_free_gpu_memory_fraction`)."""
    return frozenset((*LLM_OPTIONS, *SERVER_OPTIONS, *CONFIG_OPTIONS))


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


def _mlc_vocabulary() -> Vocabulary:
    keys = {*mlc.FIELDS, *mlc.PASSTHROUGH, "mode", "speculative_mode", "prefix_cache_mode"}
    choices = {
        "mode": frozenset(mlc.MODES),
        "speculative_mode": frozenset(mlc.SPECULATIVE_MODES),
        "prefix_cache_mode": frozenset(("disable", "radix")),
    }
    return Vocabulary("mlc", frozenset(keys), choices=choices, native=frozenset(keys))


@cache
def vocabularies() -> dict[str, Vocabulary]:
    """The vocabulary of every dialect, in `DIALECTS` order."""
    return {
        "vllm": _surface_vocabulary("vllm", "vllm-0.33", _vllm_extra()),
        "sglang": _surface_vocabulary("sglang", "sglang-0.5"),
        "trtllm": _trtllm_vocabulary(),
        "mlc": _mlc_vocabulary(),
    }
