"""`ModelSpec`: a model's facts, read from a Hugging Face `config.json` by `read_hf`, the one
place that builds one. MLC's `mlc-chat-config.json` builds on it (mlc.py); `read_model`
(read.py) is the front door that reads either. Each family's reader is a class in
families.py (`FAMILIES`, keyed by `model_type`); this module looks it up and records
what it reads.

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
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..schema import MAX_TOKENS
from . import quant as q
from .errors import SpecError
from .families import ConfigView, family_of
from .layers import CHUNKED, FULL, SLIDING, name
from .params import DTYPE_BYTES, ParamBreakdown

HF_FILE_NAME = "config.json"
MLC_FILE_NAME = "mlc-chat-config.json"


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
            # a block-scaled FP8 checkpoint's weight_block_size (vLLM's fused-MoE shards
            # must be whole blocks: rule vllm.quant.block-fp8-moe-shards-whole-blocks)
            "model.weight_block_n": self.quant.block[0] if self.quant else 0,
            "model.weight_block_k": self.quant.block[1] if self.quant else 0,
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
def language_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: `text_config` merged over the top level."""
    text = data.get("text_config") or data.get("language_config")
    if isinstance(text, Mapping) and not data.get("num_hidden_layers"):
        merged = {k: v for k, v in data.items() if k not in ("text_config", "vision_config")}
        merged.update(text)
        merged["architectures"] = data.get("architectures") or text.get("architectures")
        return merged
    return data


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


def _quant(raw: Mapping[str, Any], source: str) -> q.CheckpointQuant | None:
    """The checkpoint's quantization (`quantization_config`), None when it has none."""
    config = raw.get("quantization_config")
    if isinstance(config, Mapping):
        return q.read_hf(config, source)
    if config is not None:
        raise SpecError(
            f"expected an object with quant_method, got {config!r}",
            source=source,
            key="quantization_config",
            value=config,
        )
    return None


def read_hf(raw: Mapping[str, Any], source: str = "<config dict>") -> ModelSpec:
    """A `ModelSpec` from a config.json dict: its family's reader (families.py) over the
    language model's config, and the checkpoint's quantization."""
    data = language_config(dict(raw))
    quant = _quant(raw, source)
    model_type = name(data.get("model_type") or "", "model_type", source)
    family = family_of(model_type, _architectures(data, source))
    values = family(ConfigView(data, source), model_type).read()
    return ModelSpec(
        **values,
        quant=quant,
        source=source,
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
