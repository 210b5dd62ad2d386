"""SGLang 0.5: the FP4 KV caches (`kv_cache_dtype` nvfp4 or fp4_mx_block16) against the
GPU, the attention backends, speculative decoding and the KV transfer / host tiers.

Re-authored from `arg_groups/kv_cache_hook.py` of sgl-project/sglang v0.5.23:
`handle_nvfp4_prefill_kv_dequant_dtype` (which backends an nvfp4 KV cache prefills and
decodes on: the dialect derives the phases it declares, `sglang_derive.nvfp4_phases`) and
`handle_kv4_compatibility`, which runs after the attention backend is resolved
(`pipeline.py`: after `handle_attention_backend_compatibility`), so it reads the resolved
prefill and decode backends (`attention_backends_of`: a phase's own backend, else the
resolved attention_backend).

Not modelled (fields arbiter carries through): `enable_unified_memory` and `enable_lmcache`
(refused with an FP4 KV cache / with SM100 NVFP4 on trtllm_mha), a written
`speculative_draft_attention_backend` other than trtllm_mha for a draft model there
(refused; unset, SGLang sets trtllm_mha), and `speculative_attention_mode` prefill, which
SGLang rewrites to decode for the mixed flashinfer-prefill / trtllm_mha-decode NVFP4 recipe.
"""

from __future__ import annotations

from dataclasses import replace

from constraints.expr import Expr, all_of, any_of, eq, ge, implies, lt, one_of
from constraints.paths import DEVICE
from constraints.rules.base import Rule

from ._releases import scoped
from .sglang import (
    ALGO,
    BACKEND,
    DECODE_BACKEND,
    KV_REPLICATED,
    MODE,
    NAMED_BACKENDS,
    PREFILL_BACKEND,
    SGLANG,
    TOPK,
    S,
    decode_in,
    prefill_in,
    sglang,
)

KV_DTYPE = S + "kv_cache_dtype"
HICACHE = S + "enable_hierarchical_cache"
DEQUANT = S + "prefill_kv_cache_dequant_dtype"
SM = DEVICE.sm
HOOK = "arg_groups/kv_cache_hook.py"
FN = "handle_kv4_compatibility"
KV4 = one_of(KV_DTYPE, ["nvfp4", "fp4_mx_block16"])
# the backends each case of the check admits (FA4 prefill: the decode backend; otherwise
# the one backend both phases run)
FA4_MHA_DECODE = ("triton", "torch_native", "flex_attention")
MHA_BACKENDS = ("triton", "torch_native", "flex_attention", "trtllm_mha")
# 0.5.16 lists cutlass_mla too (server_args.py _handle_kv4_compatibility, v0.5.16), a
# backend 0.5.23 no longer has (sglang.cutlass-mla-until-0.5.16 refuses it there)
MLA_BACKENDS = ("flashinfer", "trtllm_mla", "cutlass_mla")
# the speculative algorithms SM100 NVFP4 on trtllm_mha runs (NEXTN is read as EAGLE)
NVFP4_SPEC = (None, "EAGLE", "EAGLE3", "NGRAM")

_SM100 = all_of(ge(SM, 100), lt(SM, 110))
_SM120 = all_of(ge(SM, 120), lt(SM, 130))
# uses_sm100_trtllm_nvfp4: nvfp4 on an SM10x GPU with trtllm_mha as prefill or decode backend
NVFP4_TRTLLM = all_of(
    eq(KV_DTYPE, "nvfp4"), _SM100, any_of(prefill_in("trtllm_mha"), decode_in("trtllm_mha"))
)


def _both_phases(backend: str) -> Expr:
    """Prefill and decode both run `backend`."""
    return all_of(prefill_in(backend), decode_in(backend))


def _one_backend_in(allowed: tuple[str, ...]) -> Expr:
    """The check's second case: both phases on one backend (not fa4), which must be one of
    `allowed` (phases on different backends only warn)."""
    return all_of(*(~_both_phases(b) for b in NAMED_BACKENDS if b not in allowed and b != "fa4"))


def _backends(mla: bool) -> Expr:
    fa4_decode = MLA_BACKENDS if mla else FA4_MHA_DECODE
    return implies(
        all_of(KV4, eq(KV_REPLICATED, mla)),
        all_of(
            implies(prefill_in("fa4"), decode_in(*fa4_decode)),
            _one_backend_in(MLA_BACKENDS if mla else MHA_BACKENDS),
        ),
    )


_MHA = {KV_REPLICATED: False, PREFILL_BACKEND: None, DECODE_BACKEND: None}
_NV_B200 = {
    KV_DTYPE: "nvfp4",
    SM: 100,
    BACKEND: "trtllm_mha",
    KV_REPLICATED: False,
    PREFILL_BACKEND: "trtllm_mha",
    DECODE_BACKEND: "trtllm_mha",
}

RULES = [
    Rule(
        id="sglang.nvfp4-kv-phases",
        text=(
            "an nvfp4 KV cache decodes on trtllm_mha and prefills on flashinfer (over an FP8"
            " workspace) or on trtllm_mha (native NVFP4, SM100 only); a prefill_kv_cache_"
            "dequant_dtype written names which"
        ),
        source=sglang(HOOK, "handle_nvfp4_prefill_kv_dequant_dtype"),
        expr=implies(
            eq(KV_DTYPE, "nvfp4"),
            all_of(
                one_of(PREFILL_BACKEND, ["flashinfer", "trtllm_mha"]),
                eq(DECODE_BACKEND, "trtllm_mha"),
                implies(eq(PREFILL_BACKEND, "trtllm_mha"), _SM100),
                implies(eq(DEQUANT, "nvfp4"), eq(PREFILL_BACKEND, "trtllm_mha")),
                implies(eq(DEQUANT, "fp8_e4m3"), eq(PREFILL_BACKEND, "flashinfer")),
            ),
        ),
        feasible={
            KV_DTYPE: "nvfp4",
            SM: 120,
            PREFILL_BACKEND: "flashinfer",
            DECODE_BACKEND: "trtllm_mha",
        },
        infeasible={
            KV_DTYPE: "nvfp4",
            SM: 120,
            PREFILL_BACKEND: "trtllm_mha",
            DECODE_BACKEND: "trtllm_mha",
        },
    ),
    Rule(
        id="sglang.dequant-dtype-needs-nvfp4",
        text="prefill_kv_cache_dequant_dtype other than auto applies only to an nvfp4 KV cache",
        source=sglang(HOOK, "handle_nvfp4_prefill_kv_dequant_dtype"),
        expr=implies(~eq(DEQUANT, "auto"), eq(KV_DTYPE, "nvfp4")),
        feasible={DEQUANT: "fp8_e4m3", KV_DTYPE: "nvfp4"},
        infeasible={DEQUANT: "fp8_e4m3", KV_DTYPE: "fp8_e4m3"},
    ),
    Rule(
        id="sglang.nvfp4-kv-needs-blackwell",
        text="an nvfp4 KV cache needs an SM100 or SM120 GPU (fp4_mx_block16 is the FP4 recipe for others)",
        source=sglang(HOOK, FN),
        expr=implies(eq(KV_DTYPE, "nvfp4"), any_of(_SM100, _SM120)),
        feasible={KV_DTYPE: "nvfp4", SM: 120},
        infeasible={KV_DTYPE: "nvfp4", SM: 90},
    ),
    Rule(
        id="sglang.kv4-mha-backends",
        text=(
            "an FP4 KV cache on a non-MLA model: with fa4 prefill the decode backend is triton,"
            " torch_native or flex_attention; with one backend for both phases it is triton,"
            " torch_native, flex_attention or trtllm_mha"
        ),
        source=sglang(HOOK, FN + " (KV4_FA4_MHA / KV4_ATTENTION_MHA_BACKEND_CHOICES)"),
        expr=_backends(False),
        feasible={KV_DTYPE: "fp4_mx_block16", SM: 90, BACKEND: "triton", **_MHA},
        infeasible={KV_DTYPE: "fp4_mx_block16", SM: 90, BACKEND: "fa3", **_MHA},
    ),
    Rule(
        id="sglang.kv4-mla-backends",
        text=(
            "an FP4 KV cache on an MLA model runs flashinfer or trtllm_mla (as the one backend"
            " of both phases, or as the decode backend after fa4 prefill)"
        ),
        source=sglang(HOOK, FN + " (KV4_FA4_MLA / KV4_ATTENTION_MLA_BACKEND_CHOICES)"),
        expr=_backends(True),
        feasible={
            KV_DTYPE: "nvfp4",
            KV_REPLICATED: True,
            PREFILL_BACKEND: "fa4",
            DECODE_BACKEND: "trtllm_mla",
        },
        infeasible={
            KV_DTYPE: "nvfp4",
            KV_REPLICATED: True,
            PREFILL_BACKEND: "fa4",
            DECODE_BACKEND: "triton",
        },
    ),
    Rule(
        id="sglang.nvfp4-trtllm-mha-speculative",
        text=(
            "NVFP4 KV on SM100 with trtllm_mha runs speculative decoding only as EAGLE, EAGLE3,"
            " NEXTN or breadth-1 NGRAM (not DFLASH, DSPARK, STANDALONE, FROZEN_KV_MTP)"
        ),
        source=sglang(HOOK, FN + " (uses_sm100_trtllm_nvfp4)"),
        expr=implies(
            NVFP4_TRTLLM,
            all_of(one_of(ALGO, list(NVFP4_SPEC)), implies(eq(ALGO, "NGRAM"), eq(TOPK, 1))),
        ),
        feasible={**_NV_B200, ALGO: "NGRAM", TOPK: 1},
        infeasible={**_NV_B200, ALGO: "NGRAM", TOPK: 10},
    ),
    Rule(
        id="sglang.nvfp4-trtllm-mha-no-transfer",
        text=(
            "NVFP4 KV on SM100 with trtllm_mha keeps its block scales only on the GPU:"
            " no PD disaggregation and no hierarchical cache"
        ),
        source=sglang(HOOK, FN + " (uses_sm100_trtllm_nvfp4)"),
        expr=implies(NVFP4_TRTLLM, all_of(eq(MODE, "null"), eq(HICACHE, False))),
        feasible={**_NV_B200, MODE: "null", HICACHE: False},
        infeasible={**_NV_B200, MODE: "prefill", HICACHE: False},
    ),
]
RULES = [replace(r, scope=SGLANG, topic="sglang") for r in RULES]
RULES = scoped(RULES)  # the rules SGLang 0.5.16 does not hold: 0.5.23 on

__all__ = ["RULES"]
