"""What the runtime's decoder needs from a Hugging Face ``config.json`` (Llama, Mistral,
Qwen2): the shape, RoPE, norms and biases.

The shape (layers, heads, KV heads, head size, hidden and MLP sizes, vocabulary, context
length, tied embeddings, the sliding window and which layers it applies to) comes from the
project's one reader of model facts (``constraints.facts.model.read_hf``), so the runtime
and ``arbiter check`` see the same model; ``ModelArgs.spec`` is that reader's
``ModelSpec``. This module adds only what the decoder alone needs (RoPE scaling, epsilon,
bias flags) and refuses architectures and layer kinds the decoder does not implement. A
reader error becomes ``ModelConfigError`` naming the same key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from constraints.facts.errors import SpecError
from constraints.facts.layers import CHUNKED, LINEAR
from constraints.facts.layers import FULL as FULL_KIND
from constraints.facts.layers import SLIDING as SLIDING_KIND
from constraints.facts.model import ModelSpec, language_config, load_json, read_hf
from constraints.schema import DTYPES  # the schema's dtype domain, defined there once

# the errors live in engine.errors; importable from here as before
from ..errors import ModelConfigError as ModelConfigError
from ..errors import UnsupportedArchitecture as UnsupportedArchitecture

ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
}
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")
FULL, SLIDING = "full_attention", "sliding_attention"
# the reader's layer kinds under the names config.json's `layer_types` uses
_KIND_NAMES = {
    FULL_KIND: FULL,
    SLIDING_KIND: SLIDING,
    CHUNKED: "chunked_attention",
    LINEAR: "linear_attention",
}


@dataclass(frozen=True)
class ModelArgs:
    """Everything the decoder needs to know about a checkpoint's shape.

    ``rope_scaling`` is None for plain RoPE, else a dict with ``rope_type`` among
    ``linear``, ``dynamic``, ``llama3``, ``yarn`` and that type's parameters (HF names).
    ``layer_types`` says per layer whether ``sliding_window`` applies.
    """

    architecture: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    sliding_window: int | None = None
    attention_bias: bool = False  # bias on q/k/v
    o_proj_bias: bool = False
    mlp_bias: bool = False
    torch_dtype: str | None = None
    layer_types: tuple[str, ...] = field(default=())
    source: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    # the facts `from_hf` read `source` with (None: read them when asked)
    read_facts: ModelSpec | None = field(default=None, compare=False, repr=False)

    @property
    def spec(self) -> ModelSpec:
        """The model facts of this checkpoint, from the project's one reader (read once
        for a config.json: `from_hf` keeps the facts it read the shape from)."""
        if self.source is not None and self.read_facts is not None:
            return self.read_facts
        return read_hf(self.source if self.source is not None else self.hf_config())

    def hf_config(self) -> dict[str, Any]:
        """The config.json keys these arguments stand for (for arguments built in code)."""
        arch = {v: k for k, v in ARCHITECTURES.items()}[self.architecture]
        return {
            "architectures": [arch],
            "model_type": self.architecture,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "attention_bias": self.attention_bias and self.architecture != "qwen2",
            "sliding_window": self.sliding_window,
            "use_sliding_window": self.sliding_window is not None,
            "layer_types": [
                "sliding_attention" if self.layer_window(i) else "full_attention"
                for i in range(self.num_hidden_layers)
            ],
            "torch_dtype": self.torch_dtype if self.torch_dtype in DTYPES else "float32",
        }

    def layer_window(self, layer: int) -> int | None:
        """The model's own sliding window for ``layer`` (None = full attention)."""
        if self.sliding_window is None:
            return None
        kinds = self.layer_types or (SLIDING,) * self.num_hidden_layers
        return self.sliding_window if kinds[layer] == SLIDING else None

    @classmethod
    def from_hf(cls, config: Mapping[str, Any] | str | Path) -> ModelArgs:
        """Read a ``config.json`` (a dict, the file, or the model folder holding it)."""
        data, _ = load_json(config, "config.json")
        parsed = _parse(dict(data))
        return replace(parsed, source=dict(data))  # with the facts _parse read


def _architecture(cfg: dict[str, Any]) -> str:
    model_type = cfg.get("model_type")
    if model_type in ARCHITECTURES.values():
        return model_type
    for arch in cfg.get("architectures") or ():
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    if model_type is not None:
        raise UnsupportedArchitecture(
            "model_type",
            f"{model_type!r} is not supported (supported: {sorted(ARCHITECTURES.values())})",
        )
    raise UnsupportedArchitecture(
        "architectures",
        f"{cfg.get('architectures')!r} names no supported architecture "
        f"(supported: {sorted(ARCHITECTURES)})",
    )


def _rope(cfg: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    # transformers 5 writes ``rope_parameters`` (theta inside); older files write
    # ``rope_theta`` and ``rope_scaling`` (type under ``type`` or ``rope_type``).
    key = "rope_parameters" if cfg.get("rope_parameters") else "rope_scaling"
    params = dict(cfg.get(key) or {})
    theta = float(params.pop("rope_theta", cfg.get("rope_theta", 10000.0)))
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise ModelConfigError(
            f"{key}.rope_type", f"{rope_type!r} is not supported (supported: {ROPE_TYPES})"
        )
    if params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)) != 1.0:
        raise ModelConfigError("partial_rotary_factor", "only 1.0 (full rotary) is supported")
    params.pop("partial_rotary_factor", None)
    if rope_type == "default":
        return theta, None
    needs = {
        "linear": ("factor",),
        "dynamic": ("factor",),
        "yarn": (),  # a missing factor means max_position / original_max_position
        "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
    }[rope_type]
    for name in needs:
        if params.get(name) is None:
            raise ModelConfigError(f"{key}.{name}", f"required by rope_type {rope_type!r}")
    if rope_type in ("llama3", "yarn"):
        params.setdefault(
            "original_max_position_embeddings",
            cfg.get("original_max_position_embeddings", cfg.get("max_position_embeddings")),
        )
    return theta, {"rope_type": rope_type, **params}


def _parse(cfg: dict[str, Any]) -> ModelArgs:
    """The decoder's arguments: the shape from the one reader of model facts, plus what
    only the decoder needs (RoPE, epsilon, bias flags)."""
    arch = _architecture(cfg)
    try:
        spec = read_hf(cfg)
    except SpecError as exc:
        raise ModelConfigError(exc.key or "config.json", exc.reason) from None
    return replace(_shape(cfg, arch, spec), read_facts=spec)


def _shape(cfg: dict[str, Any], arch: str, spec: ModelSpec) -> ModelArgs:
    for key, value in (
        ("vocab_size", spec.vocab_size),
        ("intermediate_size", spec.intermediate_size),
    ):
        if value <= 0:
            raise ModelConfigError(key, f"must be a positive integer, got {value!r}")
    data = language_config(cfg)
    theta, scaling = _rope(data)
    window = spec.sliding_window or None
    kinds = tuple(_KIND_NAMES[k] for k in spec.layer_types)
    if not set(kinds) <= {FULL, SLIDING}:
        raise UnsupportedArchitecture(
            "layer_types", f"{sorted(set(kinds) - {FULL, SLIDING})} layers are not supported"
        )
    bias = bool(data.get("attention_bias", False))
    return ModelArgs(
        architecture=arch,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.head_dim,
        vocab_size=spec.vocab_size,
        rms_norm_eps=float(data.get("rms_norm_eps", 1e-6)),
        rope_theta=theta,
        rope_scaling=scaling,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=spec.tie_word_embeddings,
        sliding_window=window,
        attention_bias=(bias and arch == "llama") or arch == "qwen2",
        o_proj_bias=bias and arch == "llama",
        mlp_bias=bool(data.get("mlp_bias", False)) and arch == "llama",
        torch_dtype=data.get("torch_dtype") or data.get("dtype"),
        layer_types=kinds if window is not None else (),
    )
