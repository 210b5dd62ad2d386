"""KV-cache rules: block reuse, block size, memory fraction, KV dtype.

Reuse switches are checked by the C++ batch manager of a TensorRT engine; block size,
fraction and block-table bounds by the KV kernels and manager both backends share; the
KV dtype by the PyTorch backend's argument validator."""

from __future__ import annotations

from typing import Any

from constraints.expr import eq, gt, implies, le, lt, ne, one_of, ref
from constraints.paths import BUILD_CONFIG, KV_CACHE_CONFIG, PLUGIN_CONFIG, SPECULATIVE_CONFIG
from constraints.rules._sources import (
    ARBITRATOR,
    PYTORCH,
    TENSORRT,
    TRTLLM,
    arbitrator,
    batch_manager,
    kv_manager,
)
from constraints.rules.base import Rule, Scope, Source

REUSE = KV_CACHE_CONFIG.enable_block_reuse
PAGED = PLUGIN_CONFIG.use_paged_context_fmha
POWERS_OF_TWO = [1 << i for i in range(23)]  # up to MAX_TOKENS
TPB = KV_CACHE_CONFIG.tokens_per_block
SEQ = ref("build_config.max_seq_len")
DRAFT = BUILD_CONFIG.max_draft_len
TOTAL = SPECULATIVE_CONFIG.max_total_draft_tokens
TYPE = SPECULATIVE_CONFIG.decoding_type
# a TensorRT engine built for speculative decoding (builder.py build() grows its max_seq_len)
ENGINE_DRAFTS = eq("runtime_config.backend", "tensorrt") & ne(TYPE, "none")

# The PyTorch backend's KV cache manager holds more than max_seq_len per sequence
# (tensorrt_llm/_torch/pyexecutor/py_executor_creator.py create_py_executor, the stored
# 21,352-character version of the 1.0 line): one more token with the overlap scheduler,
# and with speculative decoding max_draft_len more, again max_draft_len more with the
# overlap scheduler, plus get_num_extra_kv_tokens (tensorrt_llm/_torch/speculative/utils.py:
# max_draft_len - 1 for one-model EAGLE-3, else 0). The 1.1/1.2 KvCacheCreator
# (_util.py _get_token_num_for_estimation) sizes its dummy requests with the same terms.
PYTORCH_RUN = eq("runtime_config.backend", "pytorch")
OVERLAP = eq("runtime_config.disable_overlap_scheduler", False)
DRAFTING = ne(TYPE, "none")
ONE_MODEL_EAGLE3 = (
    eq(TYPE, "Eagle")
    & eq("speculative_config.eagle3", True)
    & eq("speculative_config.eagle3_one_model", True)
)


def pytorch_kv_sequence_tokens(values: dict[str, Any]) -> int:
    """Tokens per sequence the PyTorch backend's KV cache manager is built for, from solved
    values (the arithmetic of create_py_executor above)."""
    seq = values["build_config.max_seq_len"]
    overlap = not values.get("runtime_config.disable_overlap_scheduler", False)
    tokens = seq + (1 if overlap else 0)
    if values.get(TYPE, "none") != "none":
        draft = values.get(DRAFT) or 0
        tokens += _draft_tokens(values) * (2 if overlap else 1)
        one_model = (
            values.get(TYPE) == "Eagle"
            and values.get("speculative_config.eagle3")
            and values.get("speculative_config.eagle3_one_model")
        )
        if one_model:
            tokens += draft - 1
    return tokens


def _draft_tokens(values: dict[str, Any]) -> int:
    """Draft tokens a step holds: max_draft_len, or a tree's max_total_draft_tokens when
    larger. 1.2's create_py_executor counts spec_config.max_total_draft_tokens (the stored
    33,994-character py_executor_creator.py), which each decoding config sets to
    max_draft_len for a chain and EagleDecodingConfig to the number of eagle_choices for a
    static tree (llm_args.py, the 139,423-character version; the dialect derives it); 1.0
    has no such field and counts max_draft_len. The one-model EAGLE-3 extra stays
    max_draft_len - 1 (speculative/utils.py get_num_extra_kv_tokens)."""
    draft = values.get(DRAFT) or 0
    return max(draft, values.get("speculative_config.max_total_draft_tokens") or 0)


def kv_sequence_tokens(values: dict[str, Any]) -> tuple[int, str]:
    """KV tokens one sequence holds in TensorRT-LLM's KV cache manager, and why in words
    ("" when it is max_seq_len itself).

    PyTorch backend (1.2: tensorrt_llm/_torch/pyexecutor/py_executor_creator.py
    create_py_executor @bab0f2e6, the manager's max_seq_len; its default attention window;
    speculative/utils.py get_num_extra_kv_tokens @3e906a0e): max_seq_len, + 1 with the
    overlap scheduler, + the draft tokens (twice with the overlap scheduler), + one-model
    EAGLE-3's max_draft_len - 1. TensorRT engine with speculative decoding: the builder
    grows max_seq_len by max_draft_len (EAGLE: + num_eagle_layers; builder.py build()
    @008b2b8d), the same terms as kv.block-table-fits-int32."""
    seq = values["build_config.max_seq_len"]
    kind = values.get(TYPE, "none")
    draft = values.get(DRAFT) or 0
    if values.get("runtime_config.backend") == "tensorrt":
        if kind == "none":
            return seq, ""
        eagle = (values.get("speculative_config.num_eagle_layers") or 0) if kind == "Eagle" else 0
        tokens = seq + draft + eagle
        words = f"max_seq_len {seq} + max_draft_len {draft}"
        words += f" + num_eagle_layers {eagle}" if kind == "Eagle" else ""
        return tokens, words + " (the TensorRT builder grows the engine's max_seq_len)"
    overlap = not values.get("runtime_config.disable_overlap_scheduler", False)
    parts = [f"max_seq_len {seq}"]
    tokens = seq
    if overlap:
        tokens += 1
        parts.append("1 (overlap scheduler)")
    if kind != "none":
        drafts = _draft_tokens(values)
        times = 2 if overlap else 1
        tokens += drafts * times
        parts.append(
            f"{times} x {drafts} draft tokens ({kind}"
            + (", overlap scheduler)" if overlap else ")")
        )
        one_model = (
            kind == "Eagle"
            and values.get("speculative_config.eagle3")
            and values.get("speculative_config.eagle3_one_model")
        )
        if one_model and draft > 0:
            tokens += draft - 1
            parts.append(f"{draft - 1} (one-model EAGLE-3's extra KV tokens)")
    if tokens == seq:
        return seq, ""
    return tokens, (
        " + ".join(parts) + " (the PyTorch backend's KV cache manager, create_py_executor)"
    )


def _pytorch_reserve() -> Any:
    """The block-table check for every case of the PyTorch KV manager's sequence length,
    with the draft tokens a step holds: max_draft_len, or max_total_draft_tokens when a
    tree's total is larger (`_draft_tokens`)."""
    d = ref(DRAFT)
    total = ref(TOTAL)

    def cases(t: Any) -> list[tuple[Any, Any]]:
        return [
            (PYTORCH_RUN & OVERLAP & DRAFTING & ~ONE_MODEL_EAGLE3, SEQ + t * 2 + 1),
            (PYTORCH_RUN & OVERLAP & ONE_MODEL_EAGLE3, SEQ + t * 2 + d),
            (PYTORCH_RUN & ~OVERLAP & DRAFTING & ~ONE_MODEL_EAGLE3, SEQ + t),
            (PYTORCH_RUN & ~OVERLAP & ONE_MODEL_EAGLE3, SEQ + t + d - 1),
        ]

    out = implies(PYTORCH_RUN & OVERLAP & ~DRAFTING, _block_table_fits(SEQ + 1))
    for chain, tree in zip(cases(d), cases(total), strict=True):
        out = out & implies(chain[0] & le(TOTAL, d), _block_table_fits(chain[1]))
        out = out & implies(tree[0] & gt(TOTAL, d), _block_table_fits(tree[1]))
    return out


def _block_table_fits(tokens: Any) -> Any:
    """(2 * max_batch_size - 1) * ceil(tokens / tokens_per_block) stays below 2^31."""
    return le(
        (ref("build_config.max_batch_size") * 2 - 1) * (tokens + ref(TPB) - 1),
        ref(TPB) * ((1 << 31) - 1),
    )


RULES = [
    Rule(
        id="kv.reuse-needs-paged-context-fmha",
        text="block reuse needs paged context FMHA",
        source=batch_manager("T4, T37 fixExecutorConfig"),
        scope=TENSORRT,
        expr=implies(eq(REUSE, True), eq(PAGED, True)),
        feasible={REUSE: True, PAGED: True},
        infeasible={REUSE: True, PAGED: False},
    ),
    Rule(
        id="kv.streamingllm-no-block-reuse",
        text="StreamingLLM needs block reuse off",
        # the arbitrator's claim (0.9-0.12); later TensorRT engines get the same from
        # StreamingLLM turning paged context FMHA off, which block reuse needs
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/hlapi/llm_utils.py _ConfigArbitrator; later builder.py build() with"
            " trtGptModelInflightBatching.cpp fixExecutorConfig",
            "T2",
        ),
        scope=TENSORRT,
        expr=implies(eq("plugin_config.streamingllm", True), eq(REUSE, False)),
        feasible={"plugin_config.streamingllm": True, REUSE: False},
        infeasible={"plugin_config.streamingllm": True, REUSE: True},
    ),
    Rule(
        id="kv.beam-search-no-block-reuse",
        text="beam search (max_beam_width > 1) forbids block reuse",
        source=arbitrator("T6; C++ check reported in tensorrtllm_backend#411"),
        scope=ARBITRATOR,
        expr=implies(gt("build_config.max_beam_width", 1), eq(REUSE, False)),
        feasible={"build_config.max_beam_width": 4, REUSE: False},
        infeasible={"build_config.max_beam_width": 4, REUSE: True},
    ),
    Rule(
        id="kv.reuse-no-context-logits",
        text="block reuse is off when the engine returns context logits",
        source=batch_manager("T37 fixExecutorConfig"),
        scope=TENSORRT,
        expr=implies(eq(REUSE, True), eq("build_config.gather_context_logits", False)),
        feasible={REUSE: False, "build_config.gather_context_logits": True},
        infeasible={REUSE: True, "build_config.gather_context_logits": True},
    ),
    Rule(
        id="kv.tokens-per-block-power-of-two",
        text="tokens_per_block must be a power of two",
        source=Source(
            "TensorRT-LLM",
            "cpp/tensorrt_llm/kernels/kvCacheUtils.h KVBlockArrayForContextFMHA",
            "T46",
            "0ccf9032",
        ),
        scope=TRTLLM,
        # the VANILLA attention backend of the PyTorch backend makes one block of the
        # whole token budget and never runs this kernel
        expr=implies(
            ne("runtime_config.attn_backend", "VANILLA"),
            one_of("kv_cache_config.tokens_per_block", POWERS_OF_TWO),
        ),
        feasible={"kv_cache_config.tokens_per_block": 64},
        infeasible={
            "kv_cache_config.tokens_per_block": 48,
            "runtime_config.attn_backend": "TRTLLM",
        },
    ),
    Rule(
        id="kv.memory-fraction-below-one",
        text="free_gpu_memory_fraction must be below 1.0",
        source=kv_manager("T45 calculateFreeMemBytes"),
        scope=TRTLLM,
        expr=lt("kv_cache_config.free_gpu_memory_fraction", 1.0),
        feasible={"kv_cache_config.free_gpu_memory_fraction": 0.95},
        infeasible={"kv_cache_config.free_gpu_memory_fraction": 1.0},
    ),
    Rule(
        id="kv.dtype-matches-kv-quant",
        text="an fp8 KV dtype sets FP8 KV quantization (the PyTorch backend syncs the two)",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/llmapi/llm_args.py TorchLlmArgs.sync_quant_config_with_kv_cache_config_dtype",
            "T52",
            "1.2",
        ),
        scope=PYTORCH,
        # upstream overwrites kv_cache_quant_algo with FP8 when the dtype is fp8 (an
        # explicit INT8 or NVFP4 included), and only warns for any other non-auto dtype
        # next to a KV quantization: the effective configuration always has FP8 here
        expr=implies(
            eq("kv_cache_config.dtype", "fp8"), eq("quant_config.kv_cache_quant_algo", "FP8")
        ),
        feasible={"kv_cache_config.dtype": "fp8", "quant_config.kv_cache_quant_algo": "FP8"},
        infeasible={"kv_cache_config.dtype": "fp8", "quant_config.kv_cache_quant_algo": "INT8"},
    ),
    Rule(
        id="kv.block-table-fits-int32",
        text="block tables must stay within int32: (2 * max_batch_size - 1) * blocks per sequence < 2^31; a TensorRT engine with speculative decoding holds max_seq_len + max_draft_len tokens per sequence (EAGLE: + num_eagle_layers), the PyTorch KV manager max_seq_len + 1 with the overlap scheduler, plus the draft tokens, a tree's max_total_draft_tokens where larger than max_draft_len (twice with the overlap scheduler; one-model EAGLE-3: max_draft_len - 1 more)",
        source=Source(
            "TensorRT-LLM",
            "cpp/tensorrt_llm/kernels/kvCacheUtils.h KVBlockArrayForContextFMHA; "
            "tensorrt_llm/builder.py build() (max_seq_len grows by max_draft_len, and for "
            "EAGLE by num_eagle_layers, @008b2b8d)",
            "T46",
            "0ccf9032",
        ),
        scope=TRTLLM,
        # blocks per sequence = ceil(tokens / tokens_per_block) <= (tokens +
        # tokens_per_block - 1) / tokens_per_block, so this is the check, never looser
        expr=_block_table_fits(SEQ)
        & implies(ENGINE_DRAFTS, _block_table_fits(SEQ + ref(DRAFT)))
        & implies(
            ENGINE_DRAFTS & eq(TYPE, "Eagle"),
            _block_table_fits(SEQ + ref(DRAFT) + ref("speculative_config.num_eagle_layers")),
        )
        & _pytorch_reserve(),
        feasible={
            "build_config.max_batch_size": 2048,
            "build_config.max_seq_len": 131072,
            TPB: 32,
        },
        infeasible={
            "build_config.max_batch_size": 65536,
            "build_config.max_seq_len": 1048576,
            TPB: 32,
        },
    ),
    Rule(
        id="kv.beam-search-no-cyclic-kv",
        text="beam search (max_beam_width > 1) needs a full attention window (no cyclic KV cache)",
        source=batch_manager("audit 3 #13; older versions of the file, absent from the newest"),
        # attested in batch-manager versions of the arbitrator era; the newest version read
        # has no such check, so the range ends where the evidence does
        scope=Scope("trtllm", ("tensorrt",), until="0.12"),
        expr=implies(
            gt("build_config.max_beam_width", 1), eq("kv_cache_config.max_attention_window", None)
        ),
        feasible={"build_config.max_beam_width": 4, "kv_cache_config.max_attention_window": None},
        infeasible={
            "build_config.max_beam_width": 4,
            "kv_cache_config.max_attention_window": 4096,
        },
    ),
]

# Not shipped: SGLang refuses a hierarchical (host) cache without its radix cache (S14),
# but TensorRT-LLM, whose option names these are and whose semantics the runtime follows,
# accepts host_cache_size with block reuse off (nothing reusable is then offloaded).
# Shipping it would turn that accepted configuration into a conflict.
HELD_BACK = [
    Rule(
        id="kv.host-tier-needs-block-reuse",
        text="a host KV tier (host_cache_size > 0) extends the prefix cache, so it needs block reuse",
        source=Source("SGLang", "python/sglang/srt/server_args.py", "S14", "0.5.2"),
        scope=Scope("sglang"),
        expr=implies(gt("kv_cache_config.host_cache_size", 0), eq(REUSE, True)),
        feasible={"kv_cache_config.host_cache_size": 1 << 30, REUSE: True},
        infeasible={"kv_cache_config.host_cache_size": 1 << 30, REUSE: False},
    ),
]
