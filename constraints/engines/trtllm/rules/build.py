"""Build-limit rules: token budgets, input and sequence lengths, profiles, logits.

These are checks of the TensorRT engine builder (builder.py, _common.check_max_num_tokens,
commands/build.py), scoped to the `tensorrt` backend. What the engine only warns about
changes nothing, so it is no rule: the TensorRT-LLM dialect reports it as a warning
(`arbiter/engines/trtllm/runtime_warnings.py`): the LLM API's max_batch_size above
max_num_tokens (BaseLlmArgs.validate_runtime_args), and the builder's max_seq_len above
the model's positions and max_num_tokens above 16384 (former default rules
`build.seq-len-within-model-positions` and `build.token-budget-at-most-16k`)."""

from __future__ import annotations

from constraints.expr import all_of, eq, ge, implies, le, ne, one_of, ref
from constraints.rules._sources import TENSORRT, build_cli, builder, max_num_tokens
from constraints.rules.base import Rule, Source
from constraints.schema import RECURRENT_ARCHITECTURES

B = "build_config."
RECURRENT = one_of("model.architecture", RECURRENT_ARCHITECTURES)

RULES = [
    Rule(
        id="build.opt-num-tokens-within-max",
        text="opt_num_tokens cannot exceed max_num_tokens",
        source=max_num_tokens("T30"),
        scope=TENSORRT,
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
        scope=TENSORRT,
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
        scope=TENSORRT,
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
        scope=TENSORRT,
        expr=le(B + "max_num_tokens", ref(B + "max_batch_size") * ref(B + "max_seq_len")),
        feasible={B + "max_batch_size": 2, B + "max_seq_len": 4096, B + "max_num_tokens": 8192},
        infeasible={B + "max_batch_size": 1, B + "max_seq_len": 4096, B + "max_num_tokens": 8192},
    ),
    Rule(
        id="build.input-len-within-seq-len",
        text="max_input_len cannot exceed max_seq_len",
        source=builder("T29, T31"),
        scope=TENSORRT,
        expr=le(B + "max_input_len", ref(B + "max_seq_len")),
        feasible={B + "max_input_len": 4096, B + "max_seq_len": 4096},
        infeasible={B + "max_input_len": 8192, B + "max_seq_len": 4096},
    ),
    Rule(
        id="build.multiple-profiles-no-opt-num-tokens",
        text="multiple_profiles cannot be combined with an explicit opt_num_tokens",
        source=build_cli("T32"),
        scope=TENSORRT,
        expr=implies(eq("plugin_config.multiple_profiles", True), eq(B + "opt_num_tokens", None)),
        feasible={"plugin_config.multiple_profiles": True, B + "opt_num_tokens": None},
        infeasible={"plugin_config.multiple_profiles": True, B + "opt_num_tokens": 1024},
    ),
    Rule(
        id="build.context-logits-no-drafts",
        text="context logits cannot be gathered when draft tokens are used (max_draft_len > 0)",
        source=build_cli("T33"),
        scope=TENSORRT,
        expr=implies(eq(B + "gather_context_logits", True), eq(B + "max_draft_len", 0)),
        feasible={B + "gather_context_logits": True, B + "max_draft_len": 0},
        infeasible={B + "gather_context_logits": True, B + "max_draft_len": 4},
    ),
    Rule(
        id="build.fp8-strongly-typed",
        text="FP8 weights or an FP8 KV cache need a strongly typed network",
        source=builder("T14"),
        scope=TENSORRT,
        expr=implies(
            eq("quant_config.quant_algo", "FP8") | eq("quant_config.kv_cache_quant_algo", "FP8"),
            eq(B + "strongly_typed", True),
        ),
        feasible={"quant_config.quant_algo": "FP8", B + "strongly_typed": True},
        infeasible={"quant_config.kv_cache_quant_algo": "FP8", B + "strongly_typed": False},
    ),
    Rule(
        id="build.kv-cache-type-matches-paged-kv",
        text="kv_cache_type is PAGED exactly when the KV is paged (paged_state for Mamba and RecurrentGemma, paged_kv_cache otherwise)",
        source=Source(
            "TensorRT-LLM", "tensorrt_llm/builder.py BuildConfig.update_kv_cache_type", "T36"
        ),
        scope=TENSORRT,
        expr=all_of(
            *(
                implies(guard, implies(eq(flag, True), eq(B + "kv_cache_type", "PAGED")))
                & implies(guard, implies(eq(flag, False), ne(B + "kv_cache_type", "PAGED")))
                for guard, flag in (
                    (~RECURRENT, "plugin_config.paged_kv_cache"),
                    (RECURRENT, "plugin_config.paged_state"),
                )
            )
        ),
        feasible={
            "model.architecture": "MambaForCausalLM",
            "plugin_config.paged_kv_cache": False,
            "plugin_config.paged_state": True,
            B + "kv_cache_type": "PAGED",
        },
        infeasible={"plugin_config.paged_kv_cache": True, B + "kv_cache_type": "CONTINUOUS"},
    ),
]
