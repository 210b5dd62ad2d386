"""The Triton paged kernels read a query that is a strided view (the q heads of the fused
qkv projection, rotated in place) without copying it, with the contiguous query's result.

Runs on CUDA, or under Triton's interpreter on CPU (see ``test_kernels_triton``)."""

from __future__ import annotations

import pytest
import torch

from engine.kernels import triton_paged
from tests.engine.test_kernels_oracle import build_case
from tests.engine.test_kernels_triton import DEVICE, _to_cuda, cuda


@cuda
@pytest.mark.parametrize("prefill", [False, True])
def test_strided_query_view_gives_the_contiguous_result(prefill):
    gen = torch.Generator().manual_seed(9)
    qlens = [5, 17, 1, 3] if prefill else [1, 1, 1, 1]
    case = build_case(
        gen, [9, 40, 20, 16], qlens, tokens_per_block=16,
        num_kv_heads=2, group=2, head_dim=32, fill=float("nan"),
    )  # fmt: skip
    t = _to_cuda(case, torch.float32)
    q = t["query"]
    n, hq, d = q.shape
    # q inside a wider row (q, then k and v heads): row stride (hq + 4) * d
    packed = torch.randn(n, (hq + 4) * d, device=DEVICE)
    packed[:, : hq * d] = q.reshape(n, hq * d)
    view = packed[:, : hq * d].view(n, hq, d)
    assert not view.is_contiguous()

    def run(query):
        if prefill:
            return triton_paged.paged_prefill(
                query, t["pool"], t["tables"], t["ctx"], t["qsl"], max_query_len=t["max_q"]
            )
        return triton_paged.paged_decode(query, t["pool"], t["tables"], t["ctx"])

    out = run(view)
    assert out.is_contiguous()
    assert torch.equal(out, run(q))
