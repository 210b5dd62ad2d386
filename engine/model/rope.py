"""Rotary position embedding: inverse frequencies for each supported scaling type.

The math follows the Hugging Face definitions (non-interleaved halves, frequencies in
float32) so that logits match ``transformers`` exactly in float32.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import ModelArgs


def _base_inv_freq(base: float, dim: int, device=None) -> torch.Tensor:
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    return 1.0 / (base**exponents)


def rope_inv_freq(
    args: ModelArgs, seq_len: int | None = None, device=None
) -> tuple[torch.Tensor, float]:
    """``(inv_freq[head_dim // 2], attention_scaling)`` for ``args``.

    ``seq_len`` only matters for ``dynamic`` (NTK) scaling, whose base grows once the
    sequence passes ``max_position_embeddings``.
    """
    dim = args.head_dim
    base = args.rope_theta
    p = args.rope_scaling or {"rope_type": "default"}
    kind = p["rope_type"]
    if kind == "default":
        return _base_inv_freq(base, dim, device), 1.0
    if kind == "linear":
        return _base_inv_freq(base, dim, device) / p["factor"], 1.0
    if kind == "dynamic":
        max_pos = args.max_position_embeddings
        length = max(seq_len or max_pos, max_pos)
        factor = p["factor"]
        base = base * ((factor * length / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return _base_inv_freq(base, dim, device), 1.0
    if kind == "llama3":
        return _llama3(p, _base_inv_freq(base, dim, device)), 1.0
    if kind == "yarn":
        return _yarn(args, p, base, dim, device)
    raise ValueError(f"unsupported rope_type {kind!r}")


def _llama3(p: dict, inv_freq: torch.Tensor) -> torch.Tensor:
    # Long wavelengths are divided by ``factor``, short ones kept, and the band between
    # the two cut-offs blends the two linearly in 1 / wavelength.
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old_len = p["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(medium, blended, scaled)


def _yarn(args: ModelArgs, p: dict, base: float, dim: int, device) -> tuple[torch.Tensor, float]:
    old_len = p["original_max_position_embeddings"]
    factor = p.get("factor") or args.max_position_embeddings / old_len

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = p.get("attention_factor")
    if attention is None:
        if p.get("mscale") and p.get("mscale_all_dim"):
            attention = mscale(factor, p["mscale"]) / mscale(factor, p["mscale_all_dim"])
        else:
            attention = mscale(factor)

    def correction_dim(rotations: float) -> float:
        # Dimension whose wavelength completes ``rotations`` turns over the old context.
        return dim * math.log(old_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = correction_dim(p.get("beta_fast") or 32)
    high = correction_dim(p.get("beta_slow") or 1)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    keep = (1 - ramp).to(device)  # 1 = keep the original frequency (extrapolate)
    freqs = base ** (torch.arange(0, dim, 2, device=device).float() / dim)
    inv_freq = (1.0 / (factor * freqs)) * (1 - keep) + (1.0 / freqs) * keep
    return inv_freq, float(attention)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x[N, H, D]`` by per-token ``cos``/``sin`` ``[N, D]`` (halves layout)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class RotaryEmbedding(nn.Module):
    """Holds the inverse frequencies; ``cos_sin(positions)`` gives ``[N, head_dim]`` tables."""

    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.args = args
        # A plain float32 tensor, not a buffer: ``model.to(bfloat16)`` must not round it.
        self.inv_freq = torch.empty(0)
        self.attention_scaling = 1.0
        self.reset()

    def reset(self, seq_len: int | None = None) -> None:
        with torch.device("cpu"):  # real numbers even while the model is built on "meta"
            self.inv_freq, self.attention_scaling = rope_inv_freq(self.args, seq_len)
        self._seq_len = seq_len

    def cos_sin(
        self, positions: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        scaling = self.args.rope_scaling
        if scaling is not None and scaling["rope_type"] == "dynamic":
            # Like transformers: the base follows the longest position seen in this call.
            length = int(positions.max()) + 1 if positions.numel() else 0
            wanted = length if length > self.args.max_position_embeddings else None
            if wanted != self._seq_len:
                self.reset(wanted)
        if self.inv_freq.device != positions.device:
            self.inv_freq = self.inv_freq.to(positions.device)
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype), sin.to(dtype)
