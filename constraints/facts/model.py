"""`ModelSpec`: the one reader of a model's facts, from a Hugging Face `config.json`.
MLC's `mlc-chat-config.json` builds on it (mlc.py); `read_model` (read.py) is the front
door that reads either.

Families read (`ModelSpec.family`):

- `dense`: a decoder of attention and gated-MLP layers (Llama, Mistral, Qwen2, Gemma ...);
- `moe`: experts under any spelling (`num_local_experts`, `num_experts`,
  `n_routed_experts`; top-k `num_experts_per_tok` / `experts_per_token`; expert size
  `moe_intermediate_size`; shared experts `n_shared_experts` or
  `shared_expert_intermediate_size`; dense layers `first_k_dense_replace`,
  `decoder_sparse_step` / `mlp_only_layers`, Llama-4's `interleave_moe_layer_step`);
- `mla`: DeepSeek's multi-head latent attention (`kv_lora_rank`, `qk_rope_head_dim`,
  `q_lora_rank`, `qk_nope_head_dim`, `v_head_dim`), usually with MoE;
- `hybrid`: attention layers of several kinds (layers.py), incl. linear attention;
- `recurrent`: RWKV and Mamba (no `num_attention_heads`; a fixed state per sequence).

Configs that nest the language model under `text_config` (Llama-4, Gemma-3) are read from
there (the vision tower is not counted). A config lacking what its family needs raises
`MissingKeys` naming every missing key; `quantization_config` becomes a `CheckpointQuant`
(quant.py), a fact no solve changes.

Counts (`ParamBreakdown`): embedding, head (unless tied), attention projections, dense
MLPs (and shared experts), routed experts, and the small rest (norms, biases, routers,
convolutions). DeepSeek's multi-token-prediction layers (`num_nextn_predict_layers`) are
left out, as the published totals (671B) leave them out.

KV per token (elements, before the KV dtype): a full layer stores 2 x kv_heads x head_dim;
an MLA layer stores one latent of kv_lora_rank + qk_rope_head_dim; sliding and chunked
layers store as much per token but only for their window; linear-attention and recurrent
layers keep a state of fixed size per sequence (`state_bytes`, in the model's dtype).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..schema import ARCHITECTURES, DTYPES, MAX_TOKENS
from . import quant as q
from .errors import MissingKeys, SpecError
from .layers import CHUNKED, FULL, LINEAR, SLIDING, counts, layer_kinds, name

HF_FILE_NAME = "config.json"
MLC_FILE_NAME = "mlc-chat-config.json"
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k")
_RECURRENT_TYPES = {"rwkv": "rwkv", "rwkv5": "rwkv", "rwkv6": "rwkv", "mamba": "mamba"}
_RECURRENT_ARCH = {
    "rwkv": "RwkvForCausalLM",
    "rwkv5": "Rwkv5ForCausalLM",
    "rwkv6": "Rwkv6ForCausalLM",
    "mamba": "MambaForCausalLM",
}


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameters by group; `experts` counts every routed expert."""

    embedding: int = 0
    head: int = 0
    attention: int = 0
    mlp: int = 0
    experts: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.embedding + self.head + self.attention + self.mlp + self.experts + self.other

    def groups(self) -> dict[str, int]:
        return {
            "embedding": self.embedding,
            "head": self.head,
            "attention": self.attention,
            "mlp": self.mlp,
            "experts": self.experts,
            "other": self.other,
        }


@dataclass(frozen=True)
class ModelSpec:
    """A model's facts, as the rules, the memory model and the runtime need them."""

    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    sliding_window: int = 0  # window of the sliding/chunked layers; 0 when none
    dtype: str = "bfloat16"
    architecture: str = "other"
    model_type: str = ""
    tie_word_embeddings: bool = False
    is_encoder_decoder: bool = False
    family: str = "dense"
    layer_types: tuple[str, ...] = ()
    num_experts: int = 1
    experts_per_token: int = 1
    moe_intermediate_size: int = 0  # one routed expert's intermediate size; 0 when dense
    moe_layers: int = 0  # layers holding routed experts; 0 when dense
    params: ParamBreakdown = field(default_factory=ParamBreakdown)
    active_params: int = 0
    kv_elements_per_layer: int = 0  # per token, one attention layer
    state_bytes: int = 0  # recurrent / linear-attention state per sequence
    quant: q.CheckpointQuant | None = None
    source: str = ""
    # K and V rows of different widths (`v_head_dim` or `swa_v_head_dim` set apart from the
    # query-key width; not MLA): SGLang's ModelConfig.has_asymmetric_kv (MiMo-V2: 192 / 128)
    asymmetric_kv: bool = False
    # what the engines' dialects read beyond the facts above, read with them once: the
    # config's `architectures`, the text config's vocabulary and attention heads (what
    # vLLM compares with a draft's), and the config.json itself, read-only, for the views
    # an engine takes of it (vLLM's MTP families, SGLang's vision tower); None: not a
    # Hugging Face config.json
    architectures: tuple[str, ...] = ()
    text_vocab_size: int | None = None
    text_heads: int = 0
    hf_config: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_hf_config(cls, config: str | Path | Mapping[str, Any]) -> ModelSpec:
        """Read a Hugging Face `config.json` (a path to it, the folder holding it, or the
        dict). An MLC `mlc-chat-config.json` is refused with a pointer to `read_model`
        (read.py), the front door that reads either."""
        if not isinstance(config, Mapping) and Path(config).is_dir():
            folder = Path(config)
            if not (folder / HF_FILE_NAME).exists() and (folder / MLC_FILE_NAME).exists():
                config = folder / MLC_FILE_NAME  # refused below, with the pointer
        data, source = load_json(config, HF_FILE_NAME)
        if is_mlc_chat_config(data):
            raise SpecError(
                f"an MLC {MLC_FILE_NAME}, not a Hugging Face {HF_FILE_NAME}: read it with "
                "constraints.facts.read_model, which reads both",
                source=source,
            )
        return read_hf(data, source)

    # ------------------------------------------------------------------ derived
    @property
    def num_params(self) -> int:
        return self.params.total

    def layers_of(self, *kinds: str) -> int:
        return sum(1 for k in self.layer_types if k in kinds)

    @property
    def kv_elements_per_token(self) -> int:
        """KV elements one token adds over the layers that keep every token."""
        return self.layers_of(FULL) * self.kv_elements_per_layer

    @property
    def window_kv_elements_per_token(self) -> int:
        """KV elements per token of the sliding and chunked layers (up to the window)."""
        return self.layers_of(SLIDING, CHUNKED) * self.kv_elements_per_layer

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """KV bytes per token over the full-attention layers (MLA: the latent)."""
        return self.kv_elements_per_token * bytes_per_element

    def kv_bytes_of_sequence(self, tokens: int, bytes_per_element: float = 2) -> float:
        """KV and state bytes one sequence of `tokens` tokens holds, every layer kind."""
        windowed = min(tokens, self.sliding_window) if self.sliding_window else tokens
        return (
            self.kv_elements_per_token * tokens + self.window_kv_elements_per_token * windowed
        ) * bytes_per_element + self.state_bytes

    def weight_bytes(self, *groups: str) -> int:
        """Bytes of the weights as the checkpoint stores them (its quantization included);
        with `groups` (ParamBreakdown group names), of those groups only."""
        dtype_bytes = DTYPE_BYTES[self.dtype]
        covers = self.quant.covers if self.quant else frozenset()
        bits = self.quant.bits if self.quant else 8 * dtype_bytes
        total = 0.0
        for group, count in self.params.groups().items():
            if not groups or group in groups:
                total += count * (bits / 8 if group in covers else dtype_bytes)
        return int(total)

    def facts(self) -> dict[str, Any]:
        """The `model.*` facts for a setup claim."""
        return {
            "model.num_layers": self.num_layers,
            "model.num_attention_heads": self.num_attention_heads,
            "model.num_kv_heads": self.num_kv_heads,
            "model.head_dim": self.head_dim,
            "model.hidden_size": self.hidden_size,
            "model.intermediate_size": self.intermediate_size,
            "model.vocab_size": self.vocab_size,
            # capped at the schema's bound on token counts (Llama-4-Scout knows 10M)
            "model.max_position_embeddings": min(self.max_position_embeddings, MAX_TOKENS),
            "model.sliding_window": self.sliding_window,
            "model.dtype": self.dtype,
            "model.architecture": self.architecture,
            "model.tie_word_embeddings": self.tie_word_embeddings,
            "model.is_encoder_decoder": self.is_encoder_decoder,
            "model.num_params": self.num_params,
            "model.num_experts": self.num_experts,
            "model.kv_elements_per_token": self.kv_elements_per_token,
            "model.window_kv_elements_per_token": self.window_kv_elements_per_token,
            "model.state_bytes": self.state_bytes,
            "model.weight_bytes": self.weight_bytes() if self.quant else 0,
            "model.kv_replicated": self.family == "mla",
            "model.asymmetric_kv": self.asymmetric_kv,
            # the parts that parallel layouts place differently (expert and attention
            # data parallelism: facts/memory.py rank_weight_bytes)
            "model.expert_params": self.params.experts,
            "model.attention_params": self.params.attention,
            "model.expert_weight_bytes": self.weight_bytes("experts") if self.quant else 0,
            "model.attention_weight_bytes": self.weight_bytes("attention") if self.quant else 0,
            "model.experts_per_token": self.experts_per_token,
            "model.moe_intermediate_size": self.moe_intermediate_size,
            "model.moe_layers": self.moe_layers,
            # the first and last pipeline stages hold these (facts/memory.py stage_layers)
            "model.embedding_weight_bytes": self.weight_bytes("embedding") if self.quant else 0,
            # vLLM pads MXFP4 experts to its MoE kernels' tiles (facts/memory.py)
            "model.mxfp4_experts": bool(
                self.quant and self.quant.quant_algo == "MXFP4" and "experts" in self.quant.covers
            ),
        }

    def checkpoint_claims(self) -> dict[str, Any]:
        """What the checkpoint's quantization pins (`quant_config.*`); empty when none."""
        return self.quant.claims() if self.quant else {}

    def describe(self) -> str:
        """One line: family, parameters, KV per token."""
        active = f", {self.active_params / 1e9:.1f}B active" if self.num_experts > 1 else ""
        return (
            f"{self.architecture} ({self.family}): {self.num_params / 1e9:.2f}B parameters"
            f"{active}; KV {self.kv_bytes_per_token(DTYPE_BYTES[self.dtype]):,.0f} B/token"
        )


def is_mlc_chat_config(data: Mapping[str, Any]) -> bool:
    """Whether a config dict is MLC's `mlc-chat-config.json` (its shape under
    `model_config`, its weight format under `quantization`)."""
    return isinstance(data.get("model_config"), Mapping) and "quantization" in data


def load_json(config: str | Path | Mapping[str, Any], name: str) -> tuple[dict, str]:
    """A config as a dict with its source (a dict, a file, or the folder holding `name`)."""
    if isinstance(config, Mapping):
        return dict(config), "<config dict>"
    path = Path(config)
    if path.is_dir():
        path = path / name
    source = str(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", source=source) from None
    except ValueError as exc:
        raise SpecError(f"not JSON: {exc}", source=source) from None
    if not isinstance(data, dict):
        raise SpecError("expected a JSON object", source=source)
    return data, source


# ---------------------------------------------------------------------------- reading
class _Cfg:
    """Typed access to a config dict that names the source and key of every error."""

    def __init__(self, data: Mapping[str, Any], source: str):
        self.data, self.source = data, source

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default: int | None = None) -> int:
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

    def first(self, keys: tuple[str, ...], default: int) -> int:
        for key in keys:
            if self.has(key):
                return self.int(key)
        return default

    def need(self, family: str, *groups: tuple[str, ...]) -> None:
        missing = tuple(g[0] for g in groups if not any(self.has(k) for k in g))
        if missing:
            raise MissingKeys(family, missing, source=self.source)


def language_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: `text_config` merged over the top level."""
    text = data.get("text_config") or data.get("language_config")
    if isinstance(text, Mapping) and not data.get("num_hidden_layers"):
        merged = {k: v for k, v in data.items() if k not in ("text_config", "vision_config")}
        merged.update(text)
        merged["architectures"] = data.get("architectures") or text.get("architectures")
        return merged
    return data


def _dtype(data: Mapping[str, Any], source: str) -> str:
    key = "torch_dtype" if data.get("torch_dtype") else "dtype"
    dtype = data.get(key) or "bfloat16"
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise SpecError(
            f"dtype {dtype!r} is not one of {DTYPES}", source=source, key=key, value=dtype
        )
    return dtype


def _asymmetric_kv(cfg: _Cfg, head_dim: int) -> bool:
    """K and V rows differ in width: `v_head_dim` (0 or absent: the head width) apart from
    `head_dim`, or `swa_v_head_dim` apart from `swa_head_dim` (SGLang 0.5.23
    configs/model_config.py has_asymmetric_kv)."""
    v_dim = cfg.int("v_head_dim", 0) or head_dim
    swa = cfg.int("swa_head_dim", 0) or head_dim
    swa_v = cfg.int("swa_v_head_dim", 0) or swa
    return v_dim != head_dim or swa_v != swa


def _architectures(data: Mapping[str, Any], source: str) -> list[str]:
    """`architectures`: a list of class names (empty when absent)."""
    archs = data.get("architectures")
    if archs is None:
        return []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise SpecError(
            f"expected a list of class names, got {archs!r}",
            source=source,
            key="architectures",
            value=archs,
        )
    return archs


def _architecture(data: Mapping[str, Any]) -> str:
    archs = data.get("architectures") or ["other"]
    return archs[0] if archs[0] in ARCHITECTURES else "other"


def read_hf(raw: Mapping[str, Any], source: str = "<config dict>") -> ModelSpec:
    """A `ModelSpec` from a config.json dict."""
    data = language_config(dict(raw))
    cfg = _Cfg(data, source)
    quant = None
    if isinstance(raw.get("quantization_config"), Mapping):
        quant = q.read_hf(raw["quantization_config"], source)
    elif raw.get("quantization_config") is not None:
        raise SpecError(
            f"expected an object with quant_method, got {raw['quantization_config']!r}",
            source=source,
            key="quantization_config",
            value=raw["quantization_config"],
        )
    model_type = name(data.get("model_type") or "", "model_type", source)
    archs = " ".join(_architectures(data, source))
    kind = _RECURRENT_TYPES.get(model_type)
    if kind is None and ("Rwkv" in archs or "Mamba" in archs):
        kind = "mamba" if "Mamba" in archs else "rwkv"
    if kind is not None:
        spec = _recurrent(cfg, kind, model_type, source)
    else:
        spec = _decoder(cfg, model_type, source)
    spec = replace(spec, quant=quant) if quant else spec
    return replace(
        spec,
        architectures=tuple(_architectures(raw, source)),
        text_vocab_size=_text_count(raw, "vocab_size", 1 << 40),
        text_heads=_text_count(raw, "num_attention_heads", 1 << 16) or 0,
        hf_config=MappingProxyType(dict(raw)),
    )


def _text_count(raw: Mapping[str, Any], key: str, bound: int) -> int | None:
    """A positive count of the text config (the config's own where it has none; heads:
    the top's first, as vLLM's draft check reads them), or None."""
    text = raw.get("text_config")
    places = (
        (raw, text)
        if key == "num_attention_heads"
        else (text if isinstance(text, Mapping) else raw,)
    )
    for where in places:
        if isinstance(where, Mapping):
            value = where.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value < bound:
                return value
    return None


def _decoder(cfg: _Cfg, model_type: str, source: str) -> ModelSpec:
    cfg.need(
        "decoder",
        ("num_hidden_layers", "n_layer", "num_layers"),
        ("num_attention_heads", "n_head"),
        ("hidden_size", "n_embd", "d_model"),
        ("vocab_size",),
    )
    d = cfg.data
    layers = cfg.first(("num_hidden_layers", "n_layer", "num_layers"), 0)
    heads = cfg.first(("num_attention_heads", "n_head"), 0)
    h = cfg.first(("hidden_size", "n_embd", "d_model"), 0)
    vocab = cfg.int("vocab_size")
    for key, value in (("num_hidden_layers", layers), ("num_attention_heads", heads)):
        if value == 0:
            raise SpecError("must be positive, got 0", source=source, key=key, value=0)
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
    if not cfg.has("intermediate_size") and ("n_embd" in d or "ffn_dim" in d):
        inter = cfg.first(("ffn_dim", "n_inner"), 4 * h)  # GPT-2 style: n_inner None is 4h
    else:
        cfg.need("decoder", ("intermediate_size",))
        inter = cfg.int("intermediate_size")
    positions = cfg.first(("max_position_embeddings", "n_positions", "context_window_size"), 2048)
    kinds, window = layer_kinds(d, layers, source)
    tied = bool(d.get("tie_word_embeddings", False))

    # attention projections per layer kind
    mla = cfg.has("kv_lora_rank")
    bias = bool(d.get("attention_bias", False)) or model_type.startswith("qwen2")
    qk_norm = model_type.startswith(("qwen3", "gemma3", "olmo2"))
    if mla:
        cfg.need("MLA", ("qk_rope_head_dim",), ("qk_nope_head_dim",), ("v_head_dim",))
        rank, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
        nope, v_dim = cfg.int("qk_nope_head_dim"), cfg.int("v_head_dim")
        q_rank = cfg.int("q_lora_rank", 0)
        qk = nope + rope
        q_proj = h * q_rank + q_rank * heads * qk if q_rank else h * heads * qk
        attn = q_proj + h * (rank + rope) + rank * heads * (nope + v_dim) + heads * v_dim * h
        attn_other = rank + q_rank  # the two latent norms
        kv_per_layer = rank + rope
    else:
        q_out = heads * head_dim * (2 if model_type == "qwen3_next" else 1)  # gated output
        attn = h * q_out + 2 * h * kv_heads * head_dim + heads * head_dim * h
        attn_other = (heads + 2 * kv_heads) * head_dim if bias else 0
        if d.get("attention_bias") and not model_type.startswith("qwen2"):
            attn_other += h  # o_proj bias
        attn_other += 2 * head_dim if qk_norm else 0
        attn_other += heads if model_type == "gpt_oss" else 0  # attention sinks
        kv_per_layer = 2 * kv_heads * head_dim
    linear_attn, linear_other, state = _linear_attention(cfg, h) if LINEAR in kinds else (0, 0, 0)

    # MLPs: which layers hold experts, and how large each part is
    experts = cfg.first(_EXPERT_KEYS, 1)
    topk = cfg.first(_TOPK_KEYS, 1) if experts > 1 else 1
    moe_inter = cfg.int("moe_intermediate_size", inter) if experts > 1 else inter
    moe_layers = _moe_layers(cfg, layers, experts, model_type)
    dense_inter = (
        cfg.int("intermediate_size_mlp", inter) if model_type.startswith("llama4") else inter
    )
    shared = 0
    if cfg.has("n_shared_experts"):
        shared = cfg.int("n_shared_experts") * moe_inter
    elif cfg.has("shared_expert_intermediate_size"):
        shared = cfg.int("shared_expert_intermediate_size")
    elif model_type.startswith("llama4") and experts > 1:
        shared = inter  # one shared expert of the routed experts' size
    gated = 3  # gate, up and down projections
    expert_bias = (2 * moe_inter + h) if model_type == "gpt_oss" else 0
    router = h * experts + (experts if model_type in ("gpt_oss", "deepseek_v3", "kimi_k2") else 0)
    shared_gate = h if cfg.has("shared_expert_intermediate_size") else 0

    norms_per_layer = 4 if model_type.startswith(("gemma2", "gemma3")) else 2
    n_moe = len(moe_layers)
    n_linear = kinds.count(LINEAR)
    n_attn = layers - n_linear
    params = ParamBreakdown(
        embedding=vocab * h,
        head=0 if tied else vocab * h,
        attention=n_attn * attn + n_linear * linear_attn,
        mlp=(layers - n_moe) * gated * h * dense_inter + n_moe * gated * h * shared,
        experts=n_moe * experts * (gated * h * moe_inter + expert_bias),
        other=layers * norms_per_layer * h
        + h
        + n_attn * attn_other
        + n_linear * linear_other
        + n_moe * (router + shared_gate),
    )
    active_experts = n_moe * topk * (gated * h * moe_inter + expert_bias)
    active = params.total - params.experts + active_experts
    family = "mla" if mla else "moe" if experts > 1 else "dense"
    if len(set(kinds)) > 1:
        family = "hybrid"
    return ModelSpec(
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        hidden_size=h,
        intermediate_size=inter,
        vocab_size=vocab,
        max_position_embeddings=positions,
        sliding_window=window,
        dtype=_dtype(d, source),
        architecture=_architecture(d),
        model_type=model_type,
        tie_word_embeddings=tied,
        is_encoder_decoder=bool(d.get("is_encoder_decoder", False)),
        family=family,
        layer_types=kinds,
        num_experts=experts,
        experts_per_token=topk,
        moe_intermediate_size=moe_inter if experts > 1 else 0,
        moe_layers=n_moe if experts > 1 else 0,
        params=params,
        active_params=active,
        kv_elements_per_layer=kv_per_layer,
        state_bytes=n_linear * state * DTYPE_BYTES[_dtype(d, source)],
        source=source,
        asymmetric_kv=not mla and _asymmetric_kv(cfg, head_dim),
    )


def _moe_layers(cfg: _Cfg, layers: int, experts: int, model_type: str) -> list[int]:
    if experts <= 1:
        return []
    d = cfg.data
    if cfg.has("first_k_dense_replace"):  # DeepSeek, Kimi
        first = cfg.int("first_k_dense_replace")
        freq = cfg.int("moe_layer_freq", 1) or 1
        return [i for i in range(first, layers) if i % freq == 0]
    if model_type.startswith("llama4"):
        if d.get("moe_layers") is not None:
            return counts(d, "moe_layers", cfg.source)
        step = cfg.int("interleave_moe_layer_step", 1) or 1
        return [i for i in range(layers) if (i + 1) % step == 0]
    step = cfg.int("decoder_sparse_step", 1) or 1  # Qwen MoE
    dense = set(counts(d, "mlp_only_layers", cfg.source))
    return [i for i in range(layers) if i not in dense and (i + 1) % step == 0]


def _linear_attention(cfg: _Cfg, h: int) -> tuple[int, int, int]:
    """Qwen3-Next Gated DeltaNet: (projection params, small params, state elements)."""
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


def _recurrent(cfg: _Cfg, kind: str, model_type: str, source: str) -> ModelSpec:
    d = cfg.data
    cfg.need(kind, ("hidden_size", "d_model"), ("num_hidden_layers", "n_layer"), ("vocab_size",))
    h = cfg.first(("hidden_size", "d_model"), 0)
    layers = cfg.first(("num_hidden_layers", "n_layer"), 0)
    vocab = cfg.int("vocab_size")
    dtype = _dtype(d, source)
    if kind == "mamba":
        inner = cfg.int("intermediate_size", 2 * h)
        n = cfg.int("state_size", 16)
        conv = cfg.int("conv_kernel", 4)
        auto = d.get("time_step_rank") in (None, "auto")
        rank = -(-h // 16) if auto else cfg.int("time_step_rank")
        mixer = 2 * h * inner + inner * (rank + 2 * n) + rank * inner + inner * h
        small = inner * conv + inner + inner + inner * n + inner + h
        state = inner * n + inner * (conv - 1)
        heads, head_dim, inter = 1, inner, inner
    else:
        att = cfg.int("attention_hidden_size", h)
        inter = cfg.int("intermediate_size", 4 * h) or 4 * h
        head_dim = cfg.int("head_size", 64) if model_type in ("rwkv5", "rwkv6") else att
        heads = max(1, att // head_dim)
        mixer = 4 * h * att + 2 * h * inter + h * h  # K, V, R, O; channel-mix K, V, R
        small = 10 * h  # time-mix and decay vectors, two layer norms
        # v4 keeps five vectors of h; v5/v6 keep one head_dim x head_dim matrix per head
        state = 5 * h if model_type == "rwkv" else heads * head_dim * head_dim + 2 * h
    tied = bool(d.get("tie_word_embeddings", False))
    params = ParamBreakdown(
        embedding=vocab * h,
        head=0 if tied else vocab * h,
        attention=layers * mixer,
        other=layers * small + 2 * h,
    )
    arch = _RECURRENT_ARCH.get(model_type) or _architecture(d)
    return ModelSpec(
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=heads,
        head_dim=min(head_dim, 1024),
        hidden_size=h,
        intermediate_size=inter,
        vocab_size=vocab,
        max_position_embeddings=cfg.first(("max_position_embeddings", "context_length"), 1 << 20),
        dtype=dtype,
        architecture=arch if arch in ARCHITECTURES else "other",
        model_type=model_type,
        tie_word_embeddings=tied,
        family="recurrent",
        layer_types=(LINEAR,) * layers,
        params=params,
        active_params=params.total,
        state_bytes=layers * state * DTYPE_BYTES[dtype],
        source=source,
    )


__all__ = [
    "DTYPE_BYTES",
    "HF_FILE_NAME",
    "MLC_FILE_NAME",
    "ModelSpec",
    "ParamBreakdown",
    "is_mlc_chat_config",
    "language_config",
    "load_json",
    "read_hf",
]
