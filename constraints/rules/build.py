"""Build-limit rules: token budgets, input and sequence lengths, profiles, logits."""

from __future__ import annotations

from ..expr import eq, ge, implies, le, ne, ref
from ._sources import build_cli, builder, max_num_tokens
from .base import Rule

B = "build_config."

RULES = [
    Rule(
        id="build.opt-num-tokens-within-max",
        text="opt_num_tokens cannot exceed max_num_tokens",
        source=max_num_tokens("T30"),
        expr=implies(
            ne(B + "opt_num_tokens", None), le(B + "opt_num_tokens", ref(B + "max_num_tokens"))
        ),
        feasible={B + "opt_num_tokens": 4096, B + "max_num_tokens": 8192},
        infeasible={B + "opt_num_tokens": 9000, B + "max_num_tokens": 8192},
    ),
    Rule(
        id="build.num-tokens-cover-a-block",
        text="with context FMHA, max_num_tokens must be at least tokens_per_block",
        source=max_num_tokens("T30"),
        expr=implies(
            eq("plugin_config.context_fmha", True),
            ge(B + "max_num_tokens", ref("kv_cache_config.tokens_per_block")),
        ),
        feasible={B + "max_num_tokens": 64, "kv_cache_config.tokens_per_block": 64},
        infeasible={
            "plugin_config.context_fmha": True,
            B + "max_num_tokens": 32,
            "kv_cache_config.tokens_per_block": 64,
        },
    ),
    Rule(
        id="build.num-tokens-cover-input-without-fmha",
        text="without context FMHA, max_num_tokens must be at least max_input_len",
        source=max_num_tokens("T30"),
        expr=implies(
            eq("plugin_config.context_fmha", False),
            ge(B + "max_num_tokens", ref(B + "max_input_len")),
        ),
        feasible={
            "plugin_config.context_fmha": False,
            B + "max_num_tokens": 2048,
            B + "max_input_len": 2048,
        },
        infeasible={
            "plugin_config.context_fmha": False,
            B + "max_num_tokens": 1024,
            B + "max_input_len": 2048,
        },
    ),
    Rule(
        id="build.num-tokens-within-batch-capacity",
        text="max_num_tokens cannot exceed max_batch_size * max_seq_len",
        source=max_num_tokens("T30"),
        expr=le(B + "max_num_tokens", ref(B + "max_batch_size") * ref(B + "max_seq_len")),
        feasible={B + "max_batch_size": 2, B + "max_seq_len": 4096, B + "max_num_tokens": 8192},
        infeasible={B + "max_batch_size": 1, B + "max_seq_len": 4096, B + "max_num_tokens": 8192},
    ),
    Rule(
        id="build.input-len-within-seq-len",
        text="max_input_len cannot exceed max_seq_len",
        source=builder("T29, T31"),
        expr=le(B + "max_input_len", ref(B + "max_seq_len")),
        feasible={B + "max_input_len": 4096, B + "max_seq_len": 4096},
        infeasible={B + "max_input_len": 8192, B + "max_seq_len": 4096},
    ),
    Rule(
        id="build.multiple-profiles-no-opt-num-tokens",
        text="multiple_profiles cannot be combined with an explicit opt_num_tokens",
        source=build_cli("T32"),
        expr=implies(eq("plugin_config.multiple_profiles", True), eq(B + "opt_num_tokens", None)),
        feasible={"plugin_config.multiple_profiles": True, B + "opt_num_tokens": None},
        infeasible={"plugin_config.multiple_profiles": True, B + "opt_num_tokens": 1024},
    ),
    Rule(
        id="build.context-logits-no-drafts",
        text="context logits cannot be gathered when draft tokens are used (max_draft_len > 0)",
        source=build_cli("T33"),
        expr=implies(eq(B + "gather_context_logits", True), eq(B + "max_draft_len", 0)),
        feasible={B + "gather_context_logits": True, B + "max_draft_len": 0},
        infeasible={B + "gather_context_logits": True, B + "max_draft_len": 4},
    ),
]
