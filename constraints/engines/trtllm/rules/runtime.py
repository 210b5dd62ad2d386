"""LLM API runtime rules: execution backend, speculative methods per backend, attention
backends of the PyTorch backend, in-flight batching and request admission.

The first two rules tie `runtime_config.backend` to the profile's backend: a profile is one
backend's release line (`tensorrt_llm.LLM` is the PyTorch LLM in 1.x; the TensorRT-engine
LLM is `tensorrt_llm._tensorrt_engine.LLM`), and the rules compiled for it are that
backend's, so a claim for the other backend is a conflict that names the profile."""

from __future__ import annotations

from constraints.expr import all_of, any_of, eq, implies, le, ne, one_of, ref
from constraints.paths import KV_CACHE_CONFIG, RUNTIME_CONFIG, SCHEDULER_CONFIG, SPECULATIVE_CONFIG
from constraints.rules._sources import PYTORCH, TENSORRT, TRTLLM, llm_args, torch_executor
from constraints.rules.base import Rule, Scope, Source
from constraints.schema import DECODING_TYPES, RECURRENT_ARCHITECTURES

R = "runtime_config."
BACKEND = RUNTIME_CONFIG.backend
TYPE = SPECULATIVE_CONFIG.decoding_type
REUSE = KV_CACHE_CONFIG.enable_block_reuse
CHUNKED = SCHEDULER_CONFIG.enable_chunked_context
RECURRENT = one_of("model.architecture", RECURRENT_ARCHITECTURES)
# PyTorch decoding types that never support the overlap scheduler, where the schema has them
NO_OVERLAP_TYPES = tuple(
    t for t in ("NGram", "User_Provided", "UserProvided") if t in DECODING_TYPES
)

# decoding types whose supports_backend excludes the TensorRT engine (llm_args.py 1.0-1.2)
PYTORCH_ONLY_DECODING = ("MTP", "NGram", "DraftTarget", "UserProvided", "PARD", "AUTO", "SaveState")

RULES = [
    Rule(
        id="runtime.medusa-lookahead-need-tensorrt",
        text="Medusa and Lookahead decoding run only on the TensorRT backend",
        source=llm_args("T49"),
        scope=TRTLLM,
        expr=implies(one_of(TYPE, ["Medusa", "Lookahead"]), eq(BACKEND, "tensorrt")),
        feasible={TYPE: "Medusa", BACKEND: "tensorrt"},
        infeasible={TYPE: "Lookahead", BACKEND: "pytorch"},
    ),
    Rule(
        id="runtime.mtp-draft-target-need-pytorch",
        text="MTP, NGram, draft-target, user-provided, PARD, AUTO and SaveState decoding run only on the PyTorch backend",
        source=llm_args("T49 supports_backend"),
        scope=TRTLLM,
        expr=implies(one_of(TYPE, list(PYTORCH_ONLY_DECODING)), eq(BACKEND, "pytorch")),
        feasible={TYPE: "MTP", BACKEND: "pytorch"},
        infeasible={TYPE: "DraftTarget", BACKEND: "tensorrt"},
    ),
    Rule(
        id="runtime.eagle3-needs-pytorch",
        text="EAGLE-3 is not supported by the TensorRT backend",
        source=llm_args("T49"),
        scope=TRTLLM,
        expr=implies(
            all_of(eq(TYPE, "Eagle"), eq("speculative_config.eagle3", True)),
            eq(BACKEND, "pytorch"),
        ),
        feasible={TYPE: "Eagle", "speculative_config.eagle3": True, BACKEND: "pytorch"},
        infeasible={TYPE: "Eagle", "speculative_config.eagle3": True, BACKEND: "tensorrt"},
    ),
    Rule(
        id="runtime.tensorrt-kv-dtype-auto",
        text="the TensorRT backend takes the KV dtype from the engine (kv_cache_config.dtype auto)",
        source=llm_args("T52"),
        scope=TRTLLM,
        expr=implies(eq(BACKEND, "tensorrt"), eq("kv_cache_config.dtype", "auto")),
        feasible={BACKEND: "pytorch", "kv_cache_config.dtype": "fp8"},
        infeasible={BACKEND: "tensorrt", "kv_cache_config.dtype": "fp8"},
    ),
    Rule(
        id="runtime.tensorrt-lora-needs-plugin",
        text="LoRA on the TensorRT backend needs the LoRA plugin",
        source=llm_args("T52"),
        scope=TENSORRT,
        expr=implies(
            all_of(eq(R + "enable_lora", True), eq(BACKEND, "tensorrt")),
            ne("plugin_config.lora_plugin", None),
        ),
        feasible={
            R + "enable_lora": True,
            BACKEND: "tensorrt",
            "plugin_config.lora_plugin": "auto",
        },
        infeasible={
            R + "enable_lora": True,
            BACKEND: "tensorrt",
            "plugin_config.lora_plugin": None,
        },
    ),
    Rule(
        id="runtime.flashinfer-no-block-reuse",
        text="the FlashInfer attention backends turn block reuse off",
        source=torch_executor("T53"),
        scope=PYTORCH,
        expr=implies(
            one_of(R + "attn_backend", ["FLASHINFER", "FLASHINFER_STAR_ATTENTION"]),
            eq(REUSE, False),
        ),
        feasible={R + "attn_backend": "FLASHINFER", REUSE: False},
        infeasible={R + "attn_backend": "FLASHINFER", REUSE: True},
    ),
    Rule(
        id="runtime.star-attention-no-chunked-context",
        text="the FlashInfer star-attention backend turns chunked context off",
        source=torch_executor("T53"),
        scope=PYTORCH,
        expr=implies(eq(R + "attn_backend", "FLASHINFER_STAR_ATTENTION"), eq(CHUNKED, False)),
        feasible={R + "attn_backend": "FLASHINFER_STAR_ATTENTION", CHUNKED: False},
        infeasible={R + "attn_backend": "FLASHINFER_STAR_ATTENTION", CHUNKED: True},
    ),
    Rule(
        id="runtime.unchunked-prompt-fits-token-budget",
        text="without chunked context (PyTorch backend) the longest prompt the engine admits (max_input_len, and below max_seq_len) must fit in max_num_tokens",
        source=Source("TensorRT-LLM", "tensorrt_llm/llmapi/llm.py _check_arguments", "T57"),
        scope=PYTORCH,
        # the check runs per request: a prompt must also leave room in max_seq_len, so a
        # max_seq_len within the token budget admits no prompt that would not fit
        expr=implies(
            all_of(eq(BACKEND, "pytorch"), eq(CHUNKED, False)),
            any_of(
                le("build_config.max_input_len", ref("build_config.max_num_tokens")),
                le("build_config.max_seq_len", ref("build_config.max_num_tokens")),
            ),
        ),
        feasible={
            BACKEND: "pytorch",
            CHUNKED: False,
            "build_config.max_input_len": 8192,
            "build_config.max_num_tokens": 8192,
        },
        infeasible={
            BACKEND: "pytorch",
            CHUNKED: False,
            "build_config.max_input_len": 9351,
            "build_config.max_seq_len": 16384,
            "build_config.max_num_tokens": 8192,
        },
    ),
    Rule(
        id="runtime.inflight-batching-needs-plugins",
        text="in-flight batching on a TensorRT engine needs packed input and, for a transformer, the GPT attention plugin and a paged (or disabled) KV cache; for Mamba, paged state",
        source=Source(
            "TensorRT-LLM",
            "cpp/include/tensorrt_llm/runtime/modelConfig.h supportsInflightBatching",
            "T43",
        ),
        scope=TENSORRT,
        expr=implies(
            eq(R + "batching_type", "INFLIGHT"),
            all_of(
                eq("plugin_config.remove_input_padding", True),
                any_of(
                    RECURRENT,
                    all_of(
                        ne("plugin_config.gpt_attention_plugin", None),
                        any_of(
                            eq("plugin_config.paged_kv_cache", True),
                            eq("build_config.kv_cache_type", "DISABLED"),
                        ),
                    ),
                ),
                # the Mamba conv1d plugin it also needs is not an option of the schema
                implies(
                    eq("model.architecture", "MambaForCausalLM"),
                    eq("plugin_config.paged_state", True),
                ),
            ),
        ),
        feasible={
            R + "batching_type": "INFLIGHT",
            "plugin_config.paged_kv_cache": False,
            "build_config.kv_cache_type": "DISABLED",
        },
        infeasible={
            R + "batching_type": "INFLIGHT",
            "plugin_config.remove_input_padding": False,
        },
    ),
    Rule(
        id="runtime.pytorch-profile-backend",
        text="a PyTorch-backend profile runs runtime_config.backend = pytorch (tensorrt_llm.LLM)",
        source=Source(
            "TensorRT-LLM", "tensorrt_llm/llmapi/llm.py (LLM is the PyTorch LLM)", "audit 5", "1.0"
        ),
        scope=PYTORCH,
        expr=eq(BACKEND, "pytorch"),
        feasible={BACKEND: "pytorch"},
        infeasible={BACKEND: "tensorrt"},
    ),
    Rule(
        id="runtime.tensorrt-profile-backend",
        text="a TensorRT-engine profile runs runtime_config.backend = tensorrt (a built engine)",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/_tensorrt_engine (LLM over a built engine)",
            "audit 5",
            "1.0",
        ),
        scope=TENSORRT,
        expr=eq(BACKEND, "tensorrt"),
        feasible={BACKEND: "tensorrt"},
        infeasible={BACKEND: "pytorch"},
    ),
    Rule(
        id="runtime.spec-without-overlap-scheduler",
        text="two-model EAGLE-3 and draft-target decoding turn the PyTorch overlap scheduler off",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/_torch/speculative/interface.py support_overlap_scheduler;"
            " py_executor_creator.py",
            "audit 3 #7",
            "1.0",
        ),
        # at 1.0 only MTP and one-model EAGLE-3 support the overlap scheduler; later
        # releases add every mode with a draft model (two-model EAGLE-3, draft-target)
        scope=Scope("trtllm", ("pytorch",), until="1.0"),
        expr=implies(
            any_of(
                all_of(eq(TYPE, "Eagle"), eq("speculative_config.eagle3_one_model", False)),
                eq(TYPE, "DraftTarget"),
                *(eq(TYPE, t) for t in NO_OVERLAP_TYPES),
            ),
            eq(R + "disable_overlap_scheduler", True),
        ),
        feasible={TYPE: "DraftTarget", R + "disable_overlap_scheduler": True},
        infeasible={TYPE: "DraftTarget", R + "disable_overlap_scheduler": False},
    ),
    Rule(
        id="runtime.vanilla-attention-block-is-token-budget",
        text="the VANILLA attention backend uses one block of max_num_tokens tokens (tokens_per_block = max_num_tokens)",
        source=torch_executor("audit 3 #14"),
        scope=PYTORCH,
        expr=implies(
            eq(R + "attn_backend", "VANILLA"),
            eq(ref("kv_cache_config.tokens_per_block"), ref("build_config.max_num_tokens")),
        ),
        feasible={
            R + "attn_backend": "VANILLA",
            "build_config.max_num_tokens": 8192,
            "kv_cache_config.tokens_per_block": 8192,
        },
        infeasible={
            R + "attn_backend": "VANILLA",
            "build_config.max_num_tokens": 8192,
            "kv_cache_config.tokens_per_block": 32,
        },
    ),
]
