"""vLLM 0.33's rules on speculative decoding."""

from __future__ import annotations

from constraints.expr import all_of, any_of, eq, ge, implies, le, ne, one_of, ref
from constraints.rules.base import Computed, Rule

from ..schema import VLLM_CONFIG
from . import (
    ADAPTIVE,
    BOTH,
    DRAFT,
    DRAFT_HEADS,
    DRAFT_SAMPLE,
    DRAFT_TP,
    EAGLE3,
    EAGLE3_TARGET,
    HETERO,
    LM_HEAD_QUANT,
    LM_HEAD_QUANT_METHODS,
    LOCAL_ARGMAX,
    LORA,
    METHOD,
    MTP_LAYERS,
    MTP_TARGET,
    PP,
    SCOPE,
    SPECULATIVE,
    TP,
    TYPE,
    VLLM_CONFIG_PY,
    VOCAB_DIFFERS,
    _draft_heads_divisible,
    _mtp_tokens,
    both,
    src,
)

RULES = [
    Rule(
        id="vllm.spec.ngram-bounds",
        text="for ngram speculation prompt_lookup_min must be at most prompt_lookup_max",
        source=both("vllm/config/speculative.py", "SpeculativeConfig.__post_init__ (ngram)"),
        scope=BOTH,  # the same check in 0.24.0 (its oracle records refuse alike)
        expr=implies(
            eq(TYPE, "NGram"),
            le(VLLM_CONFIG.prompt_lookup_min, ref("speculative_config.max_matching_ngram_size")),
        ),
        feasible={
            TYPE: "NGram",
            VLLM_CONFIG.prompt_lookup_min: 2,
            "speculative_config.max_matching_ngram_size": 4,
        },
        infeasible={
            TYPE: "NGram",
            VLLM_CONFIG.prompt_lookup_min: 4,
            "speculative_config.max_matching_ngram_size": 2,
        },
    ),
    Rule(
        id="vllm.spec.draft-tp-one-or-target",
        text="draft_tensor_parallel_size must be 1 or the target's tensor_parallel_size",
        source=both(
            "vllm/config/speculative.py",
            "SpeculativeConfig._verify_and_get_draft_tp",
        ),
        scope=BOTH,
        expr=any_of(
            one_of(VLLM_CONFIG.draft_tensor_parallel_size, (0, 1)),
            all_of(
                ge(VLLM_CONFIG.draft_tensor_parallel_size, ref(TP)),
                le(VLLM_CONFIG.draft_tensor_parallel_size, ref(TP)),
            ),
        ),
        feasible={VLLM_CONFIG.draft_tensor_parallel_size: 1, TP: 4},
        infeasible={VLLM_CONFIG.draft_tensor_parallel_size: 2, TP: 4},
    ),
    Rule(
        id="vllm.spec.eagle3-target-supported",
        text="EAGLE-3 needs a target model whose architecture implements vLLM's EAGLE-3"
        " interface (auxiliary hidden states; vllm_eagle3.EAGLE3_TARGETS)",
        source=src(
            "vllm/v1/worker/gpu_model_runner.py",
            "GPUModelRunner._setup_eagle3_aux_hidden_state_outputs (supports_eagle3,"
            " model_executor/models/interfaces.py SupportsEagle3)",
        ),
        scope=SCOPE,
        expr=implies(all_of(eq(TYPE, "Eagle"), eq(EAGLE3, True)), eq(EAGLE3_TARGET, True)),
        feasible={TYPE: "Eagle", EAGLE3: True, EAGLE3_TARGET: True},
        infeasible={TYPE: "Eagle", EAGLE3: True, EAGLE3_TARGET: False},
    ),
    Rule(
        id="vllm.spec.mtp-target-supported",
        text="MTP speculation needs a target family vLLM drafts MTP from (its model type or"
        " architecture maps to an MTP draft; vllm_mtp.FAMILIES)",
        source=both(
            "vllm/config/speculative.py",
            "SpeculativeConfig.hf_config_override and __post_init__ (MTPModelTypes)",
        ),
        scope=BOTH,  # the same check in 0.24.0 (its oracle records refuse alike)
        expr=implies(eq(TYPE, "MTP"), eq(MTP_TARGET, True)),
        feasible={TYPE: "MTP", MTP_TARGET: True},
        infeasible={TYPE: "MTP", MTP_TARGET: False},
    ),
    Rule(
        id="vllm.spec.mtp-tokens-multiple-of-layers",
        text="MTP: num_speculative_tokens above the model's MTP layers (n_predict ="
        " num_nextn_predict_layers) must be a multiple of them",
        source=src("vllm/config/speculative.py", "SpeculativeConfig.__post_init__ (n_predict)"),
        scope=SCOPE,
        expr=Computed(
            "num_speculative_tokens fits the MTP layers",
            _mtp_tokens,
            frozenset({TYPE, DRAFT, MTP_LAYERS}),
        ),
        feasible={TYPE: "MTP", MTP_LAYERS: 2, DRAFT: 4},
        infeasible={TYPE: "MTP", MTP_LAYERS: 2, DRAFT: 3},
    ),
    Rule(
        id="vllm.spec.draft-vocab-matches-target",
        text="a draft model (method draft_model) must have the target's vocab_size unless"
        " speculative_config.use_heterogeneous_vocab is set",
        source=both(
            SPECULATIVE,
            "SpeculativeConfig._verify_args -> verify_equal_vocab_size_if_draft_model",
        ),
        scope=BOTH,
        expr=implies(all_of(eq(TYPE, "DraftTarget"), eq(HETERO, False)), eq(VOCAB_DIFFERS, False)),
        feasible={TYPE: "DraftTarget", HETERO: True, VOCAB_DIFFERS: True},
        infeasible={TYPE: "DraftTarget", HETERO: False, VOCAB_DIFFERS: True},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-needs-draft-model",
        text="use_heterogeneous_vocab only works with method draft_model",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(TYPE, "DraftTarget")),
        feasible={HETERO: True, TYPE: "DraftTarget"},
        infeasible={HETERO: True, TYPE: "NGram"},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-greedy",
        text="use_heterogeneous_vocab supports only greedy draft sampling"
        " (draft_sample_method greedy)",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(DRAFT_SAMPLE, "greedy")),
        feasible={HETERO: True, DRAFT_SAMPLE: "greedy"},
        infeasible={HETERO: True, DRAFT_SAMPLE: "probabilistic"},
    ),
    Rule(
        id="vllm.spec.heterogeneous-vocab-full-logits",
        text="use_heterogeneous_vocab is not compatible with use_local_argmax_reduction"
        " (the token-level intersection needs the full draft logits)",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(HETERO, True), eq(LOCAL_ARGMAX, False)),
        feasible={HETERO: True, LOCAL_ARGMAX: False},
        infeasible={HETERO: True, LOCAL_ARGMAX: True},
    ),
    Rule(
        id="vllm.spec.tokens-given",
        text="speculative decoding needs num_speculative_tokens (at least 1)",
        source=src("vllm/config/speculative.py", "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(ne(TYPE, "none"), ge(DRAFT, 1)),
        feasible={TYPE: "NGram", DRAFT: 3},
        infeasible={TYPE: "NGram", DRAFT: 0},
    ),
    Rule(
        id="vllm.spec.draft-heads-divisible-by-draft-tp",
        text="a draft model's attention heads must be divisible by its tensor-parallel size"
        " (draft_tensor_parallel_size, by default the target's)",
        source=src(
            SPECULATIVE,
            "SpeculativeConfig.__post_init__ -> draft_model_config.verify_with_parallel_config"
            " (ModelConfig.verify_with_parallel_config)",
        ),
        scope=SCOPE,
        expr=Computed(
            "the draft's TP divides its heads",
            _draft_heads_divisible,
            frozenset({DRAFT_HEADS, DRAFT_TP, TP}),
        ),
        feasible={DRAFT_HEADS: 14, DRAFT_TP: 0, TP: 2},
        infeasible={DRAFT_HEADS: 14, DRAFT_TP: 0, TP: 4},
    ),
    Rule(
        id="vllm.spec.draft-lm-head-quantization-methods",
        text="draft_lm_head_quantization is supported only for methods eagle, eagle3 and mtp",
        source=src(SPECULATIVE, "SpeculativeConfig._verify_args"),
        scope=SCOPE,
        expr=implies(eq(LM_HEAD_QUANT, True), one_of(METHOD, LM_HEAD_QUANT_METHODS)),
        feasible={LM_HEAD_QUANT: True, METHOD: "eagle3"},
        infeasible={LM_HEAD_QUANT: True, METHOD: "draft_model"},
    ),
    Rule(
        id="vllm.spec.adaptive-verification-without-lora",
        text="adaptive draft verification (enable_adaptive_verification) is not compatible"
        " with LoRA",
        source=src(VLLM_CONFIG_PY, "VllmConfig._validate_adaptive_verification"),
        scope=SCOPE,
        expr=implies(eq(ADAPTIVE, True), eq(LORA, False)),
        feasible={ADAPTIVE: True, LORA: False},
        infeasible={ADAPTIVE: True, LORA: True},
    ),
    Rule(
        id="vllm.spec.adaptive-verification-without-pp",
        text="adaptive draft verification is not compatible with pipeline parallelism",
        source=src(VLLM_CONFIG_PY, "VllmConfig._validate_adaptive_verification"),
        scope=SCOPE,
        expr=implies(eq(ADAPTIVE, True), eq(PP, 1)),
        feasible={ADAPTIVE: True, PP: 1},
        infeasible={ADAPTIVE: True, PP: 2},
    ),
]
