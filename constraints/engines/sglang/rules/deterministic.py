"""SGLang 0.5: deterministic inference (`enable_deterministic_inference`) and the attention
backends it runs on, re-authored from sgl-project/sglang v0.5.23
`python/sglang/srt/arg_groups/attention_hook.py handle_deterministic_inference` and
`arg_groups/overrides.py _deterministic_attention_backend`.

The hook runs after the model override hooks and before SGLang's default backend
(`arg_groups/pipeline.py`):

- a backend that is set (written, or set by a model's override hook) must be one of
  `DETERMINISTIC_ATTENTION_BACKEND_CHOICES` (fa3, fa4, flashinfer, triton; ascend and
  intel_xpu off CUDA), else SGLang raises;
- an unset one falls back to flashinfer on SM100 / SM120 (triton for the DeepSeek family)
  and fa3 elsewhere (a default rule here; the dialect derives it);
- the radix cache is turned off for a backend without a deterministic radix path (all but
  fa3, fa4, triton: `sglang.deterministic-radix-off`), which HiCache then refuses
  (`sglang.hicache-needs-radix`, on the resolved radix cache).

- on a DeepSeek-family (absorbed-MLA) model the resolved backend must be ascend, fa3, fa4 or
  triton, fa4 on SM100 / SM110 only (`sglang.deterministic-absorbed-mla-backends`).

Not modelled: the NCCL / all-reduce settings under tensor parallelism (environment, not
server arguments).
"""

from __future__ import annotations

from dataclasses import replace

from constraints.expr import all_of, any_of, eq, ge, implies, lt, one_of
from constraints.rules.base import Rule
from constraints.schema import ARCHITECTURES

from ._releases import scoped
from .models import hook_decides
from .sglang import (
    ARCH,
    BACKEND,
    BACKEND_GIVEN,
    DETERMINISTIC,
    DETERMINISTIC_BACKENDS,
    DETERMINISTIC_DEEPSEEK,
    DETERMINISTIC_FLASHINFER_SM,
    PREFILL_BACKEND,
    RADIX,
    SGLANG,
    _split_same,
    deterministic_radix_off,
    sglang,
)

HOOK = "arg_groups/attention_hook.py"
OVERRIDES = "arg_groups/overrides.py"
_DEEPSEEK = [a for a in DETERMINISTIC_DEEPSEEK if a in ARCHITECTURES]
# RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND (arg_groups/choices.py, v0.5.23)
_ABSORBED_MLA_BACKENDS = ("ascend", "fa3", "fa4", "triton")
_SM100_OR_SM110 = all_of(ge("device.sm", 100), lt("device.sm", 120))  # is_sm100_or_sm110

RULES = [
    Rule(
        id="sglang.deterministic-attention-backends",
        text=(
            "deterministic inference runs only on the fa3, fa4, flashinfer and triton attention"
            " backends (a backend written, or set by the model's override hook)"
        ),
        source=sglang(OVERRIDES, "_deterministic_attention_backend"),
        expr=implies(
            all_of(eq(DETERMINISTIC, True), any_of(eq(BACKEND_GIVEN, True), hook_decides())),
            one_of(BACKEND, list(DETERMINISTIC_BACKENDS)),
        ),
        feasible={DETERMINISTIC: True, BACKEND_GIVEN: True, BACKEND: "triton"},
        infeasible={DETERMINISTIC: True, BACKEND_GIVEN: True, BACKEND: "trtllm_mha"},
    ),
    Rule(
        id="sglang.deterministic-default-backend",
        text=(
            "with attention_backend unset, deterministic inference runs flashinfer on SM100 /"
            " SM120 (triton for DeepSeek-family models) and fa3 elsewhere"
        ),
        source=sglang(OVERRIDES, "_deterministic_attention_backend"),
        expr=implies(
            all_of(eq(DETERMINISTIC, True), ~_split_same(), ~hook_decides()),
            all_of(
                implies(
                    all_of(DETERMINISTIC_FLASHINFER_SM, ~one_of(ARCH, _DEEPSEEK)),
                    eq(BACKEND, "flashinfer"),
                ),
                implies(
                    all_of(DETERMINISTIC_FLASHINFER_SM, one_of(ARCH, _DEEPSEEK)),
                    eq(BACKEND, "triton"),
                ),
                implies(~DETERMINISTIC_FLASHINFER_SM, eq(BACKEND, "fa3")),
            ),
        ),
        feasible={DETERMINISTIC: True, "device.sm": 100, BACKEND: "flashinfer"},
        infeasible={
            DETERMINISTIC: True,
            ARCH: "LlamaForCausalLM",
            "device.sm": 90,
            PREFILL_BACKEND: None,
            BACKEND: "flashinfer",
        },
        kind="default",
    ),
    Rule(
        id="sglang.deterministic-absorbed-mla-backends",
        text=(
            "deterministic inference on a DeepSeek-family (absorbed-MLA) model runs only the"
            " ascend, fa3, fa4 or triton attention backend, fa4 on SM100 / SM110 only (a"
            " backend written or set by the model's hook; the unset fallback is one of them)"
        ),
        source=sglang(HOOK, "handle_deterministic_inference (is_deepseek_model)"),
        expr=implies(
            all_of(
                eq(DETERMINISTIC, True),
                one_of(ARCH, _DEEPSEEK),
                any_of(eq(BACKEND_GIVEN, True), hook_decides()),
            ),
            all_of(
                one_of(BACKEND, list(_ABSORBED_MLA_BACKENDS)),
                implies(eq(BACKEND, "fa4"), _SM100_OR_SM110),
            ),
        ),
        feasible={
            DETERMINISTIC: True,
            ARCH: "DeepseekV3ForCausalLM",
            BACKEND_GIVEN: True,
            "device.sm": 100,
            BACKEND: "fa4",
        },
        infeasible={
            DETERMINISTIC: True,
            ARCH: "DeepseekV3ForCausalLM",
            BACKEND_GIVEN: True,
            "device.sm": 90,
            BACKEND: "fa4",
        },
    ),
    Rule(
        id="sglang.deterministic-radix-off",
        text=(
            "deterministic inference turns the radix cache off on a backend other than fa3,"
            " fa4 and triton"
        ),
        source=sglang(HOOK, "handle_deterministic_inference"),
        expr=implies(deterministic_radix_off(), eq(RADIX, False)),
        feasible={DETERMINISTIC: True, BACKEND_GIVEN: True, BACKEND: "flashinfer", RADIX: False},
        infeasible={DETERMINISTIC: True, BACKEND_GIVEN: True, BACKEND: "flashinfer", RADIX: True},
    ),
]
RULES = [replace(r, scope=SGLANG, topic="sglang") for r in RULES]
RULES = scoped(RULES)  # the rules SGLang 0.5.16 does not hold: 0.5.23 on
