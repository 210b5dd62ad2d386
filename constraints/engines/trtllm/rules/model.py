"""Model rules: features that only some architectures, recurrent models or encoder-decoder
models support (the architecture and shape are facts from config.json). All are checks of
the TensorRT engine builder, build command or batch manager (scope `tensorrt`)."""

from __future__ import annotations

from constraints.expr import all_of, eq, implies, ne, one_of
from constraints.paths import MODEL
from constraints.rules._sources import TENSORRT, batch_manager, build_cli, builder
from constraints.rules.base import Rule, Source
from constraints.schema import QUANT_ALGOS, RECURRENT_ARCHITECTURES

ARCH = MODEL.architecture
P = "plugin_config."
RECURRENT = one_of(ARCH, RECURRENT_ARCHITECTURES)
# the build command's quantization gate for fused MLP (MIXED_PRECISION where modelled)
FUSED_MLP_QUANT = [q for q in (None, "FP8", "MIXED_PRECISION") if q in QUANT_ALGOS]

# The architectures of the schema's list that the TensorRT-engine model loader has no class
# for: tensorrt_llm/models/__init__.py MODEL_MAP (read at 02267d3d, a 1.x version with
# Qwen3ForCausalLM, GEMMA3_ARCHITECTURE = Gemma3ForCausalLM and DeepseekV2ForCausalLM but
# no DeepseekV3, Qwen3-MoE, Qwen3-Next, gpt-oss, Llama 4, Gemma 3 multimodal or RWKV entry);
# TopModelMixin.from_hugging_face (tensorrt_llm/models/automodel.py) raises
# NotImplementedError "The given huggingface model architecture ... is not supported in
# TRT-LLM yet". `other` (an architecture outside the schema's list) is left open.
NOT_IN_MODEL_MAP = [
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Llama4ForConditionalGeneration",
    "RwkvForCausalLM",
    "Rwkv5ForCausalLM",
    "Rwkv6ForCausalLM",
]
MODEL_MAP = Source(
    "TensorRT-LLM",
    "tensorrt_llm/models/__init__.py MODEL_MAP; tensorrt_llm/models/automodel.py"
    " TopModelMixin.from_hugging_face",
    "02267d3d",
    "1.0-1.2",
)

RULES = [
    Rule(
        id="model.tensorrt-engine-architectures",
        text="the TensorRT-engine backend builds only the architectures of its MODEL_MAP"
        " (no DeepSeek-V3, Qwen3-MoE, Qwen3-Next, gpt-oss, Llama 4, Gemma 3 VLM or RWKV):"
        " 'The given huggingface model architecture ... is not supported in TRT-LLM yet'",
        source=MODEL_MAP,
        scope=TENSORRT,
        expr=~one_of(ARCH, NOT_IN_MODEL_MAP),
        feasible={ARCH: "Qwen2MoeForCausalLM"},
        infeasible={ARCH: "DeepseekV3ForCausalLM"},
    ),
    Rule(
        id="model.reduce-fusion-architectures",
        text="reduce_fusion is supported for Llama, Gemma2 and Medusa models only",
        source=builder("T11"),
        scope=TENSORRT,
        expr=implies(
            eq(P + "reduce_fusion", True),
            one_of(ARCH, ["LlamaForCausalLM", "Gemma2ForCausalLM", "MedusaForCausalLM"]),
        ),
        feasible={P + "reduce_fusion": True, ARCH: "Gemma2ForCausalLM"},
        infeasible={P + "reduce_fusion": True, ARCH: "Qwen2ForCausalLM"},
    ),
    Rule(
        id="model.norm-quant-fusion-llama-nvfp4",
        text="norm_quant_fusion needs a Llama model with NVFP4 quantization and reduce_fusion off",
        source=builder("T13"),
        scope=TENSORRT,
        expr=implies(
            eq(P + "norm_quant_fusion", True),
            all_of(
                eq(P + "reduce_fusion", False),
                eq(ARCH, "LlamaForCausalLM"),
                eq("quant_config.quant_algo", "NVFP4"),
            ),
        ),
        feasible={P + "norm_quant_fusion": True, "quant_config.quant_algo": "NVFP4"},
        infeasible={P + "norm_quant_fusion": True, "quant_config.quant_algo": "FP8"},
    ),
    Rule(
        id="model.streamingllm-llama-only",
        text="StreamingLLM is built for LlamaForCausalLM models only",
        source=build_cli("T34"),
        scope=TENSORRT,
        expr=implies(eq(P + "streamingllm", True), eq(ARCH, "LlamaForCausalLM")),
        feasible={P + "streamingllm": True, ARCH: "LlamaForCausalLM"},
        infeasible={P + "streamingllm": True, ARCH: "MistralForCausalLM"},
    ),
    Rule(
        id="model.pp-reduce-scatter-mixtral-only",
        text="pp_reduce_scatter is built for MixtralForCausalLM models only",
        source=build_cli("T34"),
        scope=TENSORRT,
        expr=implies(eq(P + "pp_reduce_scatter", True), eq(ARCH, "MixtralForCausalLM")),
        feasible={P + "pp_reduce_scatter": True, ARCH: "MixtralForCausalLM"},
        infeasible={P + "pp_reduce_scatter": True, ARCH: "LlamaForCausalLM"},
    ),
    Rule(
        id="model.paged-state-recurrent-only",
        text="paged_state applies to recurrent models (Mamba, RecurrentGemma) only",
        source=Source(
            "TensorRT-LLM", "tensorrt_llm/builder.py BuildConfig.update_kv_cache_type", "T36"
        ),
        scope=TENSORRT,
        expr=implies(eq(P + "paged_state", True), RECURRENT),
        feasible={P + "paged_state": True, ARCH: "MambaForCausalLM"},
        infeasible={P + "paged_state": True, ARCH: "LlamaForCausalLM"},
    ),
    Rule(
        id="model.recurrentgemma-paged-kv-matches-state",
        text="RecurrentGemma pages its KV cache exactly when it pages its state",
        source=Source(
            "TensorRT-LLM", "tensorrt_llm/builder.py BuildConfig.update_kv_cache_type", "T36"
        ),
        scope=TENSORRT,
        expr=implies(
            eq(ARCH, "RecurrentGemmaForCausalLM"),
            all_of(eq(P + "paged_kv_cache", True), eq(P + "paged_state", True))
            | all_of(eq(P + "paged_kv_cache", False), eq(P + "paged_state", False)),
        ),
        feasible={ARCH: "RecurrentGemmaForCausalLM", P + "paged_state": True},
        infeasible={
            ARCH: "RecurrentGemmaForCausalLM",
            P + "paged_state": True,
            P + "paged_kv_cache": False,
        },
    ),
    Rule(
        id="model.recurrent-limits",
        text="recurrent models support neither beam search, chunked context nor speculative decoding",
        source=batch_manager("T41"),
        scope=TENSORRT,
        expr=implies(
            RECURRENT,
            all_of(
                eq("build_config.max_beam_width", 1),
                eq("scheduler_config.enable_chunked_context", False),
                eq("speculative_config.decoding_type", "none"),
            ),
        ),
        feasible={ARCH: "MambaForCausalLM", "build_config.max_beam_width": 1},
        infeasible={ARCH: "MambaForCausalLM", "build_config.max_beam_width": 4},
    ),
    Rule(
        id="model.cross-kv-fraction-iff-encoder-decoder",
        text="cross_kv_cache_fraction must be set for encoder-decoder models and only for them",
        source=batch_manager("T42"),
        scope=TENSORRT,
        expr=(
            implies(
                eq("model.is_encoder_decoder", True),
                ne("kv_cache_config.cross_kv_cache_fraction", None),
            )
            & implies(
                eq("model.is_encoder_decoder", False),
                eq("kv_cache_config.cross_kv_cache_fraction", None),
            )
        ),
        feasible={"model.is_encoder_decoder": True, "kv_cache_config.cross_kv_cache_fraction": 0.5},
        infeasible={
            "model.is_encoder_decoder": False,
            "kv_cache_config.cross_kv_cache_fraction": 0.5,
        },
    ),
    Rule(
        id="model.fused-mlp-support",
        text="use_fused_mlp needs unquantized, FP8 or mixed-precision weights, a decoder-only model, and no FP8 RecurrentGemma",
        source=Source(
            "TensorRT-LLM",
            "tensorrt_llm/builder.py optimize_model_with_config; commands/build.py main",
            "T25",
            "008b2b8d",
        ),
        scope=TENSORRT,
        # upstream drops fused MLP (it never errors); as everywhere, an override of the
        # user's value is a conflict here. Auto-parallel, which also drops it, is not modelled
        expr=implies(
            eq(P + "use_fused_mlp", True),
            all_of(
                one_of("quant_config.quant_algo", FUSED_MLP_QUANT),
                eq("model.is_encoder_decoder", False),
                ~all_of(
                    eq(ARCH, "RecurrentGemmaForCausalLM"), eq("quant_config.quant_algo", "FP8")
                ),
            ),
        ),
        feasible={P + "use_fused_mlp": True, "quant_config.quant_algo": "FP8"},
        infeasible={
            P + "use_fused_mlp": True,
            ARCH: "RecurrentGemmaForCausalLM",
            "quant_config.quant_algo": "FP8",
        },
    ),
]
