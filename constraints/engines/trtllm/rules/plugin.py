"""Plugin rules: fused GEMM + SwiGLU, reduce fusion, user buffers, NCCL (TensorRT engines:
plugins exist only on the TensorRT-engine path)."""

from __future__ import annotations

from constraints.expr import all_of, eq, gt, implies, ne
from constraints.rules._sources import TENSORRT, builder, plugin_py
from constraints.rules.base import Rule, Source

P = "plugin_config."

RULES = [
    Rule(
        id="plugin.gemm-swiglu-needs-fused-mlp",
        text="the GEMM + SwiGLU plugins need use_fused_mlp",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py optimize_model_with_config", "T24"),
        scope=TENSORRT,
        expr=implies(
            ne(P + "gemm_swiglu_plugin", None) | ne(P + "low_latency_gemm_swiglu_plugin", None),
            eq(P + "use_fused_mlp", True),
        ),
        feasible={P + "gemm_swiglu_plugin": "fp8", P + "use_fused_mlp": True},
        infeasible={P + "gemm_swiglu_plugin": "fp8", P + "use_fused_mlp": False},
    ),
    Rule(
        id="plugin.user-buffer-needs-reduce-fusion",
        text="user_buffer must be enabled together with reduce_fusion",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py; plugin.py field help", "T12"),
        scope=TENSORRT,
        expr=implies(eq(P + "user_buffer", True), eq(P + "reduce_fusion", True)),
        feasible={
            P + "user_buffer": True,
            P + "reduce_fusion": True,
            "parallel_config.tensor_parallel_size": 2,
        },
        infeasible={P + "user_buffer": True, P + "reduce_fusion": False},
    ),
    Rule(
        id="plugin.reduce-fusion-needs-tensor-parallel",
        text="reduce_fusion needs tensor parallelism (tensor_parallel_size > 1)",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py build()", "T11"),
        scope=TENSORRT,
        expr=implies(eq(P + "reduce_fusion", True), gt("parallel_config.tensor_parallel_size", 1)),
        feasible={P + "reduce_fusion": True, "parallel_config.tensor_parallel_size": 2},
        infeasible={P + "reduce_fusion": True, "parallel_config.tensor_parallel_size": 1},
    ),
    Rule(
        id="plugin.nccl-off-on-one-gpu",
        text="on one GPU (no tensor or pipeline parallelism) the NCCL plugin is off",
        source=builder("T28"),
        scope=TENSORRT,
        expr=implies(
            eq("parallel_config.tensor_parallel_size", 1)
            & eq("parallel_config.pipeline_parallel_size", 1),
            eq(P + "nccl_plugin", None),
        ),
        feasible={"parallel_config.tensor_parallel_size": 1, P + "nccl_plugin": None},
        infeasible={
            "parallel_config.tensor_parallel_size": 1,
            "parallel_config.pipeline_parallel_size": 1,
            P + "nccl_plugin": "auto",
        },
    ),
    Rule(
        id="plugin.nccl-on-with-parallelism",
        text="with tensor or pipeline parallelism the NCCL plugin is on",
        source=builder("T28"),
        scope=TENSORRT,
        expr=implies(
            gt("parallel_config.tensor_parallel_size", 1)
            | gt("parallel_config.pipeline_parallel_size", 1),
            ne(P + "nccl_plugin", None),
        ),
        feasible={"parallel_config.tensor_parallel_size": 2, P + "nccl_plugin": "auto"},
        infeasible={"parallel_config.pipeline_parallel_size": 2, P + "nccl_plugin": None},
    ),
    Rule(
        id="plugin.sm100-unsupported-plugins",
        text="on sm 100 the GEMM-SwiGLU, FP8 row-wise, low-latency GEMM plugins and FP32 BERT FMHA accumulation are unsupported",
        source=plugin_py("T35"),
        scope=TENSORRT,
        expr=implies(
            eq("device.sm", 100),
            all_of(
                eq(P + "gemm_swiglu_plugin", None),
                eq(P + "low_latency_gemm_swiglu_plugin", None),
                eq(P + "low_latency_gemm_plugin", None),
                eq(P + "fp8_rowwise_gemm_plugin", None),
                eq(P + "bert_context_fmha_fp32_acc", False),
            ),
        ),
        feasible={"device.sm": 100, P + "low_latency_gemm_plugin": None},
        infeasible={"device.sm": 100, P + "low_latency_gemm_plugin": "fp8"},
    ),
]
