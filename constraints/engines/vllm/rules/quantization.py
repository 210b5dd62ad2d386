"""vLLM 0.33's rules on quantization methods and checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.expr import Expr, all_of, any_of, eq, ge, implies, ne, one_of, ref
from constraints.paths import MODEL
from constraints.rules.base import Computed, Rule

from . import (
    BOTH,
    CHECKPOINT_ACCEPTS,
    CHECKPOINT_QUANT,
    DP,
    EP,
    ONLINE_QUANT,
    PCP,
    QUANT_WRITTEN,
    SCOPE,
    TP,
    _fact,
    both,
    src,
)

BLOCK_N, BLOCK_K = MODEL.weight_block_n, MODEL.weight_block_k
MOE_INTER = MODEL.moe_intermediate_size
EXPERTS = MODEL.num_experts
MAX_MOE_TP = 64  # tp x dp x pcp ranks the schema's parallel bounds let one MoE group have


def _moe_shards_whole_blocks(facts: Mapping[str, Any]) -> Expr:
    """Without expert parallelism vLLM splits every expert's intermediate size over the
    tp x dp x pcp ranks (FusedMoEParallelConfig.make flattens them into the MoE tensor
    group, vllm/model_executor/layers/fused_moe/config.py); a block-scaled FP8 expert's
    share must then be whole blocks: a multiple of block_n, and of block_k when tp > 1
    (validate_fp8_block_shape_moe, quantization/utils/fp8_utils.py, 0.33.0). The
    allowed MoE group sizes follow from the checkpoint's facts."""
    n, k = int(_fact(facts, BLOCK_N)), int(_fact(facts, BLOCK_K))
    inter, experts = int(_fact(facts, MOE_INTER)), int(_fact(facts, EXPERTS))
    if n <= 0 or inter <= 0 or experts <= 1:
        return ge(TP, 1)  # not a block-scaled FP8 MoE checkpoint: no limit
    tp_dp = ref(TP) * ref(DP)

    def group_is(m: int) -> Expr:  # tp x dp x pcp == m (a product compares two terms)
        return any_of(
            *(all_of(eq(PCP, p), eq(tp_dp, m // p)) for p in range(1, m + 1) if m % p == 0)
        )

    def fits(m: int, tp_above_one: bool) -> bool:
        share = inter // m
        return inter % m == 0 and share % n == 0 and (not tp_above_one or share % k == 0)

    one_tp = [m for m in range(1, MAX_MOE_TP + 1) if fits(m, False)]
    many_tp = [m for m in range(1, MAX_MOE_TP + 1) if fits(m, True)]
    return implies(
        eq(EP, False),
        all_of(
            implies(eq(TP, 1), any_of(*map(group_is, one_tp)) if one_tp else eq(EP, True)),
            implies(ne(TP, 1), any_of(*map(group_is, many_tp)) if many_tp else eq(EP, True)),
        ),
    )


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
        source=both(
            "vllm/model_executor/model_loader/weight_utils.py",
            "get_quant_config (ModelConfig._verify_quantization keeps the argument)",
        ),
        scope=BOTH,  # the same check in 0.24.0 (its oracle records refuse alike)
        expr=implies(
            all_of(eq(CHECKPOINT_QUANT, "none"), ne(QUANT_WRITTEN, "none")),
            one_of(QUANT_WRITTEN, ONLINE_QUANT),
        ),
        feasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "fp8"},
        infeasible={CHECKPOINT_QUANT: "none", QUANT_WRITTEN: "awq"},
    ),
    Rule(
        id="vllm.quant.block-fp8-moe-shards-whole-blocks",
        text="without --enable-expert-parallel, a block-scaled FP8 MoE checkpoint's"
        " moe_intermediate_size / (tp x dp x pcp) must be a multiple of the weight block"
        " (block_n; block_k too when tp > 1): 'The output_size of gate's and up's weight"
        " ... is not divisible by weight quantization block_n'",
        source=src(
            "vllm/model_executor/layers/quantization/utils/fp8_utils.py",
            "validate_fp8_block_shape_moe (called by Fp8MoEMethod.create_weights)",
        ),
        scope=SCOPE,
        expr=Computed(
            "the MoE shards are whole FP8 weight blocks",
            _moe_shards_whole_blocks,
            frozenset({TP, DP, PCP, EP, BLOCK_N, BLOCK_K, MOE_INTER, EXPERTS}),
        ),
        feasible={
            BLOCK_N: 128,
            BLOCK_K: 128,
            MOE_INTER: 1536,
            EXPERTS: 128,
            TP: 4,
            DP: 1,
            PCP: 1,
            EP: False,
        },
        infeasible={
            BLOCK_N: 128,
            BLOCK_K: 128,
            MOE_INTER: 1536,
            EXPERTS: 128,
            TP: 8,
            DP: 1,
            PCP: 1,
            EP: False,
        },
    ),
]
