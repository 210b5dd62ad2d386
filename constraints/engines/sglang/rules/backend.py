"""SGLang 0.5: the attention backend SGLang picks for an unset `attention_backend`, and
which KV cache dtypes each attention backend runs.

The default backend (`default_attention_backend`, and the default rules
`sglang.default-backend-mha` / `sglang.default-backend-mla` that state it on the options)
is `model_override_base.get_default_attn_backend` of sgl-project/sglang v0.5.23, called by
`overrides._attention_backend_default` when neither `attention_backend` is set nor the
prefill and decode backends name the same one. It runs before the speculative hook, so it
reads `speculative_eagle_topk` and `page_size` as written (unset: None). What the chosen
backend forces then follows from the backend rules of `sglang.py` (trtllm_mha's pages of
16-128 tokens, else 64; EAGLE only as a chain on trtllm_mha; ...).

The model override hooks (`arg_groups/model_overrides/*.py`) of gpt-oss, Llama 4 and
DeepSeek-V3 run first (`sglang_models.py`); where they set the backend this default does
not apply. Not modelled: the other hooks that read or set the backend for their own
architectures (Qwen3-Next, MiMo-V2, Gemma 4, ...: `UNMODELLED_OVERRIDES`): for those, and
for an architecture arbiter does not know (`other` in the option), the backend stays unset
as written. A model whose K and V rows differ in width (`model.asymmetric_kv`,
`ModelConfig.has_asymmetric_kv`) runs fa4 where the others run trtllm_mha on SM100, and
fa4 then takes pages of 128 tokens (`sglang.fa4-page-128-on-blackwell`).
"""

from __future__ import annotations

from dataclasses import replace

from constraints.expr import FALSE, Expr, all_of, any_of, eq, ge, implies, lt, ne, one_of
from constraints.paths import DEVICE, MODEL
from constraints.rules.base import Rule, release_key
from constraints.schema import ARCHITECTURES

from ._releases import scoped
from .models import MODELLED, hook_backend, hook_decides
from .sglang import (
    ALGO,
    ARCH,
    BACKEND,
    DETERMINISTIC,
    KV_REPLICATED,
    PREFILL_BACKEND,
    SGLANG,
    TOPK,
    S,
    _split_same,
    main_or_decode,
    prefill_in,
    sglang,
    uses,
)

KV_DTYPE = S + "kv_cache_dtype"
ASYMMETRIC_KV = MODEL.asymmetric_kv
TOPK_GIVEN = S + "speculative_eagle_topk_given"
PAGE_WRITTEN = S + "page_size"
SM = DEVICE.sm
DEFAULTS = "arg_groups/model_override_base.py"
OVERRIDES = "arg_groups/overrides.py"
# architectures whose model override hook (arg_groups/model_overrides/*.py, v0.5.23) reads
# or sets attention_backend: SGLang's generic default may not be what they run
MODEL_OVERRIDE_ARCHITECTURES = frozenset(
    {
        "BeamForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV4ForCausalLM",
        "DiffusionGemmaForBlockDiffusion",
        "Dots3NoteForCausalLM",
        "Exaone4ForCausalLM",
        "ExaoneMoEForCausalLM",
        "ExaoneMoeForCausalLM",
        "FalconH1ForCausalLM",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "Gemma4UnifiedForConditionalGeneration",
        "Glm5NextForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
        "GptOssForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "HYV4ForCausalLM",
        "IQuestQ1ForCausalLM",
        "IQuestQ1MTP",
        "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP",
        "InternS2MobiusForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "JetNemotronForCausalLM",
        "JetVLMForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "Lfm2ForCausalLM",
        "Lfm2MoeForCausalLM",
        "Llama4ForCausalLM",
        "Llama4ForConditionalGeneration",
        "LongcatFlashForCausalLM",
        "MiMoV2FlashForCausalLM",
        "MiMoV2ForCausalLM",
        "MiniCPMForCausalLM",
        "MiniCPMSALAForCausalLM",
        "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration",
        "MistralLarge3ForCausalLM",
        "MossVLForConditionalGeneration",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "Olmo2ForCausalLM",
        "PixtralForConditionalGeneration",
        "Qwen3NextForCausalLM",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen4ExpForConditionalGeneration",
    }
)
# configs/model_config.py SWA_SINK_ARCHS: learned attention sinks, which flashinfer lacks
SINK_ARCHITECTURES = frozenset(
    {
        "GptOssForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "IQuestQ1ForCausalLM",
        "IQuestQ1MTP",
    }
)


def default_attention_backend(
    sm: int,
    mla: bool,
    architecture: str,
    *,
    algorithm: str | None,
    topk: int | None,
    page_size: int | None,
    phase_written: bool = False,
    asymmetric_kv: bool = False,
    release: str = "0.5.23",
) -> str | None:
    """The backend SGLang 0.5.23 picks for an unset attention_backend on a CUDA GPU of
    compute capability `sm` (90: Hopper; 100/103: SM100): `get_default_attn_backend`.
    `topk` and `page_size` as written (None: unset); None for an architecture whose model
    override decides and arbiter does not model (`UNMODELLED_OVERRIDES`) or one not known
    (`other`). A modelled hook (`sglang_models.hook_backend`: gpt-oss, Llama 4, DeepSeek-V3)
    decides first; `phase_written`: a prefill or decode backend is written;
    `asymmetric_kv`: K and V rows of different widths (the model fact). SGLang 0.5.16
    (`release` before 0.5.23; server_args.py ServerArgs._get_default_attn_backend, v0.5.16)
    has no fa4 case and no DFLASH exception."""
    hooked = hook_backend(architecture, sm, phase_written=phase_written)
    if hooked is not None:
        return hooked
    if architecture in UNMODELLED_OVERRIDES or architecture == "other":
        return None
    hopper = 90 <= sm < 100  # is_hopper_with_cuda_12_3: capability major 9
    sm100 = 100 <= sm < 110  # is_sm100: capability major 10
    if mla:
        return "fa3" if hopper else "flashinfer" if sm100 else "triton"
    # is_no_spec_infer_or_topk_one: no top-k written, or a chain on one-token pages
    chain = topk is None or (topk == 1 and page_size in (None, 1))
    if hopper and chain:
        return "fa3"
    old = release_key(release) < release_key("0.5.23")
    dflash = algorithm == "DFLASH" and not old
    if sm100 and chain and (algorithm is None or topk is not None or dflash):
        # trtllm_mha needs K and V rows of one width; fa4 carries v_head_dim through
        return "fa4" if asymmetric_kv and not old else "trtllm_mha"
    return "triton" if architecture in SINK_ARCHITECTURES else "flashinfer"


# the options' form of the same choice
_HOPPER = all_of(ge(SM, 90), lt(SM, 100))
_SM100 = all_of(ge(SM, 100), lt(SM, 110))
_CHAIN = any_of(eq(TOPK_GIVEN, False), all_of(eq(TOPK, 1), eq(PAGE_WRITTEN, 1)))
_TRTLLM_MHA = all_of(
    _SM100, _CHAIN, any_of(eq(ALGO, None), eq(TOPK_GIVEN, True), eq(ALGO, "DFLASH"))
)
# SGLang 0.5.16: no DFLASH exception (server_args.py _get_default_attn_backend, v0.5.16)
_TRTLLM_MHA_0_5_16 = all_of(_SM100, _CHAIN, any_of(eq(ALGO, None), eq(TOPK_GIVEN, True)))
# the override architectures whose hook arbiter does not model: the backend stays unset
UNMODELLED_OVERRIDES = MODEL_OVERRIDE_ARCHITECTURES - MODELLED
_KNOWN_ARCHS = ("other", *sorted(UNMODELLED_OVERRIDES))


def _default_applies(mla: bool) -> Expr:
    """No split override (prefill and decode naming one backend), no model override hook
    that decides (an unmodelled one, or a modelled one that sets the backend:
    `sglang_models.hook_decides`), and the model's attention kind (MLA or not)."""
    return all_of(
        ~_split_same(),
        # deterministic inference has its own fallback (sglang.deterministic-default-backend)
        eq(DETERMINISTIC, False),
        ~one_of(ARCH, _known(_KNOWN_ARCHS)),
        ~hook_decides(),
        eq(KV_REPLICATED, mla),
    )


def _known(names: tuple[str, ...]) -> list[str]:
    """The names the architecture option's enum holds (only those can be compared)."""
    return [n for n in names if n in ARCHITECTURES]


def _mha_default(release: str = "0.5.23") -> Expr:
    """The MHA default as an expression; 0.5.16's (`release`): trtllm_mha on SM100 for
    asymmetric K and V rows too, and no DFLASH exception."""
    sinks = one_of(ARCH, _known(tuple(sorted(SINK_ARCHITECTURES))))
    old = release_key(release) < release_key("0.5.23")
    asym = FALSE if old else eq(ASYMMETRIC_KV, True)
    trtllm = _TRTLLM_MHA_0_5_16 if old else _TRTLLM_MHA
    fa3 = all_of(_HOPPER, _CHAIN)
    return implies(
        _default_applies(False),
        all_of(
            implies(fa3, eq(BACKEND, "fa3")),
            implies(all_of(~fa3, trtllm, ~asym), eq(BACKEND, "trtllm_mha")),
            implies(all_of(~fa3, trtllm, asym), eq(BACKEND, "fa4")),
            implies(all_of(~fa3, ~trtllm, sinks), eq(BACKEND, "triton")),
            implies(all_of(~fa3, ~trtllm, ~sinks), eq(BACKEND, "flashinfer")),
        ),
    )


def _mla_default() -> Expr:
    return implies(
        _default_applies(True),
        all_of(
            implies(_HOPPER, eq(BACKEND, "fa3")),
            implies(_SM100, eq(BACKEND, "flashinfer")),
            implies(all_of(~_HOPPER, ~_SM100), eq(BACKEND, "triton")),
        ),
    )


_UNSET_BACKENDS = {BACKEND: None, PREFILL_BACKEND: None, S + "decode_attention_backend": None}
_LLAMA = {ARCH: "LlamaForCausalLM", KV_REPLICATED: False}

RULES = [
    # ------------------------------------------------------------------ default backend
    Rule(
        id="sglang.default-backend-mha",
        text=(
            "with attention_backend unset SGLang picks fa3 on Hopper and trtllm_mha on SM100"
            " (fa4 for K and V rows of different widths)"
            " (no top-k written, or a chain on one-token pages; on SM100 not for a speculative"
            " algorithm with its top-k left to derive, DFLASH aside), else flashinfer (triton"
            " for models with attention sinks); not for models with their own override hook"
        ),
        source=sglang(DEFAULTS, "get_default_attn_backend (overrides._attention_backend_default)"),
        expr=_mha_default(),
        feasible={**_LLAMA, **_UNSET_BACKENDS, SM: 100, TOPK_GIVEN: False, BACKEND: "trtllm_mha"},
        infeasible={
            **_LLAMA,
            PREFILL_BACKEND: None,
            SM: 100,
            TOPK_GIVEN: False,
            DETERMINISTIC: False,
            BACKEND: "fa3",
        },
        kind="default",
    ),
    Rule(
        id="sglang.default-backend-mla",
        text=(
            "with attention_backend unset SGLang runs an MLA model on fa3 on Hopper,"
            " flashinfer on SM100, triton elsewhere; not for models with their own override hook"
        ),
        source=sglang(DEFAULTS, "get_default_attn_backend (overrides._attention_backend_default)"),
        expr=_mla_default(),
        feasible={ARCH: "LlamaForCausalLM", KV_REPLICATED: True, SM: 90, BACKEND: "fa3"},
        infeasible={
            ARCH: "LlamaForCausalLM",
            KV_REPLICATED: True,
            PREFILL_BACKEND: None,
            SM: 90,
            DETERMINISTIC: False,
            BACKEND: "flashinfer",
        },
        kind="default",
    ),
    # ------------------------------------------------------------------ KV dtype x backend
    Rule(
        id="sglang.fa3-fp8-e5m2-runs-triton",
        text=(
            "fa3 stores FP8 KV only as fp8_e4m3: with kv_cache_dtype fp8_e5m2 SGLang runs the"
            " triton backend instead of an fa3 attention_backend (written or picked by default)"
        ),
        source=sglang(OVERRIDES, "_attention_backend_fa3_fp8_fallback"),
        expr=implies(all_of(eq(KV_DTYPE, "fp8_e5m2"), ~_split_same()), ne(BACKEND, "fa3")),
        feasible={KV_DTYPE: "fp8_e5m2", PREFILL_BACKEND: None, BACKEND: "triton"},
        infeasible={KV_DTYPE: "fp8_e5m2", PREFILL_BACKEND: None, BACKEND: "fa3"},
    ),
    Rule(
        id="sglang.trtllm-mla-kv-dtype",
        text="the trtllm_mla backend (attention or decode) runs a KV cache of fp8_e4m3, bf16 or auto only (not fp8_e5m2, bfloat16, mxfp8 or FP4; SGLang 0.5.16's parser also lets fp4_e2m1 through)",
        source=sglang(OVERRIDES, "_mla_kv_cache_dtype_checks"),
        # 0.5.16's list adds fp4_e2m1 (arg_groups/overrides.py _mla_kv_cache_dtype_checks,
        # v0.5.16), a dtype 0.5.23 lacks and 0.5.16 refuses at KV-cache setup
        # (release_values.py)
        expr=implies(
            main_or_decode("trtllm_mla"), one_of(KV_DTYPE, ("fp8_e4m3", "fp4_e2m1", "bf16", "auto"))
        ),
        feasible={BACKEND: "trtllm_mla", PREFILL_BACKEND: None, KV_DTYPE: "fp8_e4m3"},
        infeasible={BACKEND: "trtllm_mla", PREFILL_BACKEND: None, KV_DTYPE: "fp8_e5m2"},
    ),
    Rule(
        id="sglang.cutedsl-mla-kv-dtype",
        text="the cutedsl_mla backend runs a KV cache of fp8_e4m3, bf16, bfloat16 or auto only (not fp8_e5m2, mxfp8 or FP4)",
        source=sglang(OVERRIDES, "_cutedsl_prefill_backend_fill"),
        expr=implies(
            uses("cutedsl_mla"), one_of(KV_DTYPE, ("fp8_e4m3", "bf16", "bfloat16", "auto"))
        ),
        feasible={S + "decode_attention_backend": "cutedsl_mla", KV_DTYPE: "bfloat16"},
        infeasible={S + "decode_attention_backend": "cutedsl_mla", KV_DTYPE: "fp8_e5m2"},
    ),
    Rule(
        id="sglang.mxfp8-kv-needs-blackwell",
        text="an mxfp8 KV cache needs a Blackwell GPU (SM100 or newer: SM10x-SM12x)",
        source=sglang("arg_groups/kv_cache_hook.py", "handle_mxfp8_kv_cache_compatibility"),
        expr=implies(eq(KV_DTYPE, "mxfp8"), all_of(ge(SM, 100), lt(SM, 130))),
        feasible={KV_DTYPE: "mxfp8", SM: 100},
        infeasible={KV_DTYPE: "mxfp8", SM: 90},
    ),
    Rule(
        id="sglang.trtllm-mha-sm120-prefill-no-fp8-e4m3",
        text="trtllm_mha prefill on an SM120 GPU runs no fp8_e4m3 KV cache",
        source=sglang(
            "arg_groups/attention_hook.py", "handle_attention_backend_compatibility (is_sm120)"
        ),
        expr=implies(
            all_of(prefill_in("trtllm_mha"), ge(SM, 120), lt(SM, 130)), ne(KV_DTYPE, "fp8_e4m3")
        ),
        feasible={BACKEND: "trtllm_mha", PREFILL_BACKEND: None, SM: 120, KV_DTYPE: "auto"},
        infeasible={BACKEND: "trtllm_mha", PREFILL_BACKEND: None, SM: 120, KV_DTYPE: "fp8_e4m3"},
    ),
]
RULES = [replace(r, scope=SGLANG, topic="sglang") for r in RULES]
RULES = scoped(RULES)  # the rules SGLang 0.5.16 does not hold: 0.5.23 on

__all__ = [
    "MODEL_OVERRIDE_ARCHITECTURES",
    "RULES",
    "SINK_ARCHITECTURES",
    "UNMODELLED_OVERRIDES",
    "default_attention_backend",
]
