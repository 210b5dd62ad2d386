"""Llama-family decoder over the paged KV pool, its config and safetensors loading."""

from __future__ import annotations

from .config import ModelArgs, ModelConfigError, UnsupportedArchitecture
from .llama import LlamaForCausalLM
from .loader import CheckpointError, load_model, load_weights
from .rope import rope_inv_freq

__all__ = [
    "CheckpointError",
    "LlamaForCausalLM",
    "ModelArgs",
    "ModelConfigError",
    "UnsupportedArchitecture",
    "load_model",
    "load_weights",
    "rope_inv_freq",
]
