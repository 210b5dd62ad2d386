"""The fused decoder kernels (``engine.kernels.fused``) against the torch path they replace.

They run on CUDA; without a GPU, Triton's interpreter runs them on CPU tensors (the
conftest sets ``TRITON_INTERPRET=1`` when Triton is importable). Tolerances: float32 within
1e-5 relative (only the order of float32 sums, fused multiply-adds and libm exp differ;
RoPE reads the same cos/sin tables as the torch path); float16 and bfloat16 within one
rounding step of the dtype at the value's magnitude (the kernels round wherever the torch
path stores an intermediate in the dtype, so only those float32 differences can move a
result to the neighbouring representable value); the new residual stream and RoPE, whose
products and sums of two half-precision values are exact in float32 and rounded once in
both, are bit-identical. Under the interpreter (no GPU) a
float32 -> bfloat16 conversion truncates instead of rounding to nearest (measured with
Triton 3.9), so there bfloat16 is allowed one step per rounding in the kernel: 3 steps.
"""

from __future__ import annotations

import os

import pytest
import torch

from engine import LLM, SamplingParams
from engine.kernels import fused
from engine.kernels.triton_paged import triton_available
from engine.model import llama
from engine.model.config import ModelArgs
from engine.model.rope import RotaryEmbedding, rotate
from engine.model.testing import make_tiny_model_dir

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1" and triton_available()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    not ((torch.cuda.is_available() and triton_available()) or INTERPRET),
    reason="the fused kernels need CUDA (or TRITON_INTERPRET=1 with Triton installed)",
)
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
ON_GPU = torch.cuda.is_available()


def _steps(dtype: torch.dtype) -> int:
    """Rounding steps of ``dtype`` allowed (see the module docstring)."""
    return 3 if dtype == torch.bfloat16 and not ON_GPU else 1


def _close(out: torch.Tensor, ref: torch.Tensor) -> None:
    """Equal within the tolerance of the module docstring."""
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if ref.dtype == torch.float32:
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        return
    o, r = out.float(), ref.float()
    step = torch.finfo(ref.dtype).eps * torch.exp2(
        torch.floor(torch.log2(r.abs().clamp_min(1e-30)))
    )
    tiny = torch.finfo(ref.dtype).tiny
    bad = (o - r).abs() > _steps(ref.dtype) * step + tiny
    assert not bad.any(), f"{int(bad.sum())} values off by more than one rounding step"


def _rand(gen: torch.Generator, *shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, generator=gen).to(DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("with_residual", [False, True])
def test_add_rms_norm_matches_torch(dtype, with_residual):
    gen = torch.Generator().manual_seed(1)
    x, res = _rand(gen, 5, 96, dtype=dtype), _rand(gen, 5, 96, dtype=dtype)
    weight = (1 + 0.1 * _rand(gen, 96, dtype=torch.float32)).to(dtype)
    residual = res if with_residual else None
    out, new_res = fused.add_rms_norm(x, residual, weight, 1e-6)
    ref_out, ref_res = fused.add_rms_norm_reference(x, residual, weight, 1e-6)
    if _steps(dtype) == 1:
        assert torch.equal(new_res, ref_res)
    else:
        _close(new_res, ref_res)
    _close(out, ref_out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu_mul_matches_torch(dtype):
    gen = torch.Generator().manual_seed(2)
    gate_up = 3 * _rand(gen, 4, 2 * 80, dtype=dtype)
    _close(fused.silu_mul(gate_up), fused.silu_mul_reference(gate_up))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rope_scaling", [None, {"rope_type": "linear", "factor": 2.0}])
def test_rope_in_place_matches_rotate(dtype, rope_scaling):
    gen = torch.Generator().manual_seed(3)
    n, heads, extra, dim = 6, 3, 2, 32  # q and k heads first, then two untouched heads
    args = ModelArgs(
        architecture="LlamaForCausalLM", hidden_size=heads * dim, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=heads, num_key_value_heads=heads, vocab_size=16,
        head_dim=dim, rope_scaling=rope_scaling,
    )  # fmt: skip
    positions = torch.tensor([0, 1, 7, 100, 2047, 40000], device=DEVICE)
    cos, sin = RotaryEmbedding(args).cos_sin(positions, dtype)
    qkv = _rand(gen, n, (heads + extra) * dim, dtype=dtype)
    before = qkv.clone()
    ref = rotate(before[:, : heads * dim].view(n, heads, dim), cos, sin)
    assert torch.equal(
        ref, fused.rope_reference(before[:, : heads * dim].view(n, heads, dim), cos, sin)
    )
    fused.rope_(qkv, cos, sin, num_heads=heads, head_dim=dim)
    assert torch.equal(qkv[:, heads * dim :], before[:, heads * dim :])  # the rest untouched
    out = qkv[:, : heads * dim].view(n, heads, dim)
    if dtype == torch.float32:
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    elif _steps(dtype) == 1:
        # Each product of two half-precision values is exact in float32 and rounded once,
        # as torch does: bit-identical.
        assert torch.equal(out, ref)
    else:  # interpreter bf16: three truncations, each below one step at the largest |x|
        step = torch.finfo(dtype).eps * 2 * before.float().abs().max()
        assert (out.float() - ref.float()).abs().max() <= 3 * step


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("hq", "hkv", "dim"), [(4, 2, 32), (3, 1, 16), (2, 2, 64)])
def test_rope_store_equals_rope_then_store(dtype, hq, hkv, dim):
    """One kernel for RoPE on q and k and the K/V store: bit for bit the two kernels it
    replaces (``rope_`` then ``triton_paged.store_kv``), slot -1 rows not written."""
    from engine.kernels import triton_paged

    gen = torch.Generator().manual_seed(hq * 10 + dim)
    n, bs, blocks = 7, 4, 5
    args = ModelArgs(
        architecture="LlamaForCausalLM", hidden_size=hq * dim, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=hq, num_key_value_heads=hkv,
        vocab_size=16, head_dim=dim,
    )  # fmt: skip
    positions = torch.tensor([0, 3, 9, 17, 100, 2047, 5], device=DEVICE)
    cos, sin = RotaryEmbedding(args).cos_sin(positions, dtype)
    qkv = _rand(gen, n, (hq + 2 * hkv) * dim + 8, dtype=dtype)[:, 8:]  # rows strided
    pool = _rand(gen, 2, blocks, bs, hkv, dim, dtype=dtype)
    slots = torch.tensor([3, 0, -1, 19, 7, -1, 12], device=DEVICE)
    before_qkv, before_pool = qkv.clone(), pool.clone()
    want_qkv, want_pool = qkv.clone(), pool.clone()
    fused.rope_(want_qkv, cos, sin, num_heads=hq + hkv, head_dim=dim)
    key = want_qkv[:, hq * dim : (hq + hkv) * dim].view(n, hkv, dim)
    value = want_qkv[:, (hq + hkv) * dim :].view(n, hkv, dim)
    triton_paged.store_kv(key, value, want_pool, slots)
    fused.rope_store_(
        qkv, cos, sin, pool, slots, num_heads=hq, num_kv_heads=hkv, head_dim=dim
    )  # fmt: skip
    assert torch.equal(qkv, want_qkv)
    assert torch.equal(pool, want_pool)
    # both did something: keys rotated, five slots written (two rows skipped)
    assert not torch.equal(qkv[:, : (hq + hkv) * dim], before_qkv[:, : (hq + hkv) * dim])
    flat, old = pool.view(2, -1, hkv, dim), before_pool.view(2, -1, hkv, dim)
    changed = (flat != old).flatten(2).any(-1).any(0).nonzero().flatten().tolist()
    assert changed == sorted(s for s in slots.tolist() if s >= 0)


def test_rope_store_refuses_rows_without_v_heads():
    qkv = torch.zeros(2, 3 * 16, device=DEVICE)
    pool = torch.zeros(2, 2, 4, 1, 16, device=DEVICE)
    with pytest.raises(ValueError, match="fewer than q, k and v heads"):
        fused.rope_store_(
            qkv, qkv[:, :16], qkv[:, :16], pool, torch.zeros(2, dtype=torch.long),
            num_heads=2, num_kv_heads=1, head_dim=16,
        )  # fmt: skip


@pytest.mark.slow  # ~30 s under the interpreter; on a GPU gpu_checks runs it in seconds
def test_fused_model_keeps_greedy_tokens(tmp_path, monkeypatch):
    """A whole model with the fused kernels forced on (the interpreter on CPU) gives the
    unfused model's greedy tokens in float32."""
    path = make_tiny_model_dir(tmp_path / "m", "llama", seed=4, num_hidden_layers=2)
    llm = LLM(path, device=DEVICE, dtype="float32", max_batch_size=2)
    prompts = [[5, 6, 7, 8, 9, 10, 11], [40, 41, 42]]
    params = SamplingParams(max_tokens=4, ignore_eos=True)
    llm.model.fused_ops = False
    unfused = [o.token_ids for o in llm.generate(prompts, params)]
    calls = []
    real = fused.add_rms_norm

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(llama, "fused_supported", lambda x: True)
    monkeypatch.setattr(llama, "add_rms_norm", counted)
    llm.model.fused_ops = True
    assert [o.token_ids for o in llm.generate(prompts, params)] == unfused
    assert calls, "the fused path did not run"
    llm.runtime.kv.check_valid()


def test_fused_model_on_the_triton_backend_stores_kv_with_rope(tmp_path, monkeypatch):
    """The fused path on a Triton backend (the interpreter on CPU): RoPE and the K/V store
    run as one kernel in every layer of prompt and mixed steps, and decode steps rotate,
    store and attend in one kernel; the greedy tokens equal the unfused model's on the
    reference backend (float32)."""
    from engine.kernels import select, triton_paged

    path = make_tiny_model_dir(tmp_path / "m", "llama", seed=6, num_hidden_layers=1)
    kw = dict(device=DEVICE, dtype="float32", max_batch_size=2)
    prompts = [[5, 6, 7, 8, 9, 10, 11], [40, 41, 42], list(range(50, 70))]
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in (2, 5, 3)]
    plain = LLM(path, **kw)
    plain.model.fused_ops = False
    want = [o.token_ids for o in plain.generate(prompts, params)]
    calls, decodes = [], []
    real, real_decode = fused.rope_store_, triton_paged.paged_decode_rope_store

    def counted(*args, **kwargs):
        calls.append(args[0].shape[0])
        return real(*args, **kwargs)

    def counted_decode(*args, **kwargs):
        decodes.append(args[0].shape[0])
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(llama, "rope_store_", counted)
    monkeypatch.setattr(triton_paged, "paged_decode_rope_store", counted_decode)
    if not ON_GPU:
        monkeypatch.setattr(llama, "fused_supported", lambda x: True)
        monkeypatch.setattr(fused, "store_fusable", lambda qkv, kv: kv.dtype == qkv.dtype)
        monkeypatch.setattr(triton_paged, "supports", lambda kv, q, prefill: not prefill)
    llm = LLM(path, **kw)
    llm.model.backend = select.AttentionBackend(decode=select.TRITON)
    llm.model.fused_ops = True
    assert [o.token_ids for o in llm.generate(prompts, params)] == want
    # the two first prompts (10 rows), then the mixed step of the third prompt (20 rows)
    # with the second's decode row; the decode steps (2 rows each) in the one kernel
    assert calls == [10, 21], calls
    assert decodes == [2, 2, 2], decodes
    assert triton_paged.rope_store_failure() is None
    llm.runtime.kv.check_valid()


def test_switch_reads_the_environment(monkeypatch):
    monkeypatch.setenv(fused.ENV_SWITCH, "0")
    assert not fused.fused_default()
    monkeypatch.setenv(fused.ENV_SWITCH, "1")
    assert fused.fused_default()
    monkeypatch.delenv(fused.ENV_SWITCH)
    assert not fused.fused_default()  # off until the kernels have passed on a GPU


def test_fused_supported_only_on_cuda():
    assert not fused.fused_supported(torch.zeros(2, 4))
