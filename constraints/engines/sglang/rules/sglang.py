"""SGLang 0.5 rules on SGLang's own option surface (`sglang_config`) and the shared
options it resolves into.

SGLang's argument resolution (`ServerArgs.resolve_once()`, the ordered hooks of
`python/sglang/srt/arg_groups/*_hook.py`, 0.5.23) either raises (a hard rule here) or
declares a resolved value. Where it rewrites even an explicit value, the value as written
lives in `sglang_config` and the resolved one in the shared option, and a hard rule ties
them (`sglang.attn-dp-divides-chunk`: the per-rank chunk `build_config.max_num_tokens` is
the written chunk over the attention DP size); the dialect reports the difference as
"SGLang would change X to Y because <rule>". Values SGLang picks only when a field is
unset are `kind="default"` rules (any claim of the user overrides them).

Every rule is scoped to `Scope(engine="sglang", since="0.5")` and cites the file and
function of sgl-project/sglang at v0.5.23 it is re-authored from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from constraints.engines.sglang.schema import SGLANG_ATTENTION, SGLANG_CONFIG
from constraints.expr import (
    Cmp,
    Expr,
    Prod,
    all_of,
    any_of,
    eq,
    ge,
    gt,
    implies,
    le,
    lt,
    ne,
    one_of,
    ref,
)
from constraints.paths import (
    BUILD_CONFIG,
    DEVICE,
    KV_CACHE_CONFIG,
    MODEL,
    PARALLEL_CONFIG,
    RUNTIME_CONFIG,
    SCHEDULER_CONFIG,
)
from constraints.rules.base import Computed, Rule, Scope, Source, release_key
from constraints.schema import ARCHITECTURES, fact_defaults

from ._releases import scoped

SGLANG = Scope(engine="sglang", since="0.5")
S = "sglang_config."
TP = PARALLEL_CONFIG.tensor_parallel_size
PP = PARALLEL_CONFIG.pipeline_parallel_size
CHUNK = SGLANG_CONFIG.chunked_prefill_size
ATTN_DP = SGLANG_CONFIG.attn_dp_size
ATTN_CP = SGLANG_CONFIG.attn_cp_size
ALGO = SGLANG_CONFIG.speculative_algorithm
TOPK = SGLANG_CONFIG.speculative_eagle_topk
STEPS = SGLANG_CONFIG.speculative_num_steps
DRAFT = SGLANG_CONFIG.speculative_num_draft_tokens
BACKEND = SGLANG_CONFIG.attention_backend
MODE = SGLANG_CONFIG.disaggregation_mode
PER_RANK_CHUNK = BUILD_CONFIG.max_num_tokens
PAGE = KV_CACHE_CONFIG.tokens_per_block
RADIX = KV_CACHE_CONFIG.enable_block_reuse
OVERLAP_OFF = RUNTIME_CONFIG.disable_overlap_scheduler
BATCH = BUILD_CONFIG.max_batch_size
CHUNKED = SCHEDULER_CONFIG.enable_chunked_context
CHUNK_PAGES = SGLANG_CONFIG.prefill_chunk_pages
LORA = RUNTIME_CONFIG.enable_lora
# _handle_eagle_family serves these (NEXTN is resolved to EAGLE first)
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
# speculative algorithms that set max_running_requests to 48 when it is unset
SPEC_48 = (*EAGLE_FAMILY, "NGRAM", "DFLASH", "DSPARK", "FROZEN_KV_MTP")
# backends implementing the two-pass page-tree draft decode (_handle_eagle_family)
PAGE_TREE_BACKENDS = ("flashinfer", "fa3", "triton")
# algorithms LoRA works with (lora_hook.check_lora_speculative_compatibility)
LORA_SPEC = (None, "NGRAM", "EAGLE", "EAGLE3", "NEXTN", "DFLASH", "DSPARK")
# algorithms mixed chunked prefill stays on with (SpeculativeAlgorithm.supports_mixed_chunk)
MIXED_CHUNK_SPEC = (None, "EAGLE", "EAGLE3", "NEXTN", "DFLASH", "DSPARK")
GIB_MIB = 1024
# handle_gpu_memory_settings: GPU memory tiers (MiB, exclusive upper bounds) -> chunk
CHUNK_TIERS = (
    (20 * GIB_MIB, 2048),
    (35 * GIB_MIB, 4096),
    (60 * GIB_MIB, 4096),
    (90 * GIB_MIB, 8192),
    (160 * GIB_MIB, 8192),
    (None, 16384),
)
# SGLang 0.5.16 (python/sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings,
# v0.5.16): the 20-35 GiB tier (A10, L4-class 24 GB GPUs) still took a 2048-token chunk,
# which 0.5.23's memory_hook.py raised to 4096; the other tiers are the same
CHUNK_TIERS_0_5_16 = ((20 * GIB_MIB, 2048), (35 * GIB_MIB, 2048), *CHUNK_TIERS[2:])
# the release lines with their own tiers, newest first: (first release, tiers)
CHUNK_TIERS_BY_RELEASE = (("0.5.23", CHUNK_TIERS), ("0", CHUNK_TIERS_0_5_16))
SIZES = range(1, 65)


def sglang(file: str, function: str) -> Source:
    return Source("SGLang", f"python/sglang/srt/{file} {function}", "v0.5.23", "0.5.23")


def divides(divisor: str, dividend: str) -> Expr:
    """`dividend % divisor == 0` over the 1..64 domains, one case per divisor value."""
    return all_of(
        *(
            implies(eq(divisor, k), one_of(dividend, [m for m in SIZES if m % k == 0]))
            for k in SIZES
            if k > 1
        )
    )


def _tp_divisible_by_dp_times_cp() -> Expr:
    cases = []
    for dp in SIZES:
        for cp in SIZES:
            if cp > 1 and dp * cp <= 64:
                cases.append(
                    implies(
                        all_of(eq(ATTN_DP, dp), eq(ATTN_CP, cp)),
                        one_of(TP, [m for m in SIZES if m % (dp * cp) == 0]),
                    )
                )
    # a product above 64 never divides a tensor-parallel size of at most 64
    cases.append(implies(gt(ATTN_CP, 1), le(ref(ATTN_DP) * ref(ATTN_CP), 64)))
    return all_of(*cases)


def chunk_tiers(release: str = "0.5.23") -> tuple[tuple[int | None, int], ...]:
    """The memory tiers of SGLang `release` (0.5.16's before 0.5.23, 0.5.23's from it)."""
    key = release_key(release) if release else release_key("0.5.23")
    for first, tiers in CHUNK_TIERS_BY_RELEASE:
        if key >= release_key(first):
            return tiers
    return CHUNK_TIERS_0_5_16


def chunk_for_memory(memory_mib: int, release: str = "0.5.23") -> int:
    """The chunked prefill size SGLang `release` derives for a GPU of `memory_mib` MiB."""
    for bound, chunk in chunk_tiers(release):
        if bound is None or memory_mib < bound:
            return chunk
    raise AssertionError("unreachable: the last tier is open")


def _chunk_tiers(tiers: tuple[tuple[int | None, int], ...] = CHUNK_TIERS) -> Expr:
    cases = []
    lower = 0
    for bound, chunk in tiers:
        cond = (
            ge("device.memory_mib", lower)
            if bound is None
            else all_of(ge("device.memory_mib", lower), lt("device.memory_mib", bound))
        )
        cases.append(implies(cond, eq(CHUNK, chunk)))
        lower = bound or lower
    return all_of(*cases)


# model classes whose attention splits its heads over the attention-TP group
# (tp_size // attn_dp_size // attn_cp_size, runtime_context.derive_attn_tp_size) rather
# than the whole TP group: their attention __init__ reads get_parallel().attn_tp_size
# (models/qwen2_moe.py, qwen3.py, qwen3_moe.py, qwen3_next.py, deepseek_v2.py, gpt_oss.py,
# llama4.py at v0.5.23); llama.py (Llama, Mistral), mixtral.py, qwen2.py, gemma2.py and
# gemma3_causal.py read get_parallel().tp_size, and so does any class not listed here
ATTN_TP_ARCHITECTURES = (
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
    "Llama4ForConditionalGeneration",
)
HEADS = MODEL.num_attention_heads
KV_HEADS = MODEL.num_kv_heads
ARCH = MODEL.architecture
KV_REPLICATED = MODEL.kv_replicated


def heads_split(heads: int, kv_heads: int, ranks: int, kv_replicated: bool = False) -> bool:
    """The attention constructors' asserts: the query heads divide over `ranks`, and the
    KV heads divide over them or each is replicated over a whole number of ranks (MLA's
    latent has no KV heads: only the query heads are checked)."""
    if heads % ranks:
        return False
    if kv_replicated:
        return True
    return kv_heads % ranks == 0 if kv_heads >= ranks else ranks % kv_heads == 0


def _attention_tp_splits(facts: Mapping[str, Any]) -> Expr:
    defaults = fact_defaults()

    def fact(path: str) -> Any:
        value = facts.get(path)
        return value if value is not None else defaults[path]

    heads, kv = int(fact(HEADS)), int(fact(KV_HEADS))
    replicated = bool(fact(KV_REPLICATED))
    if fact(ARCH) not in ATTN_TP_ARCHITECTURES:
        return one_of(TP, [t for t in SIZES if heads_split(heads, kv, t, replicated)])
    cases = []
    for dp in SIZES:
        for cp in SIZES:
            group = dp * cp
            if group > 64:
                break
            allowed = [
                t
                for t in SIZES
                if t % group == 0 and heads_split(heads, kv, t // group, replicated)
            ]
            cases.append(implies(all_of(eq(ATTN_DP, dp), eq(ATTN_CP, cp)), one_of(TP, allowed)))
    return all_of(*cases)


PREFILL_BACKEND = SGLANG_CONFIG.prefill_attention_backend
DECODE_BACKEND = SGLANG_CONFIG.decode_attention_backend
NAMED_BACKENDS = tuple(b for b in SGLANG_ATTENTION if b is not None)


def _split_same() -> Expr:
    """Prefill and decode backends both given and equal: SGLang then takes that backend as
    attention_backend, whatever attention_backend says (overrides._attention_backend_default)."""
    return any_of(*(all_of(eq(PREFILL_BACKEND, b), eq(DECODE_BACKEND, b)) for b in NAMED_BACKENDS))


DETERMINISTIC = SGLANG_CONFIG.enable_deterministic_inference
BACKEND_GIVEN = S + "attention_backend_given"
# server_args DETERMINISTIC_ATTENTION_BACKEND_CHOICES and
# RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND (arg_groups/choices.py, v0.5.23)
DETERMINISTIC_BACKENDS = ("ascend", "fa3", "fa4", "flashinfer", "intel_xpu", "triton")
DETERMINISTIC_RADIX_BACKENDS = ("ascend", "fa3", "fa4", "triton")
# overrides._deterministic_is_deepseek_model: these fall back to triton, not flashinfer
DETERMINISTIC_DEEPSEEK = (
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration",
    "GlmMoeDsaForCausalLM",
    "Glm4MoeLiteForCausalLM",
)
# is_sm100 or is_sm120 (capability major 10 or 12): the deterministic fallback is flashinfer
DETERMINISTIC_FLASHINFER_SM = any_of(
    all_of(ge(DEVICE.sm, 100), lt(DEVICE.sm, 110)), all_of(ge(DEVICE.sm, 120), lt(DEVICE.sm, 130))
)


def deterministic_fallback(sm: int, architecture: str) -> str:
    """The backend deterministic inference runs for an unset attention_backend
    (overrides._deterministic_attention_backend): flashinfer on SM100 / SM120 (triton for
    the DeepSeek family), fa3 elsewhere."""
    if sm // 10 in (10, 12):
        return "triton" if architecture in DETERMINISTIC_DEEPSEEK else "flashinfer"
    return "fa3"


def deterministic_radix_off() -> Expr:
    """Deterministic inference turns the radix cache off for a backend it has no
    deterministic radix path for (attention_hook.handle_deterministic_inference: the
    backend it sees, the written or the fallback one, not in
    RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND). With attention_backend unset and the
    prefill and decode backends naming one, it sees its fallback (the split backend
    replaces it only afterwards, in _attention_backend_default)."""
    known = [a for a in DETERMINISTIC_DEEPSEEK if a in ARCHITECTURES]
    split_unset = all_of(_split_same(), eq(BACKEND_GIVEN, False))
    fallback_flashinfer = all_of(DETERMINISTIC_FLASHINFER_SM, ~one_of(ARCH, known))
    return all_of(
        eq(DETERMINISTIC, True),
        any_of(
            all_of(~split_unset, ~one_of(BACKEND, list(DETERMINISTIC_RADIX_BACKENDS))),
            all_of(split_unset, fallback_flashinfer),
        ),
    )


def main_backend_in(names: tuple[str | None, ...]) -> Expr:
    """SGLang's resolved attention_backend is one of `names` (None in `names`: an unset
    backend, for which SGLang picks a default by GPU and model)."""
    named = [n for n in names if n is not None]
    cases = [all_of(~_split_same(), one_of(BACKEND, list(names)))]
    if named:
        cases.append(all_of(_split_same(), one_of(PREFILL_BACKEND, named)))
    return any_of(*cases)


def _phase_in(field: str, names: tuple[str | None, ...]) -> Expr:
    """The backend SGLang runs a phase on is one of `names` (model_override_base.
    attention_backends_of: the phase's own backend, else the resolved attention_backend)."""
    named = [n for n in names if n is not None]
    cases = [all_of(eq(field, None), main_backend_in(names))]
    if named:
        cases.append(one_of(field, named))
    return any_of(*cases)


def prefill_in(*names: str | None) -> Expr:
    return _phase_in(PREFILL_BACKEND, names)


def decode_in(*names: str | None) -> Expr:
    return _phase_in(DECODE_BACKEND, names)


def uses(backend: str) -> Expr:
    """The resolved attention_backend, the decode or the prefill backend is `backend`."""
    return any_of(
        main_backend_in((backend,)), eq(DECODE_BACKEND, backend), eq(PREFILL_BACKEND, backend)
    )


def main_or_decode(backend: str) -> Expr:
    """The resolved attention_backend or the decode backend is `backend`."""
    return any_of(main_backend_in((backend,)), eq(DECODE_BACKEND, backend))


def page_within(sizes: tuple[int, ...]) -> Expr:
    """The page size as written when it is one of `sizes`, else 64 (how SGLang's MLA and
    trtllm_mha page constraints fall back)."""
    written = S + "page_size"
    keep = eq(ref(PAGE), ref(written))
    return any_of(
        all_of(one_of(written, sizes), keep), all_of(~one_of(written, sizes), eq(PAGE, 64))
    )


def _forced_page_size() -> Expr:
    """overrides._mla_backend_page_constraints, chained as SGLang chains it: 64 for
    flashmla (attention or decode) and hpc_ops (any); 32 or 64 (else 64) for trtllm_mla
    (attention or decode) and cutedsl_mla (any); 16-128 (else 64) for trtllm_mha (any);
    then FA4's 128 (its own rule); otherwise the page size as written. The forced values
    nest ({64} in {32, 64} in {16, ..., 128}), so the strictest backend in use decides."""
    fa4 = fa4_forces_page_128()
    to64 = any_of(main_or_decode("flashmla"), uses("hpc_ops"))
    mla = any_of(main_or_decode("trtllm_mla"), uses("cutedsl_mla"))
    mha = uses("trtllm_mha")
    keep = eq(ref(PAGE), ref(S + "page_size"))

    return all_of(
        implies(all_of(~fa4, to64), eq(PAGE, 64)),
        implies(all_of(~fa4, ~to64, mla), page_within((32, 64))),
        implies(all_of(~fa4, ~to64, ~mla, mha), page_within((16, 32, 64, 128))),
        implies(all_of(~fa4, ~to64, ~mla, ~mha), keep),
    )


def fa4_forces_page_128() -> Expr:
    """When SGLang sets the page size to 128 for FA4 (overrides._fa4_page_constraint): fa4
    on an SM10x GPU (get_platform().is_sm100: capability major 10), a model without MLA
    (use_mla_backend; our fact model.kv_replicated), and no draft tree
    (speculative_eagle_topk, None without speculation or under n-gram, at most 1)."""
    return all_of(
        uses("fa4"),
        ge("device.sm", 100),
        lt("device.sm", 110),
        eq(KV_REPLICATED, False),
        # the top-k as this pass reads it: unset without speculation, and still unset under
        # n-gram speculation (_handle_ngram sets it later, from the BFS breadth)
        any_of(eq(ALGO, None), eq(ALGO, "NGRAM"), le(TOPK, 1)),
    )


NODES = DEVICE.nodes


def _ranks_divide_over_nodes(facts: Mapping[str, Any]) -> Expr:
    """tp x pp is a multiple of the nodes (a fact: the dialect takes it from `nnodes`),
    one case per pipeline size."""
    nodes = facts.get(NODES)
    nodes = int(nodes if nodes is not None else fact_defaults()[NODES])
    if nodes <= 1:
        return all_of()
    return all_of(
        *(implies(eq(PP, p), one_of(TP, [t for t in SIZES if (t * p) % nodes == 0])) for p in SIZES)
    )


PARALLEL = "arg_groups/parallel_hook.py"
VALIDATION = "arg_groups/validation_hook.py"
SPEC = "arg_groups/speculative_hook.py"

RULES = [
    # ------------------------------------------------------------------ attention DP
    Rule(
        id="sglang.attn-dp-divides-tp",
        text="attention data parallelism splits the TP ranks: tp_size must be a multiple of attn_dp_size",
        source=sglang(PARALLEL, "handle_data_parallelism (assert tp_size % attn_dp_size == 0)"),
        expr=divides(ATTN_DP, TP),
        feasible={ATTN_DP: 4, TP: 8},
        infeasible={ATTN_DP: 3, TP: 4},
    ),
    Rule(
        id="sglang.heads-divisible-by-attn-tp",
        text=(
            "the attention heads split over the attention-TP ranks (tp_size / attn_dp_size /"
            " attn_cp_size) for Qwen2-MoE, Qwen3, Qwen3-MoE, Qwen3-Next, DeepSeek-V3, gpt-oss"
            " and Llama 4, over tp_size for the other models; the KV heads divide or replicate"
        ),
        source=sglang(
            "models/qwen3_moe.py",
            "Qwen3MoeAttention.__init__ asserts heads % get_parallel().attn_tp_size"
            " (models/llama.py LlamaAttention: % tp_size; runtime_context.derive_attn_tp_size)",
        ),
        expr=Computed(
            "the attention heads split over the attention-TP (or TP) ranks",
            _attention_tp_splits,
            frozenset({TP, ATTN_DP, ATTN_CP, HEADS, KV_HEADS, ARCH, KV_REPLICATED}),
        ),
        feasible={
            ARCH: "Qwen2MoeForCausalLM",
            HEADS: 28,
            KV_HEADS: 4,
            TP: 8,
            ATTN_DP: 2,
            ATTN_CP: 1,
        },
        infeasible={
            ARCH: "Qwen2ForCausalLM",
            HEADS: 28,
            KV_HEADS: 4,
            TP: 8,
            ATTN_DP: 2,
            ATTN_CP: 1,
        },
        replaces=("parallel.heads-divisible-by-tp",),
    ),
    Rule(
        id="sglang.attn-dp-no-dp-replicas",
        text="data-parallel replicas (dp_size > 1) cannot be combined with attention data parallelism",
        source=sglang(PARALLEL, "handle_data_parallelism"),
        expr=~all_of(gt(ATTN_DP, 1), gt(S + "dp_size", 1)),
        feasible={ATTN_DP: 2, S + "dp_size": 1},
        infeasible={ATTN_DP: 2, S + "dp_size": 2},
    ),
    Rule(
        id="sglang.attn-dp-divides-chunk",
        text="each attention DP rank prefills chunked_prefill_size // attn_dp_size tokens (the per-rank chunk)",
        source=sglang(PARALLEL, "handle_data_parallelism (_handle_data_parallelism declares it)"),
        expr=implies(
            gt(CHUNK, 0),
            all_of(
                le(ref(PER_RANK_CHUNK) * ref(ATTN_DP), ref(CHUNK)),
                gt(ref(PER_RANK_CHUNK) * ref(ATTN_DP), ref(CHUNK) - ref(ATTN_DP)),
            ),
        ),
        feasible={CHUNK: 8192, ATTN_DP: 8, PER_RANK_CHUNK: 1024},
        infeasible={CHUNK: 8192, ATTN_DP: 8, PER_RANK_CHUNK: 8192},
    ),
    Rule(
        id="sglang.chunk-multiple-of-page",
        text="the per-rank prefill chunk must be a whole number of KV pages (chunked_prefill_size % page_size == 0 after SGLang's rewrites; not on a PD decode server)",
        source=sglang(
            VALIDATION,
            "check_server_args (assert chunked_prefill_size % page_size == 0; run at launch:"
            " entrypoints/engine.py Engine._launch_subprocesses)",
        ),
        expr=implies(
            all_of(gt(CHUNK, 0), ne(MODE, "decode")),
            Cmp(ref(PER_RANK_CHUNK), "==", Prod(ref(PAGE), ref(CHUNK_PAGES))),
        ),
        feasible={CHUNK: 8192, MODE: "null", PER_RANK_CHUNK: 8192, PAGE: 64, CHUNK_PAGES: 128},
        infeasible={CHUNK: 8191, MODE: "null", PER_RANK_CHUNK: 8191, PAGE: 64},
    ),
    Rule(
        id="sglang.chunk-switches-chunked-prefill",
        text="chunked prefill is on exactly when chunked_prefill_size is positive (-1 turns it off)",
        source=sglang("managers/scheduler.py", "Scheduler.init_chunked_prefill"),
        expr=all_of(
            implies(gt(CHUNK, 0), eq(CHUNKED, True)), implies(le(CHUNK, 0), eq(CHUNKED, False))
        ),
        feasible={CHUNK: -1, CHUNKED: False},
        infeasible={CHUNK: -1, CHUNKED: True},
    ),
    Rule(
        id="sglang.attn-cp-divides-tp",
        text="attention context parallelism: tp_size must be a multiple of attn_cp_size and of attn_dp_size x attn_cp_size",
        source=sglang(PARALLEL, "handle_context_parallelism"),
        expr=all_of(divides(ATTN_CP, TP), _tp_divisible_by_dp_times_cp()),
        feasible={ATTN_CP: 2, ATTN_DP: 2, TP: 8},
        infeasible={ATTN_CP: 2, ATTN_DP: 2, TP: 2},
    ),
    # ------------------------------------------------------------------ nodes
    Rule(
        id="sglang.ranks-divide-over-nodes",
        text="a launch over nnodes nodes splits its tp_size x pp_size ranks evenly: tp x pp must be a multiple of nnodes (device.nodes)",
        source=sglang(VALIDATION, "check_server_args (assert (tp_size * pp_size) % nnodes == 0)"),
        expr=Computed(
            "tp_size x pp_size is a multiple of the nodes",
            _ranks_divide_over_nodes,
            frozenset({TP, PP, NODES}),
        ),
        feasible={NODES: 2, TP: 8, PP: 2},
        infeasible={NODES: 2, TP: 3, PP: 1},
    ),
    Rule(
        id="sglang.dp-replicas-single-node",
        text="data-parallel replicas (dp_size > 1) run on one node only: across nodes SGLang asks for attention DP instead",
        source=sglang(VALIDATION, "check_server_args (assert not (dp_size > 1 and nnodes != 1))"),
        expr=implies(gt(S + "dp_size", 1), eq(NODES, 1)),
        feasible={S + "dp_size": 2, NODES: 1},
        infeasible={S + "dp_size": 2, NODES: 2},
    ),
    # ------------------------------------------------------------------ speculative
    Rule(
        id="sglang.eagle-topk1-draft-tokens",
        text="an EAGLE chain (speculative_eagle_topk 1) verifies speculative_num_steps + 1 draft tokens",
        source=sglang(SPEC, "_handle_eagle_family"),
        expr=implies(
            all_of(one_of(ALGO, EAGLE_FAMILY), eq(TOPK, 1)),
            eq(ref(DRAFT), ref(STEPS) + 1),
        ),
        feasible={ALGO: "EAGLE", TOPK: 1, STEPS: 3, DRAFT: 4},
        infeasible={ALGO: "EAGLE", TOPK: 1, STEPS: 3, DRAFT: 8},
    ),
    Rule(
        id="sglang.eagle-topk-page-tree-backend",
        text="EAGLE with speculative_eagle_topk > 1 and pages of more than one token needs the flashinfer, fa3 or triton attention backend",
        source=sglang(SPEC, "_handle_eagle_family (_PAGE_TREE_SPEC_BACKENDS)"),
        expr=implies(
            all_of(one_of(ALGO, EAGLE_FAMILY), gt(TOPK, 1), gt(PAGE, 1)),
            main_backend_in((None, *PAGE_TREE_BACKENDS)),
        ),
        feasible={ALGO: "EAGLE3", TOPK: 8, PAGE: 64, BACKEND: "fa3"},
        infeasible={
            ALGO: "EAGLE3",
            TOPK: 8,
            PAGE: 64,
            BACKEND: "trtllm_mha",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
        },
    ),
    Rule(
        id="sglang.trtllm-mha-spec-topk1",
        text="the trtllm_mha attention backend (prefill or decode) runs EAGLE only as a chain (speculative_eagle_topk 1)",
        source=sglang(SPEC, "_handle_eagle_family"),
        expr=implies(
            all_of(
                one_of(ALGO, EAGLE_FAMILY),
                any_of(prefill_in("trtllm_mha"), decode_in("trtllm_mha")),
            ),
            eq(TOPK, 1),
        ),
        feasible={ALGO: "EAGLE", BACKEND: "trtllm_mha", TOPK: 1},
        infeasible={
            ALGO: "EAGLE",
            BACKEND: "trtllm_mha",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            TOPK: 4,
        },
    ),
    Rule(
        id="sglang.ngram-topk-page-flashinfer",
        text="n-gram speculation with a draft tree (topk > 1) on pages of more than one token runs only on flashinfer",
        source=sglang(SPEC, "_handle_ngram"),
        expr=implies(
            all_of(eq(ALGO, "NGRAM"), gt(TOPK, 1), gt(PAGE, 1)), main_backend_in(("flashinfer",))
        ),
        feasible={ALGO: "NGRAM", TOPK: 10, PAGE: 64, BACKEND: "flashinfer"},
        infeasible={
            ALGO: "NGRAM",
            TOPK: 10,
            PAGE: 64,
            BACKEND: "fa3",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
        },
    ),
    Rule(
        id="sglang.ngram-no-attn-dp",
        text="n-gram speculative decoding does not run with attention data parallelism",
        source=sglang(SPEC, "_handle_ngram"),
        expr=implies(eq(ALGO, "NGRAM"), eq(ATTN_DP, 1)),
        feasible={ALGO: "NGRAM", ATTN_DP: 1},
        infeasible={ALGO: "NGRAM", ATTN_DP: 2},
    ),
    Rule(
        id="sglang.standalone-no-attn-dp",
        text="standalone (small draft model) speculative decoding does not run with attention data parallelism",
        source=sglang(SPEC, "_handle_eagle_family"),
        expr=implies(eq(ALGO, "STANDALONE"), eq(ATTN_DP, 1)),
        feasible={ALGO: "STANDALONE", ATTN_DP: 1},
        infeasible={ALGO: "STANDALONE", ATTN_DP: 4},
    ),
    Rule(
        id="sglang.spec-mixed-chunk-off",
        text="mixed chunked prefill is switched off for speculative algorithms that cannot mix (NGRAM, STANDALONE, ...)",
        source=sglang(SPEC, "_handle_eagle_family / _handle_ngram (supports_mixed_chunk)"),
        expr=implies(~one_of(ALGO, MIXED_CHUNK_SPEC), eq(S + "enable_mixed_chunk", False)),
        feasible={ALGO: "NGRAM", S + "enable_mixed_chunk": False},
        infeasible={ALGO: "NGRAM", S + "enable_mixed_chunk": True},
    ),
    Rule(
        id="sglang.spec-max-running-requests",
        text="speculative decoding runs at most 48 requests when max_running_requests is unset",
        source=sglang(SPEC, "_handle_eagle_family / _handle_ngram"),
        expr=implies(one_of(ALGO, SPEC_48), eq(BATCH, 48)),
        feasible={ALGO: "EAGLE", BATCH: 48},
        infeasible={ALGO: "EAGLE", BATCH: 256},
        kind="default",
    ),
    Rule(
        id="sglang.lora-needs-adapters-or-shape",
        text="LoRA starts from the adapters of lora_paths, or else needs both max_lora_rank and lora_target_modules to size its buffers",
        source=sglang(
            "arg_groups/lora_hook.py",
            "check_lora_server_args (run by check_server_args at launch)",
        ),
        expr=implies(
            eq(LORA, True),
            any_of(eq(S + "lora_paths_given", True), eq(S + "lora_shape_given", True)),
        ),
        feasible={LORA: True, S + "lora_paths_given": False, S + "lora_shape_given": True},
        infeasible={LORA: True, S + "lora_paths_given": False, S + "lora_shape_given": False},
    ),
    Rule(
        id="sglang.lora-speculative",
        text="LoRA works only with NGRAM, EAGLE, EAGLE3, NEXTN, DFLASH or DSPARK speculative decoding",
        source=sglang("arg_groups/lora_hook.py", "check_lora_speculative_compatibility"),
        expr=implies(eq("runtime_config.enable_lora", True), one_of(ALGO, LORA_SPEC)),
        feasible={"runtime_config.enable_lora": True, ALGO: "EAGLE"},
        infeasible={"runtime_config.enable_lora": True, ALGO: "STANDALONE"},
    ),
    # ------------------------------------------------------------------ pipeline parallel
    Rule(
        id="sglang.pp-disables-overlap",
        text="pipeline parallelism runs without the overlap schedule (SGLang switches it off)",
        source=sglang("arg_groups/overrides.py", "_pipeline_parallel_overlap_disable"),
        expr=all_of(
            implies(gt(PP, 1), eq(OVERLAP_OFF, True)),
            implies(eq(PP, 1), eq(ref(OVERLAP_OFF), ref(S + "disable_overlap_schedule"))),
        ),
        feasible={PP: 2, S + "disable_overlap_schedule": False, OVERLAP_OFF: True},
        infeasible={PP: 2, S + "disable_overlap_schedule": False, OVERLAP_OFF: False},
    ),
    Rule(
        id="sglang.pp-speculative-eagle-only",
        text="pipeline parallelism supports only EAGLE speculative decoding (not multi-layer EAGLE), or DSPARK",
        source=sglang(VALIDATION, "check_pipeline_parallel_compat"),
        expr=implies(
            all_of(gt(PP, 1), ne(ALGO, None)),
            any_of(
                all_of(one_of(ALGO, ("EAGLE", "NEXTN")), eq(S + "enable_multi_layer_eagle", False)),
                eq(ALGO, "DSPARK"),
            ),
        ),
        feasible={PP: 2, ALGO: "EAGLE"},
        infeasible={PP: 2, ALGO: "NGRAM"},
    ),
    Rule(
        id="sglang.pp-speculative-prefill-only",
        text="pipeline parallelism with speculative decoding runs only on a PD prefill server (disaggregation_mode prefill; SGLANG_ENABLE_PP_SPEC unset)",
        source=sglang(
            VALIDATION,
            "check_pipeline_parallel_compat (run by check_server_args at launch:"
            " entrypoints/engine.py Engine._launch_subprocesses)",
        ),
        expr=implies(all_of(gt(PP, 1), ne(ALGO, None)), eq(MODE, "prefill")),
        feasible={PP: 2, ALGO: "EAGLE", MODE: "prefill"},
        infeasible={PP: 2, ALGO: "EAGLE", MODE: "null"},
    ),
    # ------------------------------------------------------------------ caches and roles
    Rule(
        id="sglang.hicache-needs-radix",
        text="HiCache extends the radix cache: enable_hierarchical_cache and a radix cache that is off (disable_radix_cache, or turned off by SGLang) are mutually exclusive",
        source=sglang("arg_groups/kv_cache_hook.py", "handle_cache_compatibility"),
        # the radix cache as resolved (handle_cache_compatibility runs last): a PD decode
        # server's and deterministic inference's turning it off count
        expr=~all_of(eq(S + "enable_hierarchical_cache", True), eq(RADIX, False)),
        feasible={S + "enable_hierarchical_cache": True, RADIX: True},
        infeasible={S + "enable_hierarchical_cache": True, RADIX: False},
    ),
    Rule(
        id="sglang.radix-cache-as-written",
        text="outside a PD decode server the radix cache (prefix caching) is on unless disable_radix_cache (or deterministic inference turns it off)",
        source=sglang("arg_groups/pd_disaggregation_hook.py", "handle_pd_disaggregation"),
        expr=implies(
            all_of(ne(MODE, "decode"), ~deterministic_radix_off()),
            ne(ref(RADIX), ref(S + "disable_radix_cache")),
        ),
        feasible={MODE: "null", S + "disable_radix_cache": True, RADIX: False},
        infeasible={
            MODE: "null",
            S + "disable_radix_cache": True,
            DETERMINISTIC: False,
            RADIX: True,
        },
    ),
    Rule(
        id="sglang.pd-decode-radix",
        text="a PD decode server runs without the radix cache unless disaggregation_decode_enable_radix_cache",
        source=sglang("arg_groups/pd_disaggregation_hook.py", "handle_pd_disaggregation"),
        expr=implies(
            all_of(eq(MODE, "decode"), ~deterministic_radix_off()),
            eq(ref(RADIX), ref(S + "disaggregation_decode_enable_radix_cache")),
        ),
        feasible={
            MODE: "decode",
            S + "disaggregation_decode_enable_radix_cache": False,
            RADIX: False,
        },
        infeasible={
            MODE: "decode",
            S + "disaggregation_decode_enable_radix_cache": False,
            DETERMINISTIC: False,
            RADIX: True,
        },
    ),
    Rule(
        id="sglang.pd-decode-radix-not-fake",
        text="a PD decode server keeps the radix cache only with a real KV transfer backend (not fake)",
        source=sglang("arg_groups/pd_disaggregation_hook.py", "handle_pd_disaggregation"),
        expr=~all_of(
            eq(MODE, "decode"),
            eq(S + "disaggregation_decode_enable_radix_cache", True),
            eq(S + "disaggregation_transfer_backend", "fake"),
        ),
        feasible={
            MODE: "decode",
            S + "disaggregation_decode_enable_radix_cache": True,
            S + "disaggregation_transfer_backend": "mooncake",
        },
        infeasible={
            MODE: "decode",
            S + "disaggregation_decode_enable_radix_cache": True,
            S + "disaggregation_transfer_backend": "fake",
        },
    ),
    # ------------------------------------------------------------------ attention backends
    Rule(
        id="sglang.backend-page-size",
        text="attention backends force their page sizes, the prefill and decode backends included: flashmla and hpc_ops 64; trtllm_mla and cutedsl_mla 32 or 64 (else 64); trtllm_mha 16-128 (else 64); fa4 on SM100 128 (sglang.fa4-page-128-on-blackwell); otherwise the page size as written",
        source=sglang("arg_groups/overrides.py", "_mla_backend_page_constraints"),
        expr=_forced_page_size(),
        feasible={
            BACKEND: "trtllm_mha",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            S + "page_size": 1,
            PAGE: 64,
        },
        infeasible={
            BACKEND: "flashmla",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            S + "page_size": 1,
            PAGE: 1,
        },
    ),
    Rule(
        id="sglang.fa4-page-128-on-blackwell",
        text="the fa4 attention backend (as attention, prefill or decode backend) on an SM100 GPU runs pages of 128 tokens (non-MLA models, no EAGLE draft tree), whatever page_size says",
        source=sglang("arg_groups/overrides.py", "_fa4_page_constraint"),
        expr=implies(fa4_forces_page_128(), eq(PAGE, 128)),
        feasible={
            BACKEND: "fa4",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            "device.sm": 100,
            KV_REPLICATED: False,
            TOPK: 1,
            S + "page_size": 64,
            PAGE: 128,
        },
        infeasible={
            BACKEND: "fa4",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            "device.sm": 100,
            KV_REPLICATED: False,
            TOPK: 1,
            S + "page_size": 64,
            PAGE: 64,
        },
    ),
    Rule(
        id="sglang.trtllm-mha-needs-hopper-or-blackwell",
        text="the trtllm_mha attention backend (for prefill or decode, by the split backends or attention_backend) needs a Hopper (SM90), Blackwell (SM100/103) or SM120 GPU",
        source=sglang(
            "arg_groups/attention_hook.py",
            "handle_attention_backend_compatibility (attention_backends_of; is_sm90 / is_sm100 by major, is_sm120)",
        ),
        expr=implies(
            any_of(prefill_in("trtllm_mha"), decode_in("trtllm_mha")),
            one_of("device.sm", (90, 100, 103, 120)),
        ),
        feasible={BACKEND: "trtllm_mha", "device.sm": 90},
        infeasible={
            BACKEND: None,
            PREFILL_BACKEND: None,
            DECODE_BACKEND: "trtllm_mha",
            "device.sm": 80,
        },
    ),
    Rule(
        id="sglang.backend-disables-cuda-graph",
        text="the torch_native and flex_attention attention backends run without CUDA graphs (the resolved attention_backend: prefill and decode both naming one backend replace it)",
        source=sglang("arg_groups/attention_hook.py", "handle_attention_backend_compatibility"),
        expr=implies(
            main_backend_in(("torch_native", "flex_attention")),
            eq("cuda_graph_config.enabled", False),
        ),
        feasible={
            BACKEND: "torch_native",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            "cuda_graph_config.enabled": False,
        },
        infeasible={
            BACKEND: None,
            PREFILL_BACKEND: "flex_attention",
            DECODE_BACKEND: "flex_attention",
            "cuda_graph_config.enabled": True,
        },
    ),
    Rule(
        id="sglang.flex-attention-no-speculative",
        text="the flex_attention backend runs no speculative decoding",
        source=sglang("arg_groups/attention_hook.py", "handle_attention_backend_compatibility"),
        expr=implies(main_backend_in(("flex_attention",)), eq(ALGO, None)),
        feasible={
            BACKEND: "flex_attention",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            ALGO: None,
        },
        infeasible={
            BACKEND: "flex_attention",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            ALGO: "EAGLE",
        },
    ),
    Rule(
        id="sglang.cutedsl-mla-decode-only-sm100",
        text="the cutedsl_mla backend decodes only (not as prefill_attention_backend) and only on an SM100 GPU",
        source=sglang("arg_groups/overrides.py", "_cutedsl_prefill_backend_fill"),
        expr=all_of(
            ne(PREFILL_BACKEND, "cutedsl_mla"),
            implies(uses("cutedsl_mla"), one_of("device.sm", (100, 103))),
        ),
        feasible={DECODE_BACKEND: "cutedsl_mla", PREFILL_BACKEND: None, "device.sm": 100},
        infeasible={DECODE_BACKEND: "cutedsl_mla", PREFILL_BACKEND: None, "device.sm": 90},
    ),
    Rule(
        id="sglang.trtllm-mla-needs-blackwell",
        text="the trtllm_mla backend (attention or decode) runs only on Blackwell GPUs (SM100-SM12x)",
        source=sglang(
            "arg_groups/overrides.py", "_mla_kv_cache_dtype_checks (get_platform().is_blackwell)"
        ),
        expr=implies(
            main_or_decode("trtllm_mla"), all_of(ge("device.sm", 100), lt("device.sm", 130))
        ),
        feasible={
            BACKEND: "trtllm_mla",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: None,
            "device.sm": 100,
        },
        infeasible={
            BACKEND: None,
            PREFILL_BACKEND: None,
            DECODE_BACKEND: "trtllm_mla",
            "device.sm": 90,
        },
    ),
    Rule(
        id="sglang.uno-needs-fa3",
        text="UNO speculative decoding needs fa3 for both prefill and decode (an unset backend is admitted: SGLang picks it by GPU and model)",
        source=sglang(SPEC, "_handle_uno (attention_backends_of == ('fa3', 'fa3'))"),
        expr=implies(eq(ALGO, "UNO"), all_of(prefill_in(None, "fa3"), decode_in(None, "fa3"))),
        feasible={ALGO: "UNO", BACKEND: "fa3", PREFILL_BACKEND: None, DECODE_BACKEND: None},
        infeasible={
            ALGO: "UNO",
            BACKEND: "fa3",
            PREFILL_BACKEND: None,
            DECODE_BACKEND: "flashinfer",
        },
    ),
    # ------------------------------------------------------------------ model and memory
    Rule(
        id="sglang.context-length-within-model",
        text="context_length may not exceed the model's derived context length (unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN)",
        source=sglang("configs/model_config.py", "ModelConfig._derive_context_length"),
        expr=le(ref("build_config.max_seq_len"), ref("model.max_position_embeddings")),
        feasible={"model.max_position_embeddings": 131072, "build_config.max_seq_len": 32768},
        infeasible={"model.max_position_embeddings": 131072, "build_config.max_seq_len": 262144},
    ),
    Rule(
        id="sglang.chunk-by-gpu-memory",
        text="an unset chunked_prefill_size is 2048 below 20 GiB, 4096 below 60 GiB, 8192 below 160 GiB, 16384 above",
        source=sglang("arg_groups/memory_hook.py", "handle_gpu_memory_settings"),
        expr=_chunk_tiers(),
        feasible={"device.memory_mib": 81559, CHUNK: 8192},
        infeasible={"device.memory_mib": 81559, CHUNK: 4096},
        kind="default",
    ),
]
RULES = [replace(r, scope=SGLANG) for r in RULES]
# the rules whose behaviour differs between the release lines, each scoped to its range:
# those SGLang 0.5.16 does not hold from 0.5.23 on (_releases.ONLY_0_5_23), 0.5.16's own
# below and in release_0_5_16.py
RULES = scoped(RULES)
RULES.append(
    Rule(
        id="sglang.dflash-no-attn-dp-0.5.16",
        text="DFLASH speculative decoding does not run with attention data parallelism (SGLang"
        " 0.5.16; 0.5.23 runs it there with --enable-dp-lm-head)",
        source=Source(
            "SGLang",
            "python/sglang/srt/arg_groups/speculative_hook.py _handle_dflash",
            "v0.5.16",
            "0.5.16",
        ),
        expr=implies(eq(ALGO, "DFLASH"), eq(ATTN_DP, 1)),
        feasible={ALGO: "DFLASH", ATTN_DP: 1},
        infeasible={ALGO: "DFLASH", ATTN_DP: 4},
        scope=Scope(engine="sglang", since="0.5", until="0.5.16"),
    )
)
RULES.append(
    Rule(
        id="sglang.chunk-by-gpu-memory-0.5.16",
        text="an unset chunked_prefill_size is 2048 below 35 GiB, 4096 below 60 GiB, 8192 "
        "below 160 GiB, 16384 above (SGLang 0.5.16)",
        source=Source(
            "SGLang",
            "python/sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings",
            "v0.5.16",
            "0.5.16",
        ),
        expr=_chunk_tiers(CHUNK_TIERS_0_5_16),
        feasible={"device.memory_mib": 24564, CHUNK: 2048},
        infeasible={"device.memory_mib": 24564, CHUNK: 4096},
        kind="default",
        scope=Scope(engine="sglang", since="0.5", until="0.5.16"),
    )
)

__all__ = [
    "ATTN_TP_ARCHITECTURES",
    "CHUNK_TIERS",
    "CHUNK_TIERS_0_5_16",
    "RULES",
    "SGLANG",
    "chunk_for_memory",
    "chunk_tiers",
    "divides",
    "heads_split",
    "sglang",
]
