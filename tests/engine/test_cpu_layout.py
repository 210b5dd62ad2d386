"""The CPU decode step's cheaper forms give the numbers of the plain ones: weights stored
input-major (``engine.model.llama.input_major``) give ``F.linear``'s products on row-major
weights to float rounding, and RoPE over the step's
tables (``_RopeTables.rotate_qk``) equals ``rotate`` bit for bit."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from engine.model import ModelArgs
from engine.model.llama import (
    MLP,
    ROLL_ROWS,
    Attention,
    _RopeTables,
    fused_weights,
    input_major,
)
from engine.model.rope import RotaryEmbedding, rotate

ARGS = ModelArgs.from_hf(
    {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 16,
    }
)


def test_an_input_major_weight_keeps_its_values_name_and_products():
    torch.manual_seed(0)
    linear = nn.Linear(64, 40, bias=True)
    rows = linear.weight.detach().clone()
    x = torch.randn(7, 64)
    with torch.no_grad():
        expected = F.linear(x, rows, linear.bias)
    weight = input_major(linear)
    assert weight is linear.weight and weight.shape == (40, 64)
    assert weight.stride() == (1, 40)  # the [in, out] storage, seen as [out, in]
    assert torch.equal(weight, rows)
    # The BLAS may sum in another order for this layout: float rounding apart at most.
    with torch.no_grad():
        got = F.linear(x, weight, linear.bias)
    assert float((got - expected).abs().max()) <= 1e-5
    assert input_major(linear) is weight  # once: the second call rebinds nothing
    assert [name for name, _ in linear.named_parameters()] == ["weight", "bias"]
    # A new tensor (a load, a shard) is laid out again.
    linear.weight = nn.Parameter(torch.randn(40, 64))
    assert input_major(linear).stride() == (1, 40)


def test_fused_projections_are_input_major_slices_of_one_weight():
    torch.manual_seed(1)
    mlp = MLP(ARGS)
    x = torch.randn(5, ARGS.hidden_size)
    gate = F.linear(x, mlp.gate_proj.weight.detach().clone())
    up = F.linear(x, mlp.up_proj.weight.detach().clone())
    weight, _ = fused_weights(mlp, ("gate_proj", "up_proj"))
    assert weight.stride() == (1, 2 * ARGS.intermediate_size)
    assert mlp.up_proj.weight.data_ptr() == weight.data_ptr() + ARGS.intermediate_size * 4
    fused = F.linear(x, weight)
    assert float((fused - torch.cat([gate, up], dim=-1)).abs().max()) <= 1e-5


@pytest.mark.parametrize("rows", [5, ROLL_ROWS, 40])  # halves swapped by flip, then roll
def test_rope_over_the_step_tables_equals_rotate_bit_for_bit(rows):
    torch.manual_seed(2)
    rotary = RotaryEmbedding(ARGS)
    d, hq, hkv = ARGS.head_dim, ARGS.num_attention_heads, ARGS.num_key_value_heads
    positions = torch.randint(0, 300, (rows,))
    qkv = torch.randn(rows, (hq + 2 * hkv) * d)
    before = qkv.clone()
    tables = _RopeTables(rotary, positions, qkv.dtype)
    got = tables.rotate_qk(qkv, hq + hkv, d)
    cos, sin = rotary.cos_sin(positions, qkv.dtype)
    want = rotate(qkv[:, : (hq + hkv) * d].view(rows, hq + hkv, d), cos, sin)
    assert torch.equal(got, want)
    assert torch.equal(qkv, before)  # out of place: the sinks' queries read it unrotated


def test_attention_projections_are_laid_out_on_the_first_forward():
    attn = Attention(ARGS, 0)
    assert attn.o_proj.weight.is_contiguous()
    input_major(attn.o_proj)
    assert not attn.o_proj.weight.is_contiguous()
