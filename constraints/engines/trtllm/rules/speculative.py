"""Speculative decoding rules: token budgets, EAGLE limits, Lookahead shape, mode links.

Budgets, EAGLE limits and build modes are the TensorRT engine builder's (scope
`tensorrt`); the decoding-config validators of the LLM API hold on both backends."""

from __future__ import annotations

from constraints.expr import all_of, eq, ge, gt, implies, le, ne, one_of, ref
from constraints.paths import SPECULATIVE_CONFIG
from constraints.rules._sources import TENSORRT, TRTLLM, batch_manager, builder, llm_args
from constraints.rules.base import Rule, Source

B = "build_config."
S = "speculative_config."
TYPE = SPECULATIVE_CONFIG.decoding_type

# decoding_type -> the build_config.speculative_decoding_mode it builds
MODE_OF = {
    "Medusa": "medusa",
    "Eagle": "eagle",
    "Lookahead": "lookahead_decoding",
    "DraftTarget": "draft_tokens_external",
    "MTP": "none",
}

W, N, V = (
    ref(S + "max_window_size"),
    ref(S + "max_ngram_size"),
    ref(S + "max_verification_set_size"),
)

RULES = [
    Rule(
        id="speculative.token-budget-covers-drafts",
        text="speculative decoding needs max_num_tokens >= max_batch_size * (max_draft_len + 1)",
        source=builder("T16"),
        scope=TENSORRT,
        expr=implies(
            ne(TYPE, "none"),
            ge(B + "max_num_tokens", ref(B + "max_batch_size") * (ref(B + "max_draft_len") + 1)),
        ),
        feasible={
            TYPE: "Medusa",
            B + "max_batch_size": 64,
            B + "max_draft_len": 4,
            B + "max_num_tokens": 320,
        },
        infeasible={
            TYPE: "Medusa",
            B + "max_batch_size": 64,
            B + "max_draft_len": 4,
            B + "max_num_tokens": 256,
        },
    ),
    Rule(
        id="speculative.eagle-limits",
        text="EAGLE supports max_batch_size <= 512 and max_draft_len <= 256",
        source=builder("T23"),
        scope=TENSORRT,
        expr=implies(
            eq(TYPE, "Eagle"), all_of(le(B + "max_batch_size", 512), le(B + "max_draft_len", 256))
        ),
        feasible={TYPE: "Eagle", B + "max_batch_size": 512},
        infeasible={TYPE: "Eagle", B + "max_batch_size": 1024},
    ),
    Rule(
        id="speculative.eagle-needs-paged-context-fmha",
        text="EAGLE needs paged context FMHA",
        source=builder("T23"),
        scope=TENSORRT,
        expr=implies(eq(TYPE, "Eagle"), eq("plugin_config.use_paged_context_fmha", True)),
        feasible={TYPE: "Eagle", "plugin_config.use_paged_context_fmha": True},
        infeasible={TYPE: "Eagle", "plugin_config.use_paged_context_fmha": False},
    ),
    Rule(
        id="speculative.draft-target-needs-block-reuse",
        text="a draft-target (external draft tokens) model needs block reuse",
        source=batch_manager("T39"),
        scope=TENSORRT,
        expr=implies(
            eq(B + "speculative_decoding_mode", "draft_tokens_external"),
            eq("kv_cache_config.enable_block_reuse", True),
        ),
        feasible={
            B + "speculative_decoding_mode": "draft_tokens_external",
            "kv_cache_config.enable_block_reuse": True,
        },
        infeasible={
            B + "speculative_decoding_mode": "draft_tokens_external",
            "kv_cache_config.enable_block_reuse": False,
        },
    ),
    Rule(
        id="speculative.mode-matches-decoding-type",
        text="build_config.speculative_decoding_mode must match speculative_config.decoding_type",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/llmapi/llm_args.py TrtLlmArgs.validate_speculative_config",
            "seed",
            "1.2",
        ),
        scope=TENSORRT,
        expr=all_of(
            *(
                implies(eq(TYPE, t), eq(B + "speculative_decoding_mode", m))
                for t, m in MODE_OF.items()
            ),
            implies(
                eq(TYPE, "none"),
                one_of(B + "speculative_decoding_mode", ["none", "explicit_draft_tokens"]),
            ),
        ),
        feasible={TYPE: "Medusa", B + "speculative_decoding_mode": "medusa"},
        infeasible={TYPE: "Medusa", B + "speculative_decoding_mode": "eagle"},
    ),
    Rule(
        id="speculative.drafts-need-draft-len",
        text="Medusa, EAGLE and draft-target decoding need max_draft_len > 0",
        source=llm_args("T48"),
        scope=TRTLLM,
        expr=implies(one_of(TYPE, ["Medusa", "Eagle", "DraftTarget"]), gt(B + "max_draft_len", 0)),
        feasible={TYPE: "Eagle", B + "max_draft_len": 3},
        infeasible={TYPE: "Eagle", B + "max_draft_len": 0},
    ),
    Rule(
        id="speculative.mtp-draft-len",
        text="MTP drafts exactly num_nextn_predict_layers tokens",
        source=llm_args("T48"),
        scope=TRTLLM,
        expr=implies(
            eq(TYPE, "MTP"), eq(ref(B + "max_draft_len"), ref(S + "num_nextn_predict_layers"))
        ),
        feasible={TYPE: "MTP", S + "num_nextn_predict_layers": 2, B + "max_draft_len": 2},
        infeasible={TYPE: "MTP", S + "num_nextn_predict_layers": 2, B + "max_draft_len": 3},
    ),
    Rule(
        id="speculative.lookahead-shape",
        text="Lookahead with max_ngram_size 1 needs max_window_size 1 and max_verification_set_size 0",
        source=Source(
            "TensorRT-LLM",
            "cpp/tensorrt_llm/executor/decodingConfig.cpp LookaheadDecodingConfig",
            "T47",
        ),
        scope=TENSORRT,
        expr=implies(
            all_of(eq(TYPE, "Lookahead"), eq(S + "max_ngram_size", 1)),
            all_of(eq(S + "max_window_size", 1), eq(S + "max_verification_set_size", 0)),
        ),
        feasible={
            TYPE: "Lookahead",
            S + "max_ngram_size": 1,
            S + "max_window_size": 1,
            S + "max_verification_set_size": 0,
        },
        infeasible={TYPE: "Lookahead", S + "max_ngram_size": 1, S + "max_window_size": 4},
    ),
    Rule(
        id="speculative.lookahead-draft-len",
        text="Lookahead needs max_draft_len >= (N - 2) + (W - 1 + V) * (N - 1)",
        source=Source(
            "TensorRT-LLM",
            "cpp/tensorrt_llm/executor/decodingConfig.cpp LookaheadDecodingConfig",
            "T47",
        ),
        scope=TENSORRT,
        expr=implies(
            all_of(eq(TYPE, "Lookahead"), gt(S + "max_ngram_size", 1)),
            ge(ref(B + "max_draft_len") - N + 2, (W - 1 + V) * (N - 1)),
        ),
        # W=4, N=3, V=4: (3 - 2) + (4 - 1 + 4) * (3 - 1) = 15
        feasible={TYPE: "Lookahead", B + "max_draft_len": 15},
        infeasible={
            TYPE: "Lookahead",
            S + "max_window_size": 4,
            S + "max_ngram_size": 3,
            S + "max_verification_set_size": 4,
            B + "max_draft_len": 14,
        },
    ),
    Rule(
        id="speculative.dynamic-tree-settings",
        text="an EAGLE dynamic tree needs dynamic_tree_max_topk > 0 and max_total_draft_tokens > 0",
        source=llm_args("T48"),
        scope=TRTLLM,
        expr=implies(
            eq(S + "use_dynamic_tree", True),
            all_of(gt(S + "dynamic_tree_max_topk", 0), gt(S + "max_total_draft_tokens", 0)),
        ),
        feasible={
            S + "use_dynamic_tree": True,
            S + "dynamic_tree_max_topk": 10,
            S + "max_total_draft_tokens": 60,
        },
        infeasible={S + "use_dynamic_tree": True, S + "dynamic_tree_max_topk": 0},
    ),
]
