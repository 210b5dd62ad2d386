"""Llama-family decoder (Llama, Mistral, Qwen2) over a packed batch and the paged KV pool.

Tensor-parallel sharding (done by ``engine.parallel.shard``, which also sets the
``tp_reduce`` all-reduce of ``Attention`` and ``MLP``): ``q_proj``, ``k_proj``,
``v_proj``, ``gate_proj`` and ``up_proj`` are column-parallel (split the output features by
whole heads, or by intermediate rows), ``o_proj`` and ``down_proj`` are row-parallel (split
the input features the same way, then all-reduce). The projections stay separate, with the
checkpoint's own names, so each shard is a plain slice of one checkpoint tensor.

Positions and StreamingLLM: ``positions`` are cache positions, which for our block tables
equal the token's index in its sequence. K is rotated at its own position before it is
stored. With ``S`` sink tokens and window ``W``, a sink key is scored with the query rotated
at ``min(i, W - 1)`` ("positions within the cache": the sinks sit right before the window),
while window keys keep their distance ``i - j``; see ``engine.kernels.reference``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from engine.kernels import AttentionBackend, AttentionMetadata, effective_window
from engine.kernels.fused import (
    add_rms_norm,
    fused_default,
    fused_supported,
    rms_norm_reference,
    rope_,
    rope_store_,
    silu_mul,
)

from .config import ModelArgs
from .rope import RotaryEmbedding, rotate

# Rows from which RoPE swaps the halves with ``roll`` rather than ``flip`` (one thread:
# 22 against 38 us at 64 rows of 12 heads, 11 against 15 at 16, 9.6 against 6.9 at one).
ROLL_ROWS = 8


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 statistics whatever the model dtype, as the checkpoints were trained
        return rms_norm_reference(x, self.weight, self.eps)


def fused_weights(
    module: nn.Module, names: tuple[str, ...]
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One weight (and bias) for the projections ``names`` of ``module``, which read the
    same input: one matrix product instead of several, which is most of a small model's
    per-step cost on a CPU.

    The first call concatenates the weights and rebinds each projection's parameter to its
    slice of the result, so no memory is duplicated and the checkpoint names stay. Later
    calls check that the parameters are still those slices; a projection that got a new
    tensor (sharding, ``to()``, ``to_empty``) is fused again. On a CPU the fused weight is
    stored input-major (see :func:`input_major`).
    """
    modules = module._modules  # not getattr: Module.__getattr__ is slow, and this runs per step
    linears: list[Any] = [modules[name] for name in names]
    cached = module.__dict__.get("_fused_" + names[0])
    if cached is not None:
        weight, bias, ptrs = cached
        now = tuple(_ptrs(lin) for lin in linears)
        if now == ptrs:
            return weight, bias
    with torch.inference_mode(False), torch.no_grad():
        weight = _store(torch.cat([lin.weight for lin in linears]))
        have_bias = [lin.bias is not None for lin in linears]
        bias = None
        if any(have_bias):
            bias = torch.cat([_bias_or_zeros(lin) for lin in linears])
        start = 0
        for lin in linears:
            rows = lin.weight.shape[0]
            lin.weight = nn.Parameter(weight[start : start + rows], lin.weight.requires_grad)
            if lin.bias is not None and bias is not None:
                lin.bias = nn.Parameter(bias[start : start + rows], lin.bias.requires_grad)
            start += rows
    # A projection without a bias gets zeros in the fused one: the same result.
    module.__dict__["_fused_" + names[0]] = (weight, bias, tuple(_ptrs(lin) for lin in linears))
    return weight, bias


def input_major(linear: nn.Linear) -> torch.Tensor:
    """``linear``'s weight, rebound (once; again after it gets a new tensor) to a view of
    an input-major copy on a CPU, and returned.

    A weight ``[out, in]`` stored row by row makes ``F.linear`` a product with the
    transposed matrix; stored as ``[in, out]`` (the parameter a transposed view of it, same
    shape and names), the product reads it as it lies. The two agree to float rounding
    (bit for bit at the benchmark model's batch-16 and batch-64 shapes; a few ulps apart
    at some others, where the BLAS sums in another order); when the weights come from L3
    or memory, as in every step of a model larger than the L2 cache, the second is
    faster: about 25% less time in the products of four layers of the benchmark model at
    batch 16 and 30% at batch 64, one thread, with the L2 cache flushed between layers.
    Elsewhere than on a CPU the weight is left as it is.
    """
    weight = linear._parameters["weight"]
    assert weight is not None
    if not weight.is_cpu or weight.dim() != 2 or _is_input_major(weight):
        return weight
    with torch.inference_mode(False), torch.no_grad():
        linear.weight = nn.Parameter(_store(weight.detach()), weight.requires_grad)
    return linear.weight


def _store(weight: torch.Tensor) -> torch.Tensor:
    """``weight[out, in]`` with the same values, input-major in memory on a CPU."""
    if weight.device.type != "cpu":
        return weight.contiguous()
    return weight.t().contiguous().t()


def _is_input_major(weight: torch.Tensor) -> bool:
    return weight.stride(0) == 1 and weight.stride(1) >= weight.shape[0]


def _bias_or_zeros(linear: nn.Linear) -> torch.Tensor:
    bias = linear.bias
    return bias if bias is not None else linear.weight.new_zeros(linear.weight.shape[0])


def _ptrs(linear: nn.Module) -> tuple[int, int]:
    # Straight from the parameter dict: this runs for every projection of every step.
    params = linear._parameters
    weight, bias = params["weight"], params.get("bias")
    assert weight is not None
    return weight.data_ptr(), -1 if bias is None else bias.data_ptr()


class Attention(nn.Module):
    def __init__(self, args: ModelArgs, layer: int) -> None:
        super().__init__()
        d, hq, hkv = args.head_dim, args.num_attention_heads, args.num_key_value_heads
        self.head_dim, self.num_heads, self.num_kv_heads = d, hq, hkv
        self.q_proj = nn.Linear(args.hidden_size, hq * d, bias=args.attention_bias)
        self.k_proj = nn.Linear(args.hidden_size, hkv * d, bias=args.attention_bias)
        self.v_proj = nn.Linear(args.hidden_size, hkv * d, bias=args.attention_bias)
        self.o_proj = nn.Linear(hq * d, args.hidden_size, bias=args.o_proj_bias)
        self.window = args.layer_window(layer)
        # Tensor parallelism (engine.parallel.shard): sums o_proj's partial output.
        self.tp_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None
        # Static fp8 KV scales for this layer (used only by an fp8 pool).
        self.k_scale = 1.0
        self.v_scale = 1.0

    def forward(
        self,
        x: torch.Tensor,
        rope: _RopeTables,
        kv_layer: torch.Tensor,
        meta: AttentionMetadata,
        backend: AttentionBackend,
    ) -> torch.Tensor:
        n, d, hq = x.shape[0], self.head_dim, self.num_heads
        weight, bias = fused_weights(self, ("q_proj", "k_proj", "v_proj"))
        qkv = F.linear(x, weight, bias)
        window = effective_window(self.window, meta.sliding_window)
        sink_query = None
        if meta.sink_tokens > 0 and window is not None:
            sink_cos, sink_sin = rope.clamped(window)
            sink_query = rotate(qkv[:, : hq * d].view(n, hq, d), sink_cos, sink_sin)
        out = self._rotate_attend(qkv, rope, kv_layer, meta, backend, window, sink_query)
        out = F.linear(out.reshape(n, hq * d), input_major(self.o_proj), self.o_proj.bias)
        return out if self.tp_reduce is None else self.tp_reduce(out)

    def _rotate_attend(self, qkv, rope, kv_layer, meta, backend, window, sink_query):
        """RoPE, the K/V store and attention of the step's ``qkv`` rows (the timer's
        "attention" phase: the store and attention). Queries and keys are rotated
        together (one rotation per layer, not two); with the fused kernels on a Triton
        backend one kernel rotates and stores, and in a decode step the decode kernel
        itself rotates, stores and attends."""
        n, d, hq, hkv = qkv.shape[0], self.head_dim, self.num_heads, self.num_kv_heads
        if rope.fused and backend.fuses_decode(qkv, kv_layer, meta, hq // hkv):
            cos, sin = rope.plain
            kw = dict(num_heads=hq, num_kv_heads=hkv, head_dim=d, sliding_window=window)
            args = (qkv, cos, sin, kv_layer, meta)
            if meta.timer is None:
                return backend.decode_rope_store(*args, sink_query=sink_query, **kw)
            with meta.timer.phase("attention"):
                return backend.decode_rope_store(*args, sink_query=sink_query, **kw)
        stored = rope.fused and backend.fuses_store(qkv, kv_layer)
        if stored:
            cos, sin = rope.plain
            rope_store_(
                qkv, cos, sin, kv_layer, meta.slot_mapping,
                num_heads=hq, num_kv_heads=hkv, head_dim=d,
            )  # fmt: skip
            qk = qkv[:, : (hq + hkv) * d].view(n, hq + hkv, d)
        else:
            qk = rope.rotate_qk(qkv, hq + hkv, d)
        q, k = qk[:, :hq], qk[:, hq:]
        v = qkv[:, (hq + hkv) * d :].view(n, hkv, d)
        args = (q, k, v, kv_layer, meta, backend, window, sink_query, stored)
        if meta.timer is None:
            return self._attend(*args)
        with meta.timer.phase("attention"):
            return self._attend(*args)

    def _attend(
        self, q, k, v, kv_layer, meta, backend, window, sink_query, stored=False
    ) -> torch.Tensor:
        if not stored:  # else the RoPE kernel stored them
            backend.store_kv(
                k,
                v,
                kv_layer,
                meta.slot_mapping,
                self.k_scale,
                self.v_scale,
                all_stored=meta.stores_every_token(),
            )
        return backend.attention(
            q,
            kv_layer,
            meta,
            sliding_window=window,
            sink_query=sink_query,
            k_scale=self.k_scale,
            v_scale=self.v_scale,
            key=k,
            value=v,
        )


class MLP(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        h, i, bias = args.hidden_size, args.intermediate_size, args.mlp_bias
        self.gate_proj = nn.Linear(h, i, bias=bias)
        self.up_proj = nn.Linear(h, i, bias=bias)
        self.down_proj = nn.Linear(i, h, bias=bias)
        self.tp_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None  # as Attention's

    def forward(self, x: torch.Tensor, fused: bool = False) -> torch.Tensor:
        gate_up = F.linear(x, *fused_weights(self, ("gate_proj", "up_proj")))
        if fused:  # one kernel for silu(gate) * up (engine.kernels.fused)
            act = silu_mul(gate_up)
        else:
            gate, up = gate_up.chunk(2, dim=-1)
            act = F.silu(gate).mul_(up)  # silu's output is fresh: no second buffer
        out = F.linear(act, input_major(self.down_proj), self.down_proj.bias)
        return out if self.tp_reduce is None else self.tp_reduce(out)


class DecoderLayer(nn.Module):
    def __init__(self, args: ModelArgs, layer: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(args.hidden_size, args.rms_norm_eps)
        self.self_attn = Attention(args, layer)
        self.post_attention_layernorm = RMSNorm(args.hidden_size, args.rms_norm_eps)
        self.mlp = MLP(args)

    def forward(self, x, rope, kv_layer, meta, backend):
        # The residual adds go into the sublayers' fresh outputs (a + b == b + a exactly).
        x = self.self_attn(self.input_layernorm(x), rope, kv_layer, meta, backend).add_(x)
        return self.mlp(self.post_attention_layernorm(x)).add_(x)

    def forward_fused(self, x, residual, rope, kv_layer, meta, backend):
        """The same layer with each residual add fused into the next RMSNorm: takes the
        previous layer's output ``x`` and the residual stream before it (None in the first
        layer), returns this layer's output and the stream before it."""
        norm1, norm2 = self.input_layernorm, self.post_attention_layernorm
        h, residual = add_rms_norm(x, residual, norm1.weight, norm1.eps)
        h = self.self_attn(h, rope, kv_layer, meta, backend)
        h, residual = add_rms_norm(h, residual, norm2.weight, norm2.eps)
        return self.mlp(h, fused=True), residual


class _RopeTables:
    """cos/sin for one step: at the positions, and (lazily, per window) at the positions
    clamped to ``W - 1`` for scoring sink keys. ``fused``: queries and keys are rotated in
    place by one kernel over the tables (``engine.kernels.fused.rope_``)."""

    def __init__(
        self,
        rotary: RotaryEmbedding,
        positions: torch.Tensor,
        dtype: torch.dtype,
        fused: bool = False,
    ):
        self.rotary, self.positions, self.dtype, self.fused = rotary, positions, dtype, fused
        self.plain = rotary.cos_sin(positions, dtype)
        self._clamped: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        if not fused:
            # Once per step for every layer: cos as [N, 1, D], and sin with its first half
            # negated as [N, 1, 2, D / 2], so a layer rotates with one swap of the two
            # halves and three arithmetic ops (the same products and sum as ``rotate``:
            # ``-a * s == a * -s`` exactly).
            cos, sin = self.plain
            n, dim = sin.shape
            half = dim // 2
            self._cos = cos[:, None, :].contiguous()
            signed = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)
            self._sin = signed.view(n, 1, 2, half)

    def rotate_qk(self, qkv: torch.Tensor, heads: int, head_dim: int) -> torch.Tensor:
        """The first ``heads`` heads of each row of ``qkv[N, width]`` rotated at the
        positions, as ``[N, heads, head_dim]`` (fused: in place, a view of ``qkv``)."""
        n = qkv.shape[0]
        if self.fused:
            rope_(qkv, *self.plain, num_heads=heads, head_dim=head_dim)
            return qkv[:, : heads * head_dim].view(n, heads, head_dim)
        x = qkv[:, : heads * head_dim].view(n, heads, head_dim)
        halves = x.view(n, heads, 2, head_dim // 2)
        # The halves swapped (the same values either way): ``roll`` copies them in two
        # slices, ``flip`` element by element; roll costs more only for a few rows.
        swapped = halves.roll(1, 2) if n >= ROLL_ROWS else halves.flip(2)
        swapped = swapped.mul_(self._sin)
        return (x * self._cos).add_(swapped.view(n, heads, head_dim))

    def clamped(self, window: int) -> tuple[torch.Tensor, torch.Tensor]:
        if window not in self._clamped:
            pos = self.positions.clamp(max=window - 1)
            self._clamped[window] = self.rotary.cos_sin(pos, self.dtype)
        return self._clamped[window]


class LlamaModel(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(args, i) for i in range(args.num_hidden_layers))
        self.norm = RMSNorm(args.hidden_size, args.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    """The decoder with its LM head. Parameter names match the HF checkpoints."""

    def __init__(self, args: ModelArgs, backend: AttentionBackend | None = None) -> None:
        super().__init__()
        self.args = args
        self.backend = backend or AttentionBackend()
        self.model = LlamaModel(args)
        self.rotary = RotaryEmbedding(args)
        self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)
        # The fused CUDA kernels (engine.kernels.fused) where they apply; False: the torch
        # ops everywhere (the default; ENGINE_FUSED_OPS=1 turns them on).
        self.fused_ops = fused_default()
        self.tie_weights()

    def tie_weights(self) -> None:
        """Share the embedding with the LM head when the config says so (again after
        ``to_empty``, which gives every parameter its own storage)."""
        if self.args.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def set_kv_scales(self, scales: Sequence[tuple[float, float]]) -> None:
        """Per-layer ``(k_scale, v_scale)`` for an fp8 KV pool."""
        if len(scales) != len(self.model.layers):
            raise ValueError(f"need {len(self.model.layers)} scale pairs, got {len(scales)}")
        for layer, (ks, vs) in zip(self.model.layers, scales, strict=True):
            layer.self_attn.k_scale, layer.self_attn.v_scale = float(ks), float(vs)

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor | None,
        kv_caches: Sequence[torch.Tensor],
        meta: AttentionMetadata,
        *,
        all_logits: bool = False,
    ) -> torch.Tensor:
        """Run one step over the packed ``input_ids[num_tokens]``.

        Stores every new token's K/V in ``kv_caches[layer]`` (the pool, one tensor per
        layer) at ``meta.slot_mapping`` and attends through the block tables. ``positions``
        are the tokens' cache positions (None: derived from ``meta``). Returns logits
        ``[num_seqs, vocab]`` for each sequence's last new token, or ``[num_tokens, vocab]``
        with ``all_logits``.
        """
        if len(kv_caches) != len(self.model.layers):
            raise ValueError(f"need {len(self.model.layers)} KV layers, got {len(kv_caches)}")
        if positions is None:
            positions = meta.query_positions()
        x = self.model.embed_tokens(input_ids)
        if self.fused_ops and fused_supported(x):
            return self._forward_fused(x, positions, kv_caches, meta, all_logits)
        rope = _RopeTables(self.rotary, positions, x.dtype)
        for layer, kv_layer in zip(self.model.layers, kv_caches, strict=True):
            x = layer(x, rope, kv_layer, meta, self.backend)
        if not all_logits and meta.is_prefill:  # decode: every row is a last token
            x = x[meta.last_token_indices()]
        return self._head(self.model.norm(x))

    def _forward_fused(self, x, positions, kv_caches, meta, all_logits) -> torch.Tensor:
        """``forward`` with the fused kernels: residual adds inside the RMSNorms, one RoPE
        kernel for q and k, one SiLU-and-multiply kernel."""
        rope = _RopeTables(self.rotary, positions, x.dtype, fused=True)
        residual = None
        for layer, kv_layer in zip(self.model.layers, kv_caches, strict=True):
            x, residual = layer.forward_fused(x, residual, rope, kv_layer, meta, self.backend)
        if not all_logits and meta.is_prefill:  # decode: every row is a last token
            rows = meta.last_token_indices()
            x = x[rows]
            residual = None if residual is None else residual[rows]
        norm = self.model.norm
        x, _ = add_rms_norm(x, residual, norm.weight, norm.eps)
        return self._head(x)

    def _head(self, x: torch.Tensor) -> torch.Tensor:
        """The LM head's logits; its weight input-major on a CPU unless the embedding (whose
        rows the lookups read) shares it."""
        if self.args.tie_word_embeddings:
            return self.lm_head(x)
        return F.linear(x, input_major(self.lm_head), self.lm_head.bias)
