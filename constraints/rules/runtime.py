"""LLM API runtime rules: execution backend, speculative methods per backend, attention
backends of the PyTorch backend, in-flight batching and request admission."""

from __future__ import annotations

from ..expr import all_of, any_of, eq, implies, le, ne, one_of, ref
from ..schema import RECURRENT_ARCHITECTURES
from ._sources import batch_manager, llm_args, torch_executor
from .base import Rule, Source

R = "runtime_config."
BACKEND = R + "backend"
TYPE = "speculative_config.decoding_type"
REUSE = "kv_cache_config.enable_block_reuse"
CHUNKED = "scheduler_config.enable_chunked_context"
RECURRENT = one_of("model.architecture", RECURRENT_ARCHITECTURES)

RULES = [
    Rule(
        id="runtime.medusa-lookahead-need-tensorrt",
        text="Medusa and Lookahead decoding run only on the TensorRT backend",
        source=llm_args("T49"),
        expr=implies(one_of(TYPE, ["Medusa", "Lookahead"]), eq(BACKEND, "tensorrt")),
        feasible={TYPE: "Medusa", BACKEND: "tensorrt"},
        infeasible={TYPE: "Lookahead", BACKEND: "pytorch"},
    ),
    Rule(
        id="runtime.mtp-draft-target-need-pytorch",
        text="MTP and draft-target decoding run only on the PyTorch backend",
        source=llm_args("T49"),
        expr=implies(one_of(TYPE, ["MTP", "DraftTarget"]), eq(BACKEND, "pytorch")),
        feasible={TYPE: "MTP", BACKEND: "pytorch"},
        infeasible={TYPE: "DraftTarget", BACKEND: "tensorrt"},
    ),
    Rule(
        id="runtime.eagle3-needs-pytorch",
        text="EAGLE-3 is not supported by the TensorRT backend",
        source=llm_args("T49"),
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
        expr=implies(eq(BACKEND, "tensorrt"), eq("kv_cache_config.dtype", "auto")),
        feasible={BACKEND: "pytorch", "kv_cache_config.dtype": "fp8"},
        infeasible={BACKEND: "tensorrt", "kv_cache_config.dtype": "fp8"},
    ),
    Rule(
        id="runtime.tensorrt-lora-needs-plugin",
        text="LoRA on the TensorRT backend needs the LoRA plugin",
        source=llm_args("T52"),
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
        expr=implies(eq(R + "attn_backend", "FLASHINFER_STAR_ATTENTION"), eq(CHUNKED, False)),
        feasible={R + "attn_backend": "FLASHINFER_STAR_ATTENTION", CHUNKED: False},
        infeasible={R + "attn_backend": "FLASHINFER_STAR_ATTENTION", CHUNKED: True},
    ),
    Rule(
        id="runtime.unchunked-prompt-fits-token-budget",
        text="without chunked context (PyTorch backend) a prompt of max_input_len must fit in max_num_tokens",
        source=Source("TensorRT-LLM", "tensorrt_llm/llmapi/llm.py _check_arguments", "T57"),
        expr=implies(
            all_of(eq(BACKEND, "pytorch"), eq(CHUNKED, False)),
            le("build_config.max_input_len", ref("build_config.max_num_tokens")),
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
            "build_config.max_num_tokens": 8192,
        },
    ),
    Rule(
        id="runtime.inflight-batching-needs-plugins",
        text="in-flight batching on a TensorRT engine needs the GPT attention plugin, packed input and a paged KV cache",
        source=batch_manager("T43"),
        expr=implies(
            all_of(eq(BACKEND, "tensorrt"), eq(R + "batching_type", "INFLIGHT")),
            all_of(
                any_of(ne("plugin_config.gpt_attention_plugin", None), RECURRENT),
                eq("plugin_config.remove_input_padding", True),
                any_of(eq("plugin_config.paged_kv_cache", True), RECURRENT),
            ),
        ),
        feasible={
            BACKEND: "tensorrt",
            R + "batching_type": "STATIC",
            "plugin_config.remove_input_padding": False,
        },
        infeasible={
            BACKEND: "tensorrt",
            R + "batching_type": "INFLIGHT",
            "plugin_config.remove_input_padding": False,
        },
    ),
]
