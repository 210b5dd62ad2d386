"""Model families as a table: a base reader with the defaults most decoders share, one small
class per family that differs, and `FAMILIES`, keyed by `model_type`.

`Family.read()` turns a config dict (the language model's, model.py `language_config`)
into the values of a `ModelSpec`; model.py `read_hf` looks the family up (`family_of`) and
builds the record. The base reader is a decoder of attention and gated-MLP layers; its
getters are the points where families differ:

- attention: `qkv_bias` / `o_bias` (Qwen2: q, k, v biases always, o never), `qk_norm`
  (Qwen3, Gemma-3, OLMo-2), `query_factor` (Qwen3-Next's gated output doubles the query
  projection), `attention_sinks` (gpt-oss: one learned sink per head); MLA is spelled by
  its keys (`kv_lora_rank` ...), so every DeepSeek-style family reads it;
- layer kinds: `window` (Llama drops a stray `sliding_window`; Qwen2/Qwen3 keep it only
  with `use_sliding_window`) and `own_pattern` (Gemma-2 alternates, Qwen2/Qwen3 slide from
  `max_window_layers`, Llama-4 chunks the RoPE layers); the shared spellings are layers.py;
- MLP: `sparse_layers` (Qwen MoE `decoder_sparse_step` / `mlp_only_layers`; Llama-4
  `interleave_moe_layer_step`), `dense_intermediate_size` and `implicit_shared_expert`
  (Llama-4), `expert_bias` (gpt-oss), `router_bias` (gpt-oss; DeepSeek-V3 and Kimi-K2's
  `e_score_correction_bias`), `norms_per_layer` (Gemma-2/3: four);
- recurrent models (RWKV, Mamba) have readers of their own (`Recurrent.read`).

A `model_type` that is no key of `FAMILIES` reads as the longest key it extends whose family
admits `variants` (`qwen2_moe` as Qwen2, `gemma3_text` as Gemma-3); failing that, a
recurrent architecture name (`Rwkv...`, `Mamba...`) picks its reader, and anything else is
the base decoder. A new family is one class here, one `FAMILIES` line and one fixture model
(docs/recipes/model-family.md).

Anchor: vLLM's `vllm/transformers_utils/model_arch_config_convertor.py`
(`ModelArchConfigConvertorBase`, one-getter subclasses, `MODEL_ARCH_CONFIG_CONVERTORS`).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..limits import MAX_LAYERS, label
from ..schema import ARCHITECTURES, DTYPES
from .errors import MissingKeys, SpecError
from .layers import (
    CHUNKED,
    FULL,
    LINEAR,
    SLIDING,
    Kinds,
    count,
    counts,
    interleaved,
    named,
    uniform,
)
from .params import DTYPE_BYTES, ParamBreakdown

EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k")
GATED = 3  # gate, up and down projections of a gated MLP


class ConfigView:
    """Typed access to a config dict that names the source and key of every error
    (its `int` getter shadows the builtin inside the class: annotations say `builtins.int`)."""

    def __init__(self, data: Mapping[str, Any], source: str):
        self.data, self.source = data, source

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default: builtins.int | None = None) -> builtins.int:
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise SpecError("missing", source=self.source, key=key)
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(
                f"expected a non-negative int, got {value!r}",
                source=self.source,
                key=key,
                value=value,
            )
        return value

    def first(self, keys: tuple[str, ...], default: builtins.int) -> builtins.int:
        for key in keys:
            if self.has(key):
                return self.int(key)
        return default

    def need(self, family: str, *groups: tuple[str, ...]) -> None:
        missing = tuple(g[0] for g in groups if not any(self.has(k) for k in g))
        if missing:
            raise MissingKeys(family, missing, source=self.source)


def dtype_of(data: Mapping[str, Any], source: str) -> str:
    """The model dtype (`torch_dtype`, else `dtype`; bfloat16 when neither)."""
    key = "torch_dtype" if data.get("torch_dtype") else "dtype"
    dtype = data.get(key) or "bfloat16"
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise SpecError(
            f"dtype {dtype!r} is not one of {DTYPES}", source=source, key=key, value=dtype
        )
    return dtype


def architecture_of(data: Mapping[str, Any]) -> str:
    """The first `architectures` entry when the schema knows it, else "other"."""
    archs = data.get("architectures") or ["other"]
    return archs[0] if archs[0] in ARCHITECTURES else "other"


def asymmetric_kv(cfg: ConfigView, head_dim: int) -> bool:
    """K and V rows differ in width: `v_head_dim` (0 or absent: the head width) apart from
    `head_dim`, or `swa_v_head_dim` apart from `swa_head_dim` (SGLang 0.5.23
    configs/model_config.py has_asymmetric_kv)."""
    v_dim = cfg.int("v_head_dim", 0) or head_dim
    swa = cfg.int("swa_head_dim", 0) or head_dim
    swa_v = cfg.int("swa_v_head_dim", 0) or swa
    return v_dim != head_dim or swa_v != swa


@dataclass(frozen=True)
class Attention:
    """One attention layer: projection parameters, small parameters (biases, norms,
    sinks), KV elements per token, and whether it is MLA."""

    params: int
    other: int
    kv_per_layer: int
    mla: bool = False


@dataclass(frozen=True)
class Shape:
    """The sizes every part of the decoder reader needs."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int


class Family:
    """The base reader: a decoder of attention and gated-MLP layers (Llama, Mistral,
    Mixtral, Phi-3 ...). Subclasses override the getters where their family differs."""

    # a model type extending this one's key (`qwen2_moe` of `qwen2`) reads as this family
    variants: ClassVar[bool] = True
    qk_norm: ClassVar[bool] = False  # a norm of head_dim on queries and on keys
    query_factor: ClassVar[int] = 1  # query projection width in heads x head_dim
    attention_sinks: ClassVar[bool] = False  # one learned sink logit per head
    expert_bias: ClassVar[bool] = False  # biases on every routed expert's projections
    router_bias: ClassVar[bool] = False  # one bias per expert on the router
    norms_per_layer: ClassVar[int] = 2

    def __init__(self, cfg: ConfigView, model_type: str):
        self.cfg, self.model_type = cfg, model_type

    # ------------------------------------------------------------------ the reader
    def read(self) -> dict[str, Any]:
        """The `ModelSpec` values of this config (quantization and source aside)."""
        cfg, d = self.cfg, self.cfg.data
        shape = self.shape()
        layers, h = shape.layers, shape.hidden
        positions = cfg.first(
            ("max_position_embeddings", "n_positions", "context_window_size"), 2048
        )
        kinds, window = self.layer_kinds(layers)
        attention = self.attention(shape)
        linear_attn, linear_other, state = (0, 0, 0)
        if LINEAR in kinds:
            linear_attn, linear_other, state = self.linear_attention(h)
        inter = shape.intermediate
        experts = cfg.first(EXPERT_KEYS, 1)
        topk = cfg.first(TOPK_KEYS, 1) if experts > 1 else 1
        moe_inter = cfg.int("moe_intermediate_size", inter) if experts > 1 else inter
        n_moe = len(self.moe_layers(layers, experts))
        dense = GATED * h * self.dense_intermediate_size(inter)
        shared = self.shared_experts(inter, moe_inter, experts)
        expert = GATED * h * moe_inter + self.expert_biases(moe_inter, h)
        router = h * experts + (experts if self.router_bias else 0)
        shared_gate = h if cfg.has("shared_expert_intermediate_size") else 0
        n_linear = kinds.count(LINEAR)
        n_attn = layers - n_linear
        params = ParamBreakdown(
            embedding=shape.vocab * h,
            head=0 if self.tied else shape.vocab * h,
            attention=n_attn * attention.params + n_linear * linear_attn,
            mlp=(layers - n_moe) * dense + n_moe * GATED * h * shared,
            experts=n_moe * experts * expert,
            other=layers * self.norms_per_layer * h
            + h
            + n_attn * attention.other
            + n_linear * linear_other
            + n_moe * (router + shared_gate),
        )
        family = "mla" if attention.mla else "moe" if experts > 1 else "dense"
        dtype = dtype_of(d, cfg.source)
        return {
            "num_layers": layers,
            "num_attention_heads": shape.heads,
            "num_kv_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            "hidden_size": h,
            "intermediate_size": shape.intermediate,
            "vocab_size": shape.vocab,
            "max_position_embeddings": positions,
            "sliding_window": window,
            "dtype": dtype,
            "architecture": architecture_of(d),
            "model_type": self.model_type,
            "tie_word_embeddings": self.tied,
            "is_encoder_decoder": bool(d.get("is_encoder_decoder", False)),
            "family": "hybrid" if len(set(kinds)) > 1 else family,
            "layer_types": kinds,
            "num_experts": experts,
            "experts_per_token": topk,
            "moe_intermediate_size": moe_inter if experts > 1 else 0,
            "moe_layers": n_moe if experts > 1 else 0,
            "params": params,
            "active_params": params.total - params.experts + n_moe * topk * expert,
            "kv_elements_per_layer": attention.kv_per_layer,
            "state_bytes": n_linear * state * DTYPE_BYTES[dtype],
            "asymmetric_kv": not attention.mla and asymmetric_kv(cfg, shape.head_dim),
        }

    @property
    def tied(self) -> bool:
        return bool(self.cfg.data.get("tie_word_embeddings", False))

    def shape(self) -> Shape:
        """Layers, heads, widths and vocabulary, each checked (every missing key named)."""
        cfg, source = self.cfg, self.cfg.source
        cfg.need(
            "decoder",
            ("num_hidden_layers", "n_layer", "num_layers"),
            ("num_attention_heads", "n_head"),
            ("hidden_size", "n_embd", "d_model"),
            ("vocab_size",),
        )
        layers = cfg.first(("num_hidden_layers", "n_layer", "num_layers"), 0)
        heads = cfg.first(("num_attention_heads", "n_head"), 0)
        h = cfg.first(("hidden_size", "n_embd", "d_model"), 0)
        vocab = cfg.int("vocab_size")
        for key, value in (("num_hidden_layers", layers), ("num_attention_heads", heads)):
            if value == 0:
                raise SpecError("must be positive, got 0", source=source, key=key, value=0)
        if layers > MAX_LAYERS:
            raise SpecError(
                f"at most {label('MAX_LAYERS')} layers, got {layers}",
                source=source,
                key="num_hidden_layers",
                value=layers,
            )
        if h == 0 or vocab == 0:
            key = "hidden_size" if h == 0 else "vocab_size"
            raise SpecError("must be positive, got 0", source=source, key=key, value=0)
        kv_heads = cfg.int("num_key_value_heads", heads) or heads
        if heads % kv_heads:
            raise SpecError(
                f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}",
                source=source,
                key="num_key_value_heads",
            )
        head_dim = cfg.int("head_dim", h // heads)
        return Shape(layers, heads, kv_heads, head_dim, h, self.intermediate_size(h), vocab)

    def intermediate_size(self, h: int) -> int:
        """The MLP width; GPT-2 style configs spell it `n_inner` / `ffn_dim` (None: 4h)."""
        cfg = self.cfg
        if not cfg.has("intermediate_size") and ("n_embd" in cfg.data or "ffn_dim" in cfg.data):
            return cfg.first(("ffn_dim", "n_inner"), 4 * h)
        cfg.need("decoder", ("intermediate_size",))
        return cfg.int("intermediate_size")

    # ------------------------------------------------------------------ layer kinds
    def window(self) -> int:
        """The window of the sliding layers (0: none)."""
        return count(self.cfg.data, "sliding_window", self.cfg.source)

    def layer_kinds(self, layers: int) -> Kinds:
        """(kind per layer, window of the windowed kinds): `layer_types` when spelled, else
        the interleaved spellings, the family's own pattern, or one kind for all."""
        d, source = self.cfg.data, self.cfg.source
        window = self.window()
        chunk = count(d, "attention_chunk_size", source)
        if d.get("layer_types"):
            return named(d, layers, window, chunk, source)
        return self.pattern(layers, window, chunk)

    def pattern(self, layers: int, window: int, chunk: int) -> Kinds:
        """The kinds when `layer_types` is not spelled."""
        return (
            interleaved(self.cfg.data, layers, window, self.cfg.source)
            or self.own_pattern(layers, window, chunk)
            or uniform(layers, window)
        )

    def own_pattern(self, layers: int, window: int, chunk: int) -> Kinds | None:
        """A family's own spelling of its layer kinds; None: the shared ones."""
        return None

    # ------------------------------------------------------------------ attention
    def qkv_bias(self) -> bool:
        return bool(self.cfg.data.get("attention_bias", False))

    def o_bias(self) -> bool:
        return bool(self.cfg.data.get("attention_bias"))

    def attention(self, s: Shape) -> Attention:
        """One attention layer: MLA when the config spells a latent (`kv_lora_rank`)."""
        if self.cfg.has("kv_lora_rank"):
            return self.latent_attention(s)
        h, hd = s.hidden, s.head_dim
        q_out = s.heads * hd * self.query_factor
        params = h * q_out + 2 * h * s.kv_heads * hd + s.heads * hd * h
        other = (s.heads + 2 * s.kv_heads) * hd if self.qkv_bias() else 0
        other += h if self.o_bias() else 0
        other += 2 * hd if self.qk_norm else 0
        other += s.heads if self.attention_sinks else 0
        return Attention(params, other, 2 * s.kv_heads * hd)

    def latent_attention(self, s: Shape) -> Attention:
        """DeepSeek's multi-head latent attention: one latent of kv_lora_rank +
        qk_rope_head_dim per token and layer."""
        cfg, h, heads = self.cfg, s.hidden, s.heads
        cfg.need("MLA", ("qk_rope_head_dim",), ("qk_nope_head_dim",), ("v_head_dim",))
        rank, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
        nope, v_dim = cfg.int("qk_nope_head_dim"), cfg.int("v_head_dim")
        q_rank = cfg.int("q_lora_rank", 0)
        qk = nope + rope
        q_proj = h * q_rank + q_rank * heads * qk if q_rank else h * heads * qk
        params = q_proj + h * (rank + rope) + rank * heads * (nope + v_dim) + heads * v_dim * h
        return Attention(params, rank + q_rank, rank + rope, mla=True)  # two latent norms

    def linear_attention(self, h: int) -> tuple[int, int, int]:
        """Gated DeltaNet layers: (projection params, small params, state elements)."""
        cfg = self.cfg
        cfg.need(
            "linear-attention",
            ("linear_num_key_heads",),
            ("linear_num_value_heads",),
            ("linear_key_head_dim",),
            ("linear_value_head_dim",),
        )
        nk, nv = cfg.int("linear_num_key_heads"), cfg.int("linear_num_value_heads")
        dk, dv = cfg.int("linear_key_head_dim"), cfg.int("linear_value_head_dim")
        kernel = cfg.int("linear_conv_kernel_dim", 4)
        conv_dim = 2 * nk * dk + nv * dv
        proj = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + nv * dv * h
        small = conv_dim * kernel + 2 * nv + dv
        state = nv * dk * dv + conv_dim * (kernel - 1)
        return proj, small, state

    # ------------------------------------------------------------------ MLP and experts
    def moe_layers(self, layers: int, experts: int) -> list[int]:
        """The layers holding routed experts."""
        if experts <= 1:
            return []
        cfg = self.cfg
        if cfg.has("first_k_dense_replace"):  # DeepSeek, Kimi
            first = cfg.int("first_k_dense_replace")
            freq = cfg.int("moe_layer_freq", 1) or 1
            return [i for i in range(first, layers) if i % freq == 0]
        return self.sparse_layers(layers)

    def sparse_layers(self, layers: int) -> list[int]:
        """Qwen MoE's spelling: every `decoder_sparse_step`-th layer not in `mlp_only_layers`."""
        cfg = self.cfg
        step = cfg.int("decoder_sparse_step", 1) or 1
        dense = set(counts(cfg.data, "mlp_only_layers", cfg.source))
        return [i for i in range(layers) if i not in dense and (i + 1) % step == 0]

    def dense_intermediate_size(self, inter: int) -> int:
        """The width of the layers without experts."""
        return inter

    def shared_experts(self, inter: int, moe_inter: int, experts: int) -> int:
        """The summed width of the shared experts of one MoE layer."""
        cfg = self.cfg
        if cfg.has("n_shared_experts"):
            return cfg.int("n_shared_experts") * moe_inter
        if cfg.has("shared_expert_intermediate_size"):
            return cfg.int("shared_expert_intermediate_size")
        return self.implicit_shared_expert(inter, experts)

    def implicit_shared_expert(self, inter: int, experts: int) -> int:
        """A shared expert the config does not spell (0: none)."""
        return 0

    def expert_biases(self, moe_inter: int, h: int) -> int:
        """Bias parameters of one routed expert."""
        return (2 * moe_inter + h) if self.expert_bias else 0


# ---------------------------------------------------------------------------- decoders
class Llama(Family):
    """Llama's attention has no sliding window: a stray `sliding_window` means nothing."""

    variants = False

    def window(self) -> int:
        super().window()  # a bad value is still named
        return 0


class Llama4(Family):
    """Llama-4: chunked attention on the RoPE layers (`no_rope_layers`, a 0 marks a full
    layer; default every 4th full), MoE every `interleave_moe_layer_step`-th layer (or the
    listed `moe_layers`) with one shared expert of the routed size, and dense layers of
    `intermediate_size_mlp`."""

    def own_pattern(self, layers: int, window: int, chunk: int) -> Kinds | None:
        if not chunk:
            return None
        d, source = self.cfg.data, self.cfg.source
        marks = counts(d, "no_rope_layers", source, layers) or [
            int((i + 1) % 4 != 0) for i in range(layers)
        ]
        return tuple(CHUNKED if marks[i] else FULL for i in range(layers)), chunk

    def sparse_layers(self, layers: int) -> list[int]:
        cfg = self.cfg
        if cfg.has("moe_layers"):
            return counts(cfg.data, "moe_layers", cfg.source)
        step = cfg.int("interleave_moe_layer_step", 1) or 1
        return [i for i in range(layers) if (i + 1) % step == 0]

    def dense_intermediate_size(self, inter: int) -> int:
        return self.cfg.int("intermediate_size_mlp", inter)

    def implicit_shared_expert(self, inter: int, experts: int) -> int:
        return inter if experts > 1 else 0


class QwenWindows(Family):
    """Qwen2/Qwen3: the window holds only with `use_sliding_window` (transformers' configs
    drop it otherwise), and layers from `max_window_layers` on slide."""

    def window(self) -> int:
        if not self.cfg.data.get("use_sliding_window", False):
            super().window()  # a bad value is still named
            return 0
        return super().window()

    def own_pattern(self, layers: int, window: int, chunk: int) -> Kinds | None:
        if not window:
            return None
        start = count(self.cfg.data, "max_window_layers", self.cfg.source, layers)
        return tuple(SLIDING if i >= start else FULL for i in range(layers)), window


class Qwen2(QwenWindows):
    """Qwen2 / Qwen2.5: biases on q, k and v always, none on o."""

    def qkv_bias(self) -> bool:
        return True

    def o_bias(self) -> bool:
        return False


class Qwen3(QwenWindows):
    """Qwen3: a norm on queries and keys (no biases unless `attention_bias`)."""

    qk_norm = True


class Qwen3Next(Qwen3):
    """Qwen3-Next: gated attention output (the query projection is twice as wide), Gated
    DeltaNet linear-attention layers (`full_attention_interval`)."""

    variants = False
    query_factor = 2


class Olmo2(Family):
    """OLMo-2: a norm on queries and keys."""

    qk_norm = True


class Gemma2(Family):
    """Gemma-2: four norms per layer; every even layer slides when there is a window."""

    norms_per_layer = 4

    def pattern(self, layers: int, window: int, chunk: int) -> Kinds:
        if window:
            return tuple(SLIDING if i % 2 == 0 else FULL for i in range(layers)), window
        return super().pattern(layers, window, chunk)


class Gemma3(Family):
    """Gemma-3: four norms per layer and a norm on queries and keys; its
    `sliding_window_pattern` is one of the shared spellings (layers.py)."""

    norms_per_layer = 4
    qk_norm = True


class GptOss(Family):
    """gpt-oss: a learned sink per attention head, biases on every expert's projections
    and on the router."""

    variants = False
    attention_sinks = True
    expert_bias = True
    router_bias = True


class DeepseekV3(Family):
    """DeepSeek-V3 / R1 and Kimi-K2: MLA (read from its keys by the base) and the router's
    `e_score_correction_bias`, one per expert."""

    variants = False
    router_bias = True


# ---------------------------------------------------------------------------- recurrent
class Recurrent(Family):
    """A model without attention heads: a fixed state per sequence, no KV cache."""

    variants = False
    kind: ClassVar[str] = "rwkv"
    architecture: ClassVar[str] = "other"

    def read(self) -> dict[str, Any]:
        cfg, d = self.cfg, self.cfg.data
        cfg.need(
            self.kind, ("hidden_size", "d_model"), ("num_hidden_layers", "n_layer"), ("vocab_size",)
        )
        h = cfg.first(("hidden_size", "d_model"), 0)
        layers = cfg.first(("num_hidden_layers", "n_layer"), 0)
        vocab = cfg.int("vocab_size")
        dtype = dtype_of(d, cfg.source)
        heads, head_dim, inter, mixer, small, state = self.mixer(h)
        params = ParamBreakdown(
            embedding=vocab * h,
            head=0 if self.tied else vocab * h,
            attention=layers * mixer,
            other=layers * small + 2 * h,
        )
        arch = architecture_of(d) if self.architecture == "other" else self.architecture
        return {
            "num_layers": layers,
            "num_attention_heads": heads,
            "num_kv_heads": heads,
            "head_dim": min(head_dim, 1024),
            "hidden_size": h,
            "intermediate_size": inter,
            "vocab_size": vocab,
            "max_position_embeddings": cfg.first(
                ("max_position_embeddings", "context_length"), 1 << 20
            ),
            "dtype": dtype,
            "architecture": arch if arch in ARCHITECTURES else "other",
            "model_type": self.model_type,
            "tie_word_embeddings": self.tied,
            "family": "recurrent",
            "layer_types": (LINEAR,) * layers,
            "params": params,
            "active_params": params.total,
            "state_bytes": layers * state * DTYPE_BYTES[dtype],
        }

    def mixer(self, h: int) -> tuple[int, int, int, int, int, int]:
        """(heads, head_dim, intermediate, mixer params, small params, state elements) of
        one layer: RWKV's time mix (K, V, R, O) and channel mix (K, V, R)."""
        att = self.cfg.int("attention_hidden_size", h)
        inter = self.cfg.int("intermediate_size", 4 * h) or 4 * h
        head_dim = self.head_size(att)
        heads = max(1, att // head_dim)
        mixer = 4 * h * att + 2 * h * inter + h * h
        small = 10 * h  # time-mix and decay vectors, two layer norms
        return heads, head_dim, inter, mixer, small, self.state(heads, head_dim, h)

    def head_size(self, att: int) -> int:
        return att

    def state(self, heads: int, head_dim: int, h: int) -> int:
        """One head_dim x head_dim matrix per head, and two vectors of h."""
        return heads * head_dim * head_dim + 2 * h


class Rwkv4(Recurrent):
    """RWKV-4: five vectors of h per layer."""

    architecture = "RwkvForCausalLM"

    def state(self, heads: int, head_dim: int, h: int) -> int:
        return 5 * h


class Rwkv5(Recurrent):
    """RWKV-5 (Eagle): heads of `head_size` (64)."""

    architecture = "Rwkv5ForCausalLM"

    def head_size(self, att: int) -> int:
        return self.cfg.int("head_size", 64)


class Rwkv6(Rwkv5):
    """RWKV-6 (Finch): as RWKV-5."""

    architecture = "Rwkv6ForCausalLM"


class Mamba(Recurrent):
    """Mamba: a selective state space of `state_size` per inner channel."""

    kind = "mamba"
    architecture = "MambaForCausalLM"

    def mixer(self, h: int) -> tuple[int, int, int, int, int, int]:
        cfg = self.cfg
        inner = cfg.int("intermediate_size", 2 * h)
        n = cfg.int("state_size", 16)
        conv = cfg.int("conv_kernel", 4)
        auto = cfg.data.get("time_step_rank") in (None, "auto")
        rank = -(-h // 16) if auto else cfg.int("time_step_rank")
        mixer = 2 * h * inner + inner * (rank + 2 * n) + rank * inner + inner * h
        small = inner * conv + inner + inner + inner * n + inner + h
        state = inner * n + inner * (conv - 1)
        return 1, inner, inner, mixer, small, state


class _MambaByName(Mamba):
    """A Mamba architecture under another model type: the architecture as it is spelled."""

    architecture = "other"


FAMILIES: dict[str, type[Family]] = {
    "llama": Llama,
    "mistral": Family,
    "mixtral": Family,
    "llama4": Llama4,
    "llama4_text": Llama4,
    "qwen2": Qwen2,
    "qwen2_moe": Qwen2,
    "qwen3": Qwen3,
    "qwen3_moe": Qwen3,
    "qwen3_next": Qwen3Next,
    "olmo2": Olmo2,
    "gemma2": Gemma2,
    "gemma3": Gemma3,
    "gemma3_text": Gemma3,
    "gpt_oss": GptOss,
    "deepseek_v3": DeepseekV3,
    "kimi_k2": DeepseekV3,
    "rwkv": Rwkv4,
    "rwkv5": Rwkv5,
    "rwkv6": Rwkv6,
    "mamba": Mamba,
}
# a recurrent architecture under a model type of no family: (name part, reader)
ARCHITECTURE_FAMILIES: tuple[tuple[str, type[Family]], ...] = (
    ("Mamba", _MambaByName),
    ("Rwkv", Recurrent),
)


def family_of(model_type: str, architectures: list[str]) -> type[Family]:
    """The reader of a config: a recurrent `model_type`'s; else a recurrent architecture's
    (the architecture names the class that runs the weights); else its `model_type`'s
    family, or the longest key it extends whose family admits variants; else the base."""
    own = FAMILIES.get(model_type)
    if own is not None and issubclass(own, Recurrent):
        return own
    names = " ".join(architectures)
    for part, family in ARCHITECTURE_FAMILIES:
        if part in names:
            return family
    if own is not None:
        return own
    extended = [k for k, f in FAMILIES.items() if f.variants and model_type.startswith(k)]
    return FAMILIES[max(extended, key=len)] if extended else Family


__all__ = [
    "ARCHITECTURE_FAMILIES",
    "FAMILIES",
    "ConfigView",
    "Family",
    "architecture_of",
    "dtype_of",
    "family_of",
]
