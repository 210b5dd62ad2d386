"""Attention backends over the paged KV pool: a torch reference (CPU and CUDA), a CPU
decode kernel over the decode batch's kept K/V copies (``cpu_decode``, built on first use)
and Triton kernels (CUDA), chosen from the solved plugin config by :func:`select_backend`."""

from __future__ import annotations

from .metadata import AttentionMetadata, effective_window
from .reference import FP8_DTYPE, fp8_scale_for, paged_attention, store_kv, visibility_mask
from .select import AttentionBackend, select_backend
from .triton_paged import triton_available

__all__ = [
    "FP8_DTYPE",
    "AttentionBackend",
    "AttentionMetadata",
    "effective_window",
    "fp8_scale_for",
    "paged_attention",
    "select_backend",
    "store_kv",
    "triton_available",
    "visibility_mask",
]
