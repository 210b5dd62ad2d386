"""Pairwise feature matrices as data: each forbidden pair is one rule "not (a and b)".

Three tables from the catalog: TensorRT-LLM's PyTorch-backend `CONFLICT_RULES` (T56), the
"No" cells of TensorRT-LLM's feature-combination matrix (T58), both scoped to the PyTorch
backend, and the red cells of vLLM's compatibility matrix (V29), scoped to vLLM. The
features are mapped onto our options in `FEATURES`; the matrix's speculative classes are:

- Spec-Linear: a linear draft chain (MTP, draft-target, EAGLE without a dynamic tree);
- Spec-Dynamic-Trees: EAGLE with a dynamic tree;
- Spec-Legacy ("Speculative Decoding - Legacy Path"): NGram and user-provided drafters.
  Their rules exist only while the schema has those decoding types.

On the PyTorch backend every EAGLE configuration is EAGLE-3 (one-model or two-model), so
validate_feature_combination's EAGLE-3 features cover any `Eagle` here; its sliding-window
feature is the model's own (layer types with sliding attention), read from
`model.sliding_window`, not an explicit max_attention_window.

Pairs that our schema cannot express as both-on (two values of one enum, such as
Spec-Linear with Spec-Dynamic-Trees, or the TRTLLM sampler with the Torch sampler) hold by
construction and get no rule; pairs of features we do not model (Helix, logits post
processors, disaggregated serving, pooling, multi-step scheduling...) are left out.
"""

from __future__ import annotations

from typing import Any

from constraints.expr import Expr, all_of, eq, gt, implies, ne, not_, one_of
from constraints.paths import RUNTIME_CONFIG, SPECULATIVE_CONFIG
from constraints.rules._sources import PYTORCH, VLLM, feature_check, feature_matrix, vllm_matrix
from constraints.rules.base import Rule, Scope, Source
from constraints.schema import DECODING_TYPES

TYPE = SPECULATIVE_CONFIG.decoding_type
S = "speculative_config."
BACKEND = RUNTIME_CONFIG.backend


def _f(expr: Expr, on: dict[str, Any], off: dict[str, Any], text: str) -> tuple:
    return (expr, on, off, text)


# feature -> (expression, a requirement that turns it on, one that keeps it off, words)
FEATURES: dict[str, tuple[Expr, dict[str, Any], dict[str, Any], str]] = {
    "mtp": _f(eq(TYPE, "MTP"), {TYPE: "MTP"}, {TYPE: "none"}, "MTP"),
    "sliding_window": _f(
        gt("model.sliding_window", 0),
        {"model.sliding_window": 4096},
        {"model.sliding_window": 0},
        "a model with sliding-window attention layers",
    ),
    "trtllm_sampler": _f(
        eq("runtime_config.sampler_type", "TRTLLMSampler"),
        {"runtime_config.sampler_type": "TRTLLMSampler"},
        {"runtime_config.sampler_type": "TorchSampler"},
        "the TRTLLM sampler",
    ),
    "eagle3_one_model": _f(
        all_of(eq(TYPE, "Eagle"), eq(S + "eagle3_one_model", True)),
        {TYPE: "Eagle", S + "eagle3_one_model": True},
        {TYPE: "none"},
        "one-model EAGLE-3",
    ),
    "eagle3_two_model": _f(
        all_of(eq(TYPE, "Eagle"), eq(S + "eagle3_one_model", False)),
        {TYPE: "Eagle", S + "eagle3_one_model": False},
        {TYPE: "none"},
        "two-model EAGLE-3",
    ),
    "pipeline_parallel": _f(
        gt("parallel_config.pipeline_parallel_size", 1),
        {"parallel_config.pipeline_parallel_size": 2},
        {"parallel_config.pipeline_parallel_size": 1},
        "pipeline parallelism",
    ),
    "spec_linear": _f(
        one_of(TYPE, ["MTP", "DraftTarget"])
        | all_of(eq(TYPE, "Eagle"), eq(S + "use_dynamic_tree", False)),
        {TYPE: "MTP"},
        {TYPE: "none"},
        "linear speculative decoding",
    ),
    "spec_dynamic": _f(
        all_of(eq(TYPE, "Eagle"), eq(S + "use_dynamic_tree", True)),
        {TYPE: "Eagle", S + "use_dynamic_tree": True},
        {TYPE: "none"},
        "dynamic-tree speculative decoding",
    ),
    "speculative": _f(ne(TYPE, "none"), {TYPE: "Medusa"}, {TYPE: "none"}, "speculative decoding"),
    "encoder_decoder": _f(
        eq("model.is_encoder_decoder", True),
        {"model.is_encoder_decoder": True},
        {"model.is_encoder_decoder": False},
        "an encoder-decoder model",
    ),
    "chunked_prefill": _f(
        eq("scheduler_config.enable_chunked_context", True),
        {"scheduler_config.enable_chunked_context": True},
        {"scheduler_config.enable_chunked_context": False},
        "chunked prefill",
    ),
    "prefix_caching": _f(
        eq("kv_cache_config.enable_block_reuse", True),
        {"kv_cache_config.enable_block_reuse": True},
        {"kv_cache_config.enable_block_reuse": False},
        "prefix caching (block reuse)",
    ),
    "lora": _f(
        eq("runtime_config.enable_lora", True),
        {"runtime_config.enable_lora": True},
        {"runtime_config.enable_lora": False},
        "LoRA",
    ),
    "beam_search": _f(
        gt("build_config.max_beam_width", 1),
        {"build_config.max_beam_width": 4},
        {"build_config.max_beam_width": 1},
        "beam search",
    ),
    "volta": _f(eq("device.sm", 70), {"device.sm": 70}, {"device.sm": 80}, "a Volta GPU"),
}

LEGACY_TYPES = [t for t in ("NGram", "User_Provided", "UserProvided") if t in DECODING_TYPES]
if LEGACY_TYPES:
    FEATURES["spec_legacy"] = _f(
        one_of(TYPE, LEGACY_TYPES),
        {TYPE: LEGACY_TYPES[0]},
        {TYPE: "none"},
        "NGram or user-provided speculative decoding",
    )

# (catalog ref, source, feature a, feature b): "a and b together are not supported"
TABLE: list[tuple[str, Source, str, str]] = [
    ("T56", feature_check("T56"), "mtp", "sliding_window"),
    ("T56", feature_check("T56"), "trtllm_sampler", "mtp"),
    ("T56", feature_check("T56"), "trtllm_sampler", "eagle3_one_model"),
    ("T56", feature_check("T56"), "trtllm_sampler", "eagle3_two_model"),
    ("T58", feature_matrix("T58"), "pipeline_parallel", "spec_linear"),
    ("T58", feature_matrix("T58"), "pipeline_parallel", "spec_dynamic"),
    ("T58", feature_matrix("T58"), "trtllm_sampler", "spec_linear"),
    ("T58", feature_matrix("T58"), "trtllm_sampler", "spec_dynamic"),
    ("V29", vllm_matrix("V29"), "encoder_decoder", "chunked_prefill"),
    ("V29", vllm_matrix("V29"), "encoder_decoder", "prefix_caching"),
    ("V29", vllm_matrix("V29"), "encoder_decoder", "lora"),
    ("V29", vllm_matrix("V29"), "encoder_decoder", "speculative"),
    ("V29", vllm_matrix("V29"), "speculative", "lora"),
    ("V29", vllm_matrix("V29"), "beam_search", "speculative"),
    ("V29", vllm_matrix("V29"), "volta", "chunked_prefill"),
    ("V29", vllm_matrix("V29"), "volta", "prefix_caching"),
]
if LEGACY_TYPES:
    TABLE += [
        ("T58", feature_matrix("T58"), "pipeline_parallel", "spec_legacy"),
        ("T58", feature_matrix("T58"), "trtllm_sampler", "spec_legacy"),
    ]
SCOPES: dict[str, Scope] = {"T56": PYTORCH, "T58": PYTORCH, "V29": VLLM}
# pairs a release's code contradicts: vLLM 0.33 serves LoRA with speculative decoding
# (EngineArgs.create_engine_config only asks the token budget to hold the draft tokens),
# and keeps prefix caching an encoder-decoder model is given explicitly (only its default
# is off, ModelConfig.is_prefix_caching_supported; SchedulerConfig.__post_init__ turns
# chunked prefill off, which the vllm dialect reports as an adjustment; both checked
# with vLLM 0.33.0's own code)
SCOPE_OVERRIDES: dict[tuple[str, str], Scope] = {
    ("speculative", "lora"): Scope("vllm", until="0.32"),
    ("encoder_decoder", "prefix_caching"): Scope("vllm", until="0.32"),
}


def pair_rule(ref: str, source: Source, a: str, b: str) -> Rule:
    """The rule "not (a and b)" with its examples: a on with b off, and both on."""
    ea, on_a, _, text_a = FEATURES[a]
    eb, on_b, off_b, text_b = FEATURES[b]
    return Rule(
        id=f"pairs.{ref.lower()}.{a.replace('_', '-')}-x-{b.replace('_', '-')}",
        text=f"{text_a} and {text_b} cannot be combined",
        source=source,
        scope=SCOPE_OVERRIDES.get((a, b), SCOPES[ref]),
        expr=implies(ea, not_(eb)),
        feasible={**on_a, **off_b},
        infeasible={**on_a, **on_b},
    )


RULES = [pair_rule(*row) for row in TABLE]
