"""The visibility rule every attention backend and oracle shares, and the fp8 KV format.

A query at cache position ``i`` sees key ``j`` iff ``j <= i`` and, with a sliding window
``W`` and ``S`` sink tokens, ``j < S or i - j < W - S`` (see ``engine.kernels.reference``).
"""

from __future__ import annotations

import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8_DTYPE).max)  # 448.0

__all__ = ["FP8_DTYPE", "FP8_MAX", "visibility_mask"]


def visibility_mask(
    q_pos: torch.Tensor, k_pos: torch.Tensor, window: int | None, sinks: int
) -> torch.Tensor:
    """Boolean ``q_pos[..., None]`` x ``k_pos[None]`` style mask (broadcasting), as above."""
    visible = k_pos <= q_pos
    if window is not None:
        if window <= sinks:
            raise ValueError(f"sliding window {window} must exceed sink tokens {sinks}")
        visible = visible & ((k_pos < sinks) | (q_pos - k_pos < window - sinks))
    return visible
