"""Fused projections: one matrix product for q/k/v and for gate/up, same results as the
separate projections, no duplicated memory, and a projection given new weights is fused
again."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from engine.model import ModelArgs
from engine.model.llama import MLP, fused_weights

ARGS = ModelArgs.from_hf(
    {
        "model_type": "llama",
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 16,
    }
)


def _separate(mlp: MLP, x: torch.Tensor) -> torch.Tensor:
    gate = F.linear(x, mlp.gate_proj.weight)
    up = F.linear(x, mlp.up_proj.weight)
    return F.linear(F.silu(gate) * up, mlp.down_proj.weight)


def test_fused_mlp_equals_separate_projections_and_shares_their_memory():
    torch.manual_seed(0)
    mlp = MLP(ARGS)
    x = torch.randn(5, ARGS.hidden_size)
    expected = _separate(mlp, x)
    with torch.inference_mode():
        got = mlp(x)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    weight, bias = fused_weights(mlp, ("gate_proj", "up_proj"))
    assert bias is None
    assert weight.shape == (2 * ARGS.intermediate_size, ARGS.hidden_size)
    # The parameters are slices of the fused weight: an in-place change shows in both.
    assert mlp.gate_proj.weight.data_ptr() == weight.data_ptr()
    with torch.no_grad():
        mlp.up_proj.weight.mul_(2.0)
    with torch.inference_mode():
        doubled = mlp(x)
    torch.testing.assert_close(doubled, 2.0 * expected, rtol=1e-5, atol=1e-5)
    assert [name for name, _ in mlp.named_parameters()] == [
        "gate_proj.weight",
        "up_proj.weight",
        "down_proj.weight",
    ]


def test_a_projection_given_new_weights_is_fused_again():
    torch.manual_seed(1)
    mlp = MLP(ARGS)
    x = torch.randn(3, ARGS.hidden_size)
    with torch.inference_mode():
        mlp(x)
    mlp.gate_proj.weight = nn.Parameter(torch.randn_like(mlp.gate_proj.weight))
    expected = _separate(mlp, x)
    with torch.inference_mode():
        got = mlp(x)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_a_missing_bias_counts_as_zero_in_the_fused_bias():
    torch.manual_seed(2)
    block = nn.Module()
    block.a = nn.Linear(4, 3, bias=True)
    block.b = nn.Linear(4, 2, bias=False)
    x = torch.randn(6, 4)
    expected = torch.cat([block.a(x), block.b(x)], dim=-1)
    weight, bias = fused_weights(block, ("a", "b"))
    assert bias is not None and bias[3:].eq(0).all()
    torch.testing.assert_close(F.linear(x, weight, bias), expected, rtol=1e-6, atol=1e-6)
