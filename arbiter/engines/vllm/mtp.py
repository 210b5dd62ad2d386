"""Which target models vLLM 0.33 drafts MTP speculation from, and where it reads their
MTP layers (`n_predict`).

Source: vllm-project/vllm v0.33.0, `vllm/config/speculative.py`:
`SpeculativeConfig.hf_config_override` rewrites the target's config into its MTP draft's
(a chain of branches on `model_type` or `architectures[0]`, each setting the draft model
type and `n_predict` from one config field, or a fixed value), and
`SpeculativeConfig.__post_init__` takes `method: mtp` only when the rewritten model type
is one of `MTPModelTypes`; otherwise it raises "Unsupported speculative method: 'mtp'".
It then checks `num_speculative_tokens` against `n_predict` (rule
vllm.spec.mtp-tokens-multiple-of-layers).

`FAMILIES` is that mapping written down as data: it was derived by running the function
itself on probe configs (`benchmarks/oracle_vllm_mtp.py`), and the record it is checked
against is `tests/corpus/vllm/oracle/mtp_families.json`
(`tests/arbiter/engines/vllm/test_vllm_mtp.py`; live against vLLM when its venv is present). Left out:
`deepseek_v41` (mapped, then refused by `__post_init__`: "DeepSeek V4.1 has no
classic-MTP draft"), the Nemotron-H Omni wrappers (`NemotronH_*Omni_Reasoning_V3`, whose
text config is promoted first; the probe cannot build one), the substring match of
`exaone4_5` (only the exact model types are listed). A family whose branch looks in a
second place when the first field is absent lists it in `FALLBACKS` (Qwen3.5 reads the
top `mtp_num_hidden_layers`, then the text config's; Qwen4-exp reads the text config's
`mtp_num_hidden_layers`, then its `num_nextn_predict_layers`), found by the same probe.
With `model_impl: transformers`, vLLM's
Transformers backend drafts MTP for a text config with `num_mtp_layers`
(`__post_init__`, `using_transformers_mtp`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    """One branch of hf_config_override: a target (`model_type` or `architectures[0]`
    equal to `name`) drafted by `draft_type`, with `n_predict` read from `field`
    (dotted: `text_config.`, `mtp_config.`) or `fixed`; `default` when the field is
    absent; `without_field` False: no MTP draft at all without the field; `fallbacks`:
    the fields read, in order, when `field` is absent (`FALLBACKS`)."""

    match: str
    name: str
    draft_type: str
    field: str | None
    default: int | None
    fixed: int | None
    without_field: bool
    fallbacks: tuple[str, ...] = ()


# hf_config_override's second look (vllm/config/speculative.py v0.33.0): the Qwen3.5 branch
# takes `mtp_num_hidden_layers` off the config, and when it is None off
# get_hf_text_config(config); the Qwen4-exp branch reads the text config's
# `mtp_num_hidden_layers` with its `num_nextn_predict_layers` as the getattr default
_QWEN3_5 = ("text_config.mtp_num_hidden_layers",)
_QWEN4_EXP = ("text_config.num_nextn_predict_layers",)
FALLBACKS: dict[str, tuple[str, ...]] = {
    "qwen3_5": _QWEN3_5,
    "qwen3_5_moe": _QWEN3_5,
    "qwen3_5_moe_text": _QWEN3_5,
    "qwen3_5_text": _QWEN3_5,
    "qwen4_exp": _QWEN4_EXP,
    "qwen4_exp_mtp": _QWEN4_EXP,
    "qwen4_exp_text": _QWEN4_EXP,
}

# fmt: off
FAMILIES: tuple[Family, ...] = tuple(
    Family(*row, fallbacks=FALLBACKS.get(row[1], ()))  # type: ignore[misc]
    for row in (
        # match, name, draft type, n_predict field, default, fixed, without_field
        ("architecture", "BailingMoeV2_5ForCausalLM", "bailing_hybrid_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "BailingMoeV3ForCausalLM", "bailing_hybrid_v3_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "BailingMoeV3VLForConditionalGeneration", "bailing_hybrid_v3_mtp", "text_config.num_nextn_predict_layers", None, None, True),
        ("architecture", "Glm4MoeForCausalLM", "glm4_moe_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "Glm4MoeLiteForCausalLM", "glm4_moe_lite_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "GlmOcrForConditionalGeneration", "glm_ocr_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "MiMoForCausalLM", "mimo_mtp", "num_nextn_predict_layers", None, None, True),
        ("architecture", "MiMoV2FlashForCausalLM", "mimo_v2_mtp", None, 1, 1, True),
        ("architecture", "MiMoV2ForCausalLM", "mimo_v2_mtp", None, 1, 1, True),
        ("architecture", "MiMoV2OmniForCausalLM", "mimo_v2_mtp", None, 1, 1, True),
        ("architecture", "MiniMaxM3SparseForConditionalGeneration", "minimax_m3_mtp", "text_config.num_mtp_modules", 1, None, True),
        ("architecture", "Step3p5ForCausalLM", "step3p5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("architecture", "Step3p7ForConditionalGeneration", "step3p5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("architecture", "Step5ForCausalLM", "step5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("architecture", "Step5ForConditionalGeneration", "step5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("model_type", "bailing_hybrid", "bailing_hybrid_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "bailing_hybrid_mtp", "bailing_hybrid_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "bailing_hybrid_v3_mtp", "bailing_hybrid_v3_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "deepseek_mtp", "deepseek_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "deepseek_v3", "deepseek_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "deepseek_v32", "deepseek_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "deepseek_v4", "deepseek_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "dots3_note", "dots3_note_mtp", "num_nextn_predict_layers", 1, None, True),
        ("model_type", "dots3_note_mtp", "dots3_note_mtp", None, None, None, True),
        ("model_type", "ernie4_5_moe", "ernie_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "ernie_mtp", "ernie_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "exaone4_5", "exaone4_5_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "exaone4_5_mtp", "exaone4_5_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "exaone_moe", "exaone_moe_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "exaone_moe_mtp", "exaone_moe_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "gemma4_assistant", "gemma4_mtp", None, 1, 1, True),
        ("model_type", "gemma4_mtp", "gemma4_mtp", None, None, None, True),
        ("model_type", "gemma4_unified_assistant", "gemma4_mtp", None, 1, 1, True),
        ("model_type", "glm4_moe_lite_mtp", "glm4_moe_lite_mtp", None, None, None, True),
        ("model_type", "glm4_moe_mtp", "glm4_moe_mtp", None, None, None, True),
        ("model_type", "glm5_next", "glm5_next_mtp", "text_config.num_nextn_predict_layers", None, None, False),
        ("model_type", "glm5_next_mtp", "glm5_next_mtp", None, None, None, True),
        ("model_type", "glm_moe_dsa", "deepseek_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "glm_ocr_mtp", "glm_ocr_mtp", None, None, None, True),
        ("model_type", "hy_v3", "hy_v3_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "hy_v3_mtp", "hy_v3_mtp", None, None, None, True),
        ("model_type", "hy_v4", "hy_v4_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "hy_v4_mtp", "hy_v4_mtp", None, None, None, True),
        ("model_type", "inkling_mm_model", "inkling_mtp", "mtp_config.num_nextn_predict_layers", None, None, False),
        ("model_type", "inkling_model", "inkling_mtp", "mtp_config.num_nextn_predict_layers", None, None, False),
        ("model_type", "inkling_mtp", "inkling_mtp", None, None, None, True),
        ("model_type", "intern_s2_preview", "qwen3_5_mtp", "text_config.mtp_num_hidden_layers", None, None, True),
        ("model_type", "interns2_mobius", "qwen3_5_mtp", "text_config.mtp_num_hidden_layers", None, None, True),
        ("model_type", "kimi_k3", "kimi_k3_mtp", "text_config.num_nextn_predict_layers", None, None, True),
        ("model_type", "kimi_k3_mtp", "kimi_k3_mtp", None, None, None, True),
        ("model_type", "longcat_flash", "longcat_flash_mtp", "num_nextn_predict_layers", 1, None, True),
        ("model_type", "longcat_flash_mtp", "longcat_flash_mtp", None, None, None, True),
        ("model_type", "mimo_mtp", "mimo_mtp", None, None, None, True),
        ("model_type", "mimo_v2_mtp", "mimo_v2_mtp", None, None, None, True),
        ("model_type", "minimax_m3_mtp", "minimax_m3_mtp", "num_mtp_modules", 1, None, True),
        ("model_type", "minimax_m3_vl", "minimax_m3_mtp", "text_config.num_mtp_modules", 1, None, True),
        ("model_type", "mtp", "mtp", None, None, None, True),
        ("model_type", "nemotron_h", "nemotron_h_mtp", "num_nextn_predict_layers", None, None, False),
        ("model_type", "nemotron_h_mtp", "nemotron_h_mtp", "num_nextn_predict_layers", 1, None, True),
        ("model_type", "nemotron_h_puzzle", "nemotron_h_mtp", "num_nextn_predict_layers", None, None, False),
        ("model_type", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "pangu_ultra_moe_mtp", "pangu_ultra_moe_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "qwen3_5", "qwen3_5_mtp", "mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen3_5_moe", "qwen3_5_mtp", "mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen3_5_moe_text", "qwen3_5_mtp", "mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen3_5_mtp", "qwen3_5_mtp", None, None, None, True),
        ("model_type", "qwen3_5_text", "qwen3_5_mtp", "mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen3_next", "qwen3_next_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "qwen3_next_mtp", "qwen3_next_mtp", "num_nextn_predict_layers", None, None, True),
        ("model_type", "qwen4_exp", "qwen4_exp_mtp", "text_config.mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen4_exp_mtp", "qwen4_exp_mtp", "text_config.mtp_num_hidden_layers", None, None, True),
        ("model_type", "qwen4_exp_text", "qwen4_exp_mtp", "text_config.mtp_num_hidden_layers", None, None, True),
        ("model_type", "step3p5", "step3p5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("model_type", "step3p5_mtp", "step3p5_mtp", None, None, None, True),
        ("model_type", "step3p7", "step3p5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("model_type", "step5", "step5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
        ("model_type", "step5_mtp", "step5_mtp", None, None, None, True),
        ("model_type", "step5_vl", "step5_mtp", "text_config.num_nextn_predict_layers", 1, None, True),
    )
)
# fmt: on
BY_MODEL_TYPE = {f.name: f for f in FAMILIES if f.match == "model_type"}
BY_ARCHITECTURE = {f.name: f for f in FAMILIES if f.match == "architecture"}


@dataclass(frozen=True)
class MtpTarget:
    """What vLLM's MTP speculation finds in a target: whether it drafts MTP from it, and
    its `n_predict` (0: not known)."""

    supported: bool
    layers: int = 0
    draft_type: str | None = None


def family(data: Mapping[str, Any]) -> Family | None:
    """The branch of hf_config_override a config.json takes: its architecture's entry,
    else its model type's (no family's config matches entries of two draft types)."""
    archs = data.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if isinstance(arch, str) and arch in BY_ARCHITECTURE:
        return BY_ARCHITECTURE[arch]
    model_type = data.get("model_type")
    return BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 64
    return value if ok else None


def _field(data: Mapping[str, Any], dotted: str) -> int | None:
    head, _, name = dotted.rpartition(".")
    where: Any = data
    if head:
        # get_hf_text_config: the text config, or the config itself when it has none
        where = data.get(head) if isinstance(data.get(head), Mapping) else data
        if head == "mtp_config" and where is data:
            return None
    return _count(where.get(name)) if isinstance(where, Mapping) else None


def mtp_target(data: Mapping[str, Any], model_impl: Any = None) -> MtpTarget:
    """vLLM's MTP view of a target's config.json."""
    if model_impl == "transformers":
        text = data.get("text_config")
        layers = _count((text if isinstance(text, Mapping) else data).get("num_mtp_layers"))
        if layers is not None:
            return MtpTarget(True, layers, "transformers")
    found = family(data)
    if found is None:
        return MtpTarget(False)
    if found.fixed is not None:
        return MtpTarget(True, found.fixed, found.draft_type)
    layers = None
    for dotted in (found.field, *found.fallbacks) if found.field else ():
        layers = _field(data, dotted)
        if layers is not None:
            break
    if layers is None and not found.without_field:
        return MtpTarget(False, 0, found.draft_type)
    if layers is None:
        layers = found.default or 0
    return MtpTarget(True, layers, found.draft_type)


__all__ = ["FALLBACKS", "FAMILIES", "Family", "MtpTarget", "family", "mtp_target"]
