"""The intent's features on each engine's own options, in that engine's config shape.

`native(engine, features)` gives a `Mapped`: the native config (TensorRT-LLM LLM-API YAML,
`vllm serve --config` YAML, SGLang `--config` YAML, MLC `EngineConfig` JSON), which native
keys each feature set, and the features the engine has no option for, each with the
reason. The table is documented in docs/engines.md ("Engine-neutral claim vocabulary").

Sources (release lines as the field lists of the engine packs, arbiter/engines/, hold them):
TensorRT-LLM 1.2 `TorchLlmArgs`; vLLM 0.33.0 `EngineArgs` and `SpeculativeConfig`
(vllm/config/speculative.py, `SpeculativeMethod`: ngram, draft_model, eagle3, mtp ...);
SGLang 0.5.23 `ServerArgs` (arg_groups/cuda_graph_hook.py: the per-phase CUDA-graph
switches; speculative_hook.py: with top-k 1 the draft tokens are num_steps + 1;
spec_info.py: STANDALONE is the draft-model algorithm); MLC LLM `EngineConfig`
(python/mlc_llm/serve/config.py: speculative_mode disable / small_draft / eagle / medusa).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialects import DIALECTS

ENGINES = tuple(DIALECTS)  # the registry's engines, in its order


def table_of(engine: str) -> Any:
    """The engine pack's side of the comparison (`arbiter/engines/<engine>/compare.py`:
    TABLE, BASE, LABEL, FORMAT, SURFACE), imported when first asked for."""
    return DIALECTS.part(engine, "compare")


@dataclass
class Mapped:
    """An intent's features on one engine: `config` in the engine's own shape, `options`
    (feature -> the native keys it set), `missing` (feature -> why the engine cannot)."""

    engine: str
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


# how one feature maps onto an engine: (its value, every feature of the intent) -> the
# engine's own keys and values, or why the engine has no option for it
FeatureMap = Callable[[Any, Mapping[str, Any]], "dict[str, Any] | str"]


def _put(config: dict[str, Any], values: Mapping[str, Any]) -> tuple[str, ...]:
    """Merge `values` into `config` (nested mappings merged key by key); the dotted keys."""
    keys = []
    for key, value in values.items():
        if isinstance(value, Mapping) and value and isinstance(config.get(key), dict):
            keys += [f"{key}.{k}" for k in _put(config[key], value)]
        else:
            config[key] = dict(value) if isinstance(value, Mapping) else value
            keys += [f"{key}.{k}" for k in value] if isinstance(value, Mapping) and value else [key]
    return tuple(keys)


def _one(key: str) -> FeatureMap:
    return lambda value, _: {key: value}


def _nested(section: str, key: str) -> FeatureMap:
    return lambda value, _: {section: {key: value}}


def _none(reason: str, allowed: Any = ()) -> FeatureMap:
    """The engine has no option for this feature (`allowed`: values that need none)."""
    return lambda value, _: {} if value in allowed else reason


# applied last: they read or override what others set
LATE = ("attention_dp",)


def native(engine: str, features: Mapping[str, Any]) -> Mapped:
    """The features on `engine`'s own options (see the module docstring)."""
    pack = table_of(engine)
    table = pack.TABLE
    mapped = Mapped(engine, config=dict(pack.BASE))
    order = sorted(features, key=lambda name: name in LATE)
    for name in order:
        got = table[name](features[name], features)
        if isinstance(got, str):
            mapped.missing[name] = got
        else:
            mapped.options[name] = _put(mapped.config, got)
    return mapped


__all__ = ["ENGINES", "FeatureMap", "Mapped", "native", "table_of"]
