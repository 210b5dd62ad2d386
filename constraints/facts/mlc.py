"""MLC LLM's own model config, `mlc-chat-config.json`, read as model facts.

The file names the model family (`model_type`), its weight format (`quantization`, an
MLC name such as `q4f16_1`: quant.py `MLC_QUANTIZATIONS`) and the shape under
`model_config` (Hugging Face key names, with `context_window_size` as the context). The
shape goes through the same reader as a config.json (model.py); the quantization fixes
the compute dtype and the bytes of the weights as MLC stores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from . import quant as q
from .errors import MissingKeys, SpecError
from .layers import name
from .model import MLC_FILE_NAME as FILE_NAME
from .model import ModelSpec, is_mlc_chat_config, read_hf

# MLC model_type -> the Hugging Face architecture it stands for
ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3": "Gemma3ForCausalLM",
    "rwkv5": "Rwkv5ForCausalLM",
    "rwkv6": "Rwkv6ForCausalLM",
    "deepseek_v2": "other",
}


def _size(data: Mapping[str, Any], key: str, source: str) -> int:
    """A size MLC may leave at -1 (unset): an int, 0 when absent."""
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"expected an int, got {value!r}", source=source, key=key, value=value)
    return value


def read_mlc_chat_config(data: Mapping[str, Any], source: str = FILE_NAME) -> ModelSpec:
    """A `ModelSpec` from an `mlc-chat-config.json` dict."""
    missing = tuple(k for k in ("model_type", "quantization", "model_config") if k not in data)
    if missing:
        raise MissingKeys("mlc-chat-config", missing, source=source)
    quant = q.read_mlc(data["quantization"], source)
    model_type = name(data["model_type"], "model_type", source)
    if not isinstance(data["model_config"], Mapping):
        raise SpecError(
            f"expected an object, got {data['model_config']!r}",
            source=source,
            key="model_config",
            value=data["model_config"],
        )
    cfg = dict(data["model_config"])
    cfg.setdefault("model_type", model_type)
    cfg.setdefault("architectures", [ARCHITECTURES.get(model_type, "other")])
    context = _size(cfg, "context_window_size", source) or _size(
        data, "context_window_size", source
    )
    if context > 0:
        cfg.setdefault("max_position_embeddings", context)
    window = _size(data, "sliding_window_size", source) or _size(cfg, "sliding_window_size", source)
    if window > 0:
        cfg.setdefault("sliding_window", window)
    cfg.setdefault("vocab_size", data.get("vocab_size"))
    cfg["torch_dtype"] = quant.model_dtype or "float16"
    spec = read_hf(cfg, source)
    return replace(spec, quant=quant)


__all__ = ["ARCHITECTURES", "FILE_NAME", "is_mlc_chat_config", "read_mlc_chat_config"]
