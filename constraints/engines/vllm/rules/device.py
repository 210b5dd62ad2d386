"""vLLM 0.33's limits of the GPU: the compute dtype and each quantization method's
minimum compute capability.

Read in the vLLM 0.33.0 wheel (and compared with 0.24.0's):

- bfloat16: `CudaPlatform.check_if_supports_dtype` (vllm/platforms/cuda.py), called by
  the GPU worker when it starts (vllm/v1/worker/gpu_worker.py), raises "Bfloat16 is only
  supported on GPUs with compute capability of at least 8.0 ... --dtype=half" below sm 80.
  `--dtype auto` on a bfloat16 checkpoint does not reach it: `_resolve_auto_dtype`
  (vllm/config/model.py) falls back to float16 with a warning, because
  `CudaPlatform.supported_dtypes` lists no bfloat16 below sm 80.
- quantization: `VllmConfig._get_quantization_config` (vllm/config/vllm.py) raises "The
  quantization method X is not supported for the current GPU. Minimum capability: N.
  Current capability: M." when the device is below the method's `get_min_capability()`.
  The minimums (vllm/model_executor/layers/quantization/*.py, 0.33.0): fp8 75 (below
  sm 89 it serves the FP8 weights through Marlin, weight-only), modelopt (FP8) 80,
  modelopt_fp4 75 (below Blackwell the NVFP4 weights run through the FP4 Marlin kernel:
  no refusal on Hopper or Ampere), modelopt_mxfp8 80, mxfp4 80, fbgemm_fp8 80,
  experts_int8 80, awq (served as auto_awq) 75, gptq (auto_gptq) 60, compressed-tensors
  70, moe_wna16 70, torchao 75, fp_quant 100. In 0.24.0 modelopt (FP8) asked for 89.
"""

from __future__ import annotations

from constraints.expr import all_of, ge, implies, lt, ne, one_of
from constraints.paths import BUILD_CONFIG, QUANT_CONFIG
from constraints.rules.base import Rule

from . import CHECKPOINT_QUANT, QUANT_WRITTEN, SCOPE, src

SM = "device.sm"
DTYPE = BUILD_CONFIG.dtype
ALGO = QUANT_CONFIG.quant_algo
QUANT_DIR = "vllm/model_executor/layers/quantization"

# --quantization as written -> get_min_capability() of its config class (0.33.0)
METHOD_MIN_SM: dict[str, int] = {
    "fp8": 75,
    "modelopt": 80,
    "modelopt_fp4": 75,
    "modelopt_mxfp8": 80,
    "mxfp4": 80,
    "fbgemm_fp8": 80,
    "experts_int8": 80,
    "awq": 75,
    "auto_awq": 75,
    "awq_marlin": 75,
    "gptq": 60,
    "auto_gptq": 60,
    "gptq_marlin": 60,
    "compressed-tensors": 70,
    "moe_wna16": 70,
    "torchao": 75,
    "fp_quant": 100,
}
# the checkpoint's weights (quant_config.quant_algo, a fact of a pre-quantized
# checkpoint) -> the least minimum of the methods that load them (FP8 from an fp8 or a
# compressed-tensors config; NVFP4 from modelopt_fp4; MXFP4 from mxfp4; AWQ from awq)
ALGO_MIN_SM: dict[str, int] = {
    "FP8": 75,
    "FP8_BLOCK_SCALES": 75,
    "FP8_PER_CHANNEL_PER_TOKEN": 75,
    "NVFP4": 75,
    "MXFP4": 80,
    "W4A16_AWQ": 75,
}


def _below(table: dict[str, int], path: str) -> list:
    """For each minimum: the names asking for it need the device at or above it."""
    out = []
    for need in sorted(set(table.values())):
        names = sorted(n for n, sm in table.items() if sm == need)
        out.append(implies(one_of(path, names), ge(SM, need)))
    return out


RULES = [
    Rule(
        id="vllm.device.bfloat16-needs-ampere",
        text="--dtype bfloat16 needs compute capability 8.0 or higher (Ampere); below it vLLM"
        " refuses it (use --dtype half; --dtype auto falls back to float16 itself)",
        source=src("vllm/platforms/cuda.py", "CudaPlatform.check_if_supports_dtype"),
        scope=SCOPE,
        expr=implies(lt(SM, 80), ne(DTYPE, "bfloat16")),
        feasible={SM: 70, DTYPE: "float16"},
        infeasible={SM: 70, DTYPE: "bfloat16"},
    ),
    Rule(
        id="vllm.quant.method-min-capability",
        text="each --quantization method needs the GPU's compute capability at its"
        " get_min_capability() (fp8, modelopt_fp4, awq 7.5; modelopt, mxfp4, fbgemm_fp8,"
        " experts_int8 8.0; compressed-tensors 7.0; gptq 6.0; fp_quant 10.0)",
        source=src("vllm/config/vllm.py", "VllmConfig._get_quantization_config"),
        scope=SCOPE,
        expr=all_of(*_below(METHOD_MIN_SM, QUANT_WRITTEN)),
        feasible={SM: 80, QUANT_WRITTEN: "mxfp4"},
        infeasible={SM: 70, QUANT_WRITTEN: "mxfp4"},
    ),
    Rule(
        id="vllm.quant.checkpoint-min-capability",
        text="a pre-quantized checkpoint needs the compute capability of the method that"
        " loads it: FP8 (Marlin weight-only below 8.9), NVFP4 (FP4 Marlin below Blackwell)"
        " and AWQ 7.5, MXFP4 8.0",
        source=src(
            "vllm/config/vllm.py",
            f"VllmConfig._get_quantization_config; {QUANT_DIR}/fp8.py, modelopt.py,"
            " mxfp4.py, auto_awq.py get_min_capability",
        ),
        scope=SCOPE,
        expr=implies(
            ne(CHECKPOINT_QUANT, "none"),
            all_of(*_below(ALGO_MIN_SM, ALGO)),
        ),
        feasible={SM: 90, CHECKPOINT_QUANT: "unknown", ALGO: "NVFP4"},
        infeasible={SM: 70, CHECKPOINT_QUANT: "fp8", ALGO: "FP8"},
    ),
]
