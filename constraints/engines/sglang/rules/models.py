"""SGLang 0.5: what SGLang's per-model override hooks pick and require for the model
architectures arbiter knows by name (gpt-oss, Llama 4, DeepSeek-V3, Gemma 2 / 3).

SGLang 0.5.23 runs each architecture's override providers (`arg_groups/model_overrides/
*.py`, registered by `_register_for`) in `handle_model_specific_adjustments`, before the
generic default backend (`overrides._attention_backend_default`, the rules of
`sglang_backend.py`); it then checks the backends an architecture runs on
(`arg_groups/model_hook.py`). A hook that sets `attention_backend` only when it is unset is
a default rule here (the user's backend wins); a hook that sets a field whatever the user
wrote is a hard rule on the field as written, so that a written value it rewrites is
reported as SGLang's adjustment; a check that raises is a hard rule.

After a hook that leaves the backend unset (DeepSeek-V3 off SM100; gpt-oss with a prefill or
decode backend written) the generic default applies (`sglang_backend._default_applies`).
Not told apart (no model fact): a DeepseekV3ForCausalLM config with DSA's `index_topk`
(SGLang then picks the `dsa` backend); the other architectures of
`sglang_backend.MODEL_OVERRIDE_ARCHITECTURES` (Qwen3-Next's hybrid linear attention, whose
SM100 default also reads the Mamba radix-cache strategy; MiMo-V2, Gemma 4, ...) keep an
unset backend as written.
"""

from __future__ import annotations

from dataclasses import replace

from constraints.expr import Expr, all_of, any_of, eq, ge, implies, lt, ne, one_of
from constraints.paths import DEVICE
from constraints.rules.base import Rule

from ._releases import scoped
from .sglang import (
    ARCH,
    BACKEND,
    DECODE_BACKEND,
    KV_REPLICATED,
    PREFILL_BACKEND,
    SGLANG,
    S,
    _split_same,
    decode_in,
    prefill_in,
    sglang,
)

SM = DEVICE.sm
HYBRID_SWA_OFF = S + "disable_hybrid_swa_memory"
GIVEN = S + "attention_backend_given"
GPT_OSS = "GptOssForCausalLM"
DEEPSEEK_V3 = "DeepseekV3ForCausalLM"
# the Llama 4 classes the arbiter's architecture option names (the hook also serves
# Llama4ForCausalLM, which it reads as `other`)
LLAMA4 = ("Llama4ForConditionalGeneration",)
# _gemma2_gemma3_overrides' classes the architecture option names (also Gemma3n)
GEMMA_2_3 = ("Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
# model_hook.handle_model_specific_adjustments: the backends gpt-oss runs (prefill and decode)
GPT_OSS_BACKENDS = (
    "triton",
    "trtllm_mha",
    "fa3",
    "fa4",
    "ascend",
    "intel_amx",
    "intel_xpu",
    "aiter",
)
# ... and the attention_backend Llama 4 runs
LLAMA4_BACKENDS = ("fa3", "aiter", "triton", "ascend", "trtllm_mha", "intel_xpu")
# architectures whose override hook decides the backend here (the generic default then
# applies only where the hook leaves it unset: `hook_decides`)
MODELLED = frozenset({GPT_OSS, DEEPSEEK_V3, *LLAMA4})

_SM90 = all_of(ge(SM, 90), lt(SM, 100))  # get_platform().is_sm90: capability major 9
_SM100 = all_of(ge(SM, 100), lt(SM, 110))  # is_sm100: capability major 10
_ALL_UNSET = all_of(eq(PREFILL_BACKEND, None), eq(DECODE_BACKEND, None))
GPT_OSS_HOOK = all_of(eq(ARCH, GPT_OSS), _ALL_UNSET)
LLAMA4_HOOK = all_of(one_of(ARCH, list(LLAMA4)), ~_split_same())
DEEPSEEK_HOOK = all_of(eq(ARCH, DEEPSEEK_V3), _SM100, _ALL_UNSET)


def hook_decides() -> Expr:
    """A modelled override hook sets attention_backend (so the generic default does not)."""
    return any_of(GPT_OSS_HOOK, LLAMA4_HOOK, DEEPSEEK_HOOK)


def _by_sm(sm100: str, sm90: str, other: str) -> Expr:
    return all_of(
        implies(_SM100, eq(BACKEND, sm100)),
        implies(_SM90, eq(BACKEND, sm90)),
        implies(all_of(~_SM100, ~_SM90), eq(BACKEND, other)),
    )


def hook_backend(architecture: str, sm: int, *, phase_written: bool = False) -> str | None:
    """The backend a modelled hook sets on a CUDA GPU of compute capability `sm` with
    attention_backend unset (`phase_written`: a prefill or decode backend is written; the
    prefill and decode backends naming one backend are SGLang's choice, not a hook's).
    None: the hook sets none, and SGLang's generic default applies."""
    major = sm // 10
    by_sm = "trtllm_mha" if major == 10 else "fa3" if major == 9 else "triton"
    if architecture in LLAMA4 or (architecture == GPT_OSS and not phase_written):
        return by_sm
    if architecture == DEEPSEEK_V3 and major == 10 and not phase_written:
        return "trtllm_mla"
    return None


OVERRIDES = "arg_groups/model_overrides/"
# architecture -> the hook that sets its backend (file and function)
HOOK_FILES = {
    GPT_OSS: "gpt_oss.py _gpt_oss_overrides",
    DEEPSEEK_V3: "deepseek_v2.py _deepseek_family_overrides",
    **{name: "llama4.py _llama4_overrides" for name in LLAMA4},
}
MODEL_HOOK = "arg_groups/model_hook.py"
_GPT = {ARCH: GPT_OSS, KV_REPLICATED: False}
_L4 = {ARCH: LLAMA4[0], KV_REPLICATED: False}
_DS = {ARCH: DEEPSEEK_V3, KV_REPLICATED: True}

RULES = [
    Rule(
        id="sglang.gpt-oss-default-backend",
        text=(
            "gpt-oss with no attention, prefill or decode backend written runs trtllm_mha on"
            " SM100, fa3 on Hopper (SM90), triton on other CUDA GPUs"
        ),
        source=sglang(OVERRIDES + "gpt_oss.py", "_gpt_oss_overrides"),
        expr=implies(GPT_OSS_HOOK, _by_sm("trtllm_mha", "fa3", "triton")),
        feasible={**_GPT, PREFILL_BACKEND: None, DECODE_BACKEND: None, SM: 80, BACKEND: "triton"},
        infeasible={
            **_GPT,
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            SM: 80,
            BACKEND: "flashinfer",
        },
        kind="default",
    ),
    Rule(
        id="sglang.gpt-oss-backends",
        text=(
            "gpt-oss runs its prefill and decode phases only on triton, trtllm_mha, fa3, fa4,"
            " ascend, intel_amx, intel_xpu or aiter (no flashinfer: no attention sinks); the"
            " check runs before SGLang's default fills attention_backend, so with it unset a"
            " prefill backend needs a decode backend written too, and the reverse"
        ),
        source=sglang(MODEL_HOOK, "handle_model_specific_adjustments (GptOssForCausalLM)"),
        expr=implies(
            eq(ARCH, GPT_OSS),
            all_of(
                implies(
                    all_of(eq(GIVEN, False), ~_ALL_UNSET),
                    all_of(ne(PREFILL_BACKEND, None), ne(DECODE_BACKEND, None)),
                ),
                prefill_in(*GPT_OSS_BACKENDS),
                decode_in(*GPT_OSS_BACKENDS),
            ),
        ),
        feasible={
            ARCH: GPT_OSS,
            GIVEN: True,
            BACKEND: "fa3",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: "triton",
        },
        infeasible={
            ARCH: GPT_OSS,
            GIVEN: False,
            BACKEND: "trtllm_mha",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: "triton",
        },
    ),
    Rule(
        id="sglang.llama4-default-backend",
        text=(
            "Llama 4 with attention_backend unset runs trtllm_mha on SM100, fa3 on Hopper"
            " (SM90), triton on other CUDA GPUs, whatever prefill or decode backend is written"
        ),
        source=sglang(OVERRIDES + "llama4.py", "_llama4_overrides"),
        expr=implies(LLAMA4_HOOK, _by_sm("trtllm_mha", "fa3", "triton")),
        feasible={**_L4, PREFILL_BACKEND: "triton", DECODE_BACKEND: None, SM: 90, BACKEND: "fa3"},
        infeasible={
            **_L4,
            PREFILL_BACKEND: "triton",
            DECODE_BACKEND: None,
            SM: 90,
            BACKEND: "flashinfer",
        },
        kind="default",
    ),
    Rule(
        id="sglang.llama4-backends",
        text=(
            "Llama 4 runs attention_backend fa3, aiter, triton, ascend, trtllm_mha or"
            " intel_xpu only (as written or as its hook picks it: the check runs before a"
            " prefill and decode backend naming one backend replace it)"
        ),
        source=sglang(MODEL_HOOK, "handle_model_specific_adjustments (Llama4)"),
        expr=implies(one_of(ARCH, list(LLAMA4)), one_of(BACKEND, [None, *LLAMA4_BACKENDS])),
        feasible={ARCH: LLAMA4[0], BACKEND: "triton"},
        infeasible={ARCH: LLAMA4[0], BACKEND: "flashinfer"},
    ),
    Rule(
        id="sglang.deepseek-v3-sm100-trtllm-mla",
        text=(
            "DeepSeek-V3 on an SM100 GPU with no attention, prefill or decode backend written"
            " runs trtllm_mla (elsewhere SGLang's MLA default applies)"
        ),
        source=sglang(OVERRIDES + "deepseek_v2.py", "_deepseek_family_overrides"),
        expr=implies(DEEPSEEK_HOOK, eq(BACKEND, "trtllm_mla")),
        feasible={
            **_DS,
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            SM: 100,
            BACKEND: "trtllm_mla",
        },
        infeasible={
            **_DS,
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            SM: 100,
            BACKEND: "flashinfer",
        },
        kind="default",
    ),
    Rule(
        id="sglang.gemma-no-hybrid-swa-memory",
        text=(
            "Gemma 2 and Gemma 3 run without the hybrid sliding-window KV pool:"
            " SGLang sets disable_hybrid_swa_memory, whatever is written"
        ),
        source=sglang(OVERRIDES + "gemma2_gemma3.py", "_gemma2_gemma3_overrides"),
        expr=implies(one_of(ARCH, list(GEMMA_2_3)), eq(HYBRID_SWA_OFF, True)),
        feasible={ARCH: "Gemma3ForConditionalGeneration", HYBRID_SWA_OFF: True},
        infeasible={ARCH: "Gemma2ForCausalLM", HYBRID_SWA_OFF: False},
    ),
]
RULES = [replace(r, scope=SGLANG, topic="sglang") for r in RULES]
RULES = scoped(RULES)  # the rules SGLang 0.5.16 does not hold: 0.5.23 on

__all__ = [
    "GPT_OSS_BACKENDS",
    "HOOK_FILES",
    "LLAMA4_BACKENDS",
    "MODELLED",
    "RULES",
    "hook_backend",
    "hook_decides",
]
