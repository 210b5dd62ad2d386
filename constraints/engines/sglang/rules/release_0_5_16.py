"""SGLang 0.5.16's own forms of the rules where its code differs from 0.5.23's, each
scoped to the 0.5 line up to 0.5.16 and sourced to the 0.5.16 wheel (the 0.5.23 rules
they stand in for are scoped to 0.5.23 on: `_releases.ONLY_0_5_23`).

Re-authored from sglang 0.5.16: python/sglang/srt/server_args.py (`ServerArgs`, whose
`__post_init__` resolves the arguments and whose `check_server_args` runs at launch),
arg_groups/speculative_hook.py and arg_groups/overrides.py of that release.
"""

from __future__ import annotations

from dataclasses import replace

from constraints.expr import Expr, all_of, any_of, eq, ge, gt, implies, lt, ne, one_of, ref
from constraints.rules.base import Rule, Source
from constraints.schema import ARCHITECTURES

from ._releases import UNTIL_0_5_16
from .backend import SM, TOPK_GIVEN, _mha_default
from .sglang import (
    ALGO,
    ARCH,
    BACKEND,
    BACKEND_GIVEN,
    DECODE_BACKEND,
    DETERMINISTIC,
    KV_REPLICATED,
    LORA,
    PAGE,
    PP,
    PREFILL_BACKEND,
    S,
    decode_in,
    fa4_forces_page_128,
    main_or_decode,
    page_within,
    prefill_in,
    uses,
)


def v0516(file: str, function: str) -> Source:
    return Source("SGLang", f"python/sglang/srt/{file} {function}", "v0.5.16", "0.5.16")


def _forced_page_size() -> Expr:
    """overrides._mla_backend_page_constraints (v0.5.16), chained as 0.5.16 chains it: 64
    for flashmla (attention or decode); then 128 for cutlass_mla (attention or decode); 32
    or 64 (else 64) for trtllm_mla and tokenspeed_mla (attention or decode) and
    cutedsl_mla (any); 16, 32 or 64 (else 64) for trtllm_mha (any); then FA4's 128
    (sglang.fa4-page-128-on-blackwell); otherwise the page size as written. The forced
    values nest ({64} in {32, 64} in {16, 32, 64}); cutlass_mla's 128 is in neither, so a
    later MLA or trtllm_mha step makes it 64."""
    fa4 = fa4_forces_page_128()
    cutlass = main_or_decode("cutlass_mla")
    to64 = all_of(~cutlass, main_or_decode("flashmla"))
    mla = any_of(
        main_or_decode("trtllm_mla"), main_or_decode("tokenspeed_mla"), uses("cutedsl_mla")
    )
    mha = uses("trtllm_mha")
    keep = eq(ref(PAGE), ref(S + "page_size"))

    return all_of(
        implies(all_of(~fa4, cutlass, any_of(mla, mha)), eq(PAGE, 64)),
        implies(all_of(~fa4, cutlass, ~mla, ~mha), eq(PAGE, 128)),
        implies(all_of(~fa4, to64), eq(PAGE, 64)),
        implies(all_of(~fa4, ~cutlass, ~to64, mla), page_within((32, 64))),
        implies(all_of(~fa4, ~cutlass, ~to64, ~mla, mha), page_within((16, 32, 64))),
        implies(all_of(~fa4, ~cutlass, ~to64, ~mla, ~mha), keep),
    )


_SM100 = all_of(ge(SM, 100), lt(SM, 110))  # is_sm100_supported: capability major 10
_DECODE_SMS = any_of(all_of(ge(SM, 90), lt(SM, 110)), all_of(ge(SM, 120), lt(SM, 130)))
_UNSET = {BACKEND: None, PREFILL_BACKEND: None, DECODE_BACKEND: None}

# server_args.py ServerArgs._handle_deterministic_inference (is_deepseek_model, v0.5.16);
# 0.5.23's check admits ascend and fa4 as well (sglang.deterministic-absorbed-mla-backends)
_DEEPSEEK_0516 = (
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration",
    "GlmMoeDsaForCausalLM",
)

RULES = [
    Rule(
        id="sglang.deterministic-deepseek-backends-0.5.16",
        text=(
            "deterministic inference on a DeepSeek-family model runs only the fa3 or triton"
            " attention backend (a written one; unset, its fallback is one of them: SGLang"
            " 0.5.16; 0.5.23 admits ascend and fa4 too)"
        ),
        source=v0516(
            "server_args.py",
            "ServerArgs._handle_deterministic_inference (deepseek_deterministic_attention_"
            "backends)",
        ),
        expr=implies(
            all_of(
                eq(DETERMINISTIC, True),
                one_of(ARCH, [a for a in _DEEPSEEK_0516 if a in ARCHITECTURES]),
                eq(BACKEND_GIVEN, True),
            ),
            one_of(BACKEND, ("fa3", "triton")),
        ),
        feasible={
            DETERMINISTIC: True,
            ARCH: "DeepseekV3ForCausalLM",
            BACKEND_GIVEN: True,
            BACKEND: "triton",
        },
        infeasible={
            DETERMINISTIC: True,
            ARCH: "DeepseekV3ForCausalLM",
            BACKEND_GIVEN: True,
            BACKEND: "fa4",
        },
        topic="sglang",
    ),
    Rule(
        id="sglang.spec-mixed-chunk-off-0.5.16",
        text="mixed chunked prefill is switched off for every speculative algorithm (SGLang"
        " 0.5.16; 0.5.23 keeps it for EAGLE, EAGLE3, NEXTN, DFLASH and DSPARK)",
        source=v0516(
            "arg_groups/speculative_hook.py",
            "_handle_eagle_family / _handle_ngram / _handle_dflash / _handle_dspark",
        ),
        expr=implies(ne(ALGO, None), eq(S + "enable_mixed_chunk", False)),
        feasible={ALGO: "EAGLE", S + "enable_mixed_chunk": False},
        infeasible={ALGO: "EAGLE", S + "enable_mixed_chunk": True},
        topic="sglang",
    ),
    Rule(
        id="sglang.lora-speculative-0.5.16",
        text="LoRA works only with NGRAM speculative decoding (SGLang 0.5.16; 0.5.23 adds"
        " EAGLE, EAGLE3, NEXTN, DFLASH and DSPARK)",
        source=v0516(
            "server_args.py",
            "ServerArgs.check_lora_server_args (run by check_server_args at launch)",
        ),
        expr=implies(eq(LORA, True), one_of(ALGO, (None, "NGRAM"))),
        feasible={LORA: True, ALGO: "NGRAM"},
        infeasible={LORA: True, ALGO: "EAGLE"},
        topic="sglang",
    ),
    Rule(
        id="sglang.pp-no-speculative-0.5.16",
        text="pipeline parallelism runs no speculative decoding (SGLang 0.5.16; 0.5.23 runs"
        " EAGLE on a PD prefill server)",
        source=v0516(
            "server_args.py",
            "ServerArgs.check_server_args (pp_size > 1: speculative_algorithm is None; run"
            " at launch)",
        ),
        expr=implies(gt(PP, 1), eq(ALGO, None)),
        feasible={PP: 2, ALGO: None},
        infeasible={PP: 2, ALGO: "EAGLE"},
        topic="sglang",
    ),
    Rule(
        id="sglang.backend-page-size-0.5.16",
        text="attention backends force their page sizes, the prefill and decode backends"
        " included: flashmla 64; cutlass_mla 128; trtllm_mla, tokenspeed_mla and cutedsl_mla 32 or 64 (else"
        " 64); trtllm_mha 16, 32 or 64 (else 64); fa4 on SM100 128; otherwise the page size"
        " as written (SGLang 0.5.16)",
        source=v0516("arg_groups/overrides.py", "_mla_backend_page_constraints"),
        expr=_forced_page_size(),
        feasible={**_UNSET, BACKEND: "trtllm_mha", S + "page_size": 128, PAGE: 64},
        infeasible={**_UNSET, BACKEND: "trtllm_mha", S + "page_size": 128, PAGE: 128},
        topic="sglang",
    ),
    Rule(
        id="sglang.trtllm-mha-needs-hopper-or-blackwell-0.5.16",
        text="the trtllm_mha attention backend prefills only on an SM100 GPU and decodes only"
        " on a Hopper (SM90), SM100 or SM120 GPU (SGLang 0.5.16; 0.5.23 prefills on Hopper"
        " too)",
        source=v0516(
            "server_args.py",
            "ServerArgs._handle_attention_backend_compatibility (is_sm100_supported;"
            " is_sm90 / is_sm100 / is_sm120_supported)",
        ),
        expr=all_of(
            implies(prefill_in("trtllm_mha"), _SM100),
            implies(decode_in("trtllm_mha"), _DECODE_SMS),
        ),
        feasible={**_UNSET, BACKEND: "trtllm_mha", SM: 100},
        infeasible={**_UNSET, BACKEND: "trtllm_mha", SM: 90},
        topic="sglang",
    ),
    Rule(
        id="sglang.default-backend-mha-0.5.16",
        text=(
            "with attention_backend unset SGLang 0.5.16 picks fa3 on Hopper and trtllm_mha"
            " on SM100 (no top-k written, or a chain on one-token pages; on SM100 not for a"
            " speculative algorithm with its top-k left to derive), else flashinfer (triton"
            " for models with attention sinks); not for models with their own override hook"
        ),
        source=v0516(
            "server_args.py",
            "ServerArgs._get_default_attn_backend (overrides._attention_backend_default)",
        ),
        expr=_mha_default("0.5.16"),
        feasible={
            ARCH: "LlamaForCausalLM",
            KV_REPLICATED: False,
            **_UNSET,
            SM: 100,
            TOPK_GIVEN: False,
            BACKEND: "trtllm_mha",
        },
        infeasible={
            ARCH: "LlamaForCausalLM",
            KV_REPLICATED: False,
            PREFILL_BACKEND: None,
            SM: 100,
            TOPK_GIVEN: False,
            DETERMINISTIC: False,
            BACKEND: "fa3",
        },
        kind="default",
        topic="sglang",
    ),
]
RULES = [replace(r, scope=UNTIL_0_5_16) for r in RULES]

__all__ = ["RULES"]
