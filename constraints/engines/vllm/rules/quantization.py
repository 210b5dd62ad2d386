"""vLLM 0.33's rules on quantization methods and checkpoints."""

from __future__ import annotations

from constraints.expr import all_of, eq, implies, ne, one_of
from constraints.rules.base import Rule

from . import CHECKPOINT_ACCEPTS, CHECKPOINT_QUANT, ONLINE_QUANT, QUANT_WRITTEN, SCOPE, src

RULES = [
    Rule(
        id="vllm.quant.matches-checkpoint",
        text="--quantization must be the checkpoint's quant_method or a method that overrides"
        " it (gptq: gptq, auto_gptq, gptq_marlin, moe_wna16; awq: awq, auto_awq,"
        " awq_marlin, moe_wna16; any: humming)",
        source=src("vllm/config/model.py", "ModelConfig._verify_quantization"),
        scope=SCOPE,
        expr=all_of(
            *(
                implies(
                    all_of(eq(CHECKPOINT_QUANT, ckpt), ne(QUANT_WRITTEN, "none")),
                    one_of(QUANT_WRITTEN, accepts),
                )
                for ckpt, accepts in CHECKPOINT_ACCEPTS.items()
            )
        ),
        feasible={CHECKPOINT_QUANT: "gptq", QUANT_WRITTEN: "gptq_marlin"},
        infeasible={CHECKPOINT_QUANT: "fp8", QUANT_WRITTEN: "gptq"},
    ),
    Rule(
        id="vllm.quant.offline-needs-checkpoint-config",
        text="on a checkpoint without a quantization_config, --quantization must be a method"
        " vLLM applies when loading (fp8, the online fp8/int8/nvfp4/mxfp8 shorthands,"
        " experts_int8, torchao, inc)",
        source=src(
            "vllm/model_executor/model_loader/weight_utils.py",
            "get_quant_config (ModelConfig._verify_quantization keeps the argument)",
        ),
        scope=SCOPE,
        expr=implies(
            all_of(eq(CHECKPOINT_QUANT, "none"), ne(QUANT_WRITTEN, "none")),
            one_of(QUANT_WRITTEN, ONLINE_QUANT),
        ),
        feasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "fp8"},
        infeasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "awq"},
    ),
]
