"""Plugin rules: fused GEMM + SwiGLU, reduce fusion and user buffers."""

from __future__ import annotations

from ..expr import eq, gt, implies, ne
from .base import Rule, Source

P = "plugin_config."
BUILDER = Source("TensorRT-LLM", "tensorrt_llm/builder.py", "")

RULES = [
    Rule(
        id="plugin.gemm-swiglu-needs-fused-mlp",
        text="the GEMM + SwiGLU plugins need use_fused_mlp",
        source=Source("TensorRT-LLM", "tensorrt_llm/builder.py optimize_model_with_config", "T24"),
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
        expr=implies(eq(P + "reduce_fusion", True), gt("parallel_config.tensor_parallel_size", 1)),
        feasible={P + "reduce_fusion": True, "parallel_config.tensor_parallel_size": 2},
        infeasible={P + "reduce_fusion": True, "parallel_config.tensor_parallel_size": 1},
    ),
]
