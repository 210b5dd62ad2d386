"""SGLang's rules on the parallel layout that apply the shared arithmetic of
`constraints.shared.rules.memory` to SGLang's own options (`sglang_config.dp_size`)."""

from __future__ import annotations

from constraints.expr import all_of
from constraints.rules.base import Rule, Scope, Source
from constraints.shared.rules.memory import COUNT, NODES, replicas_fit

from ..schema import SGLANG_CONFIG
from .sglang import PP, TP

DP = SGLANG_CONFIG.dp_size

RULES = [
    Rule(
        id="machine.sglang-dp-replicas-fit-devices",
        text="SGLang: dp_size data-parallel replicas of tp_size x pp_size GPUs each must fit the GPUs there are (tp x pp x dp <= device.count x device.nodes); attention DP (attn_dp_size) runs inside the tp ranks and adds none",
        source=Source(
            "SGLang",
            "python/sglang/srt/managers/data_parallel_controller.py"
            " DataParallelController.launch_dp_schedulers (each replica starts tp_size x"
            " pp_size x gpu_id_step GPUs after the last); runtime_context.py num_dp_ranks_of"
            " (dp_size x attn_dp_size, one of them 1); launch_dp_attention_schedulers"
            " (one tp group for attention DP)",
            "v0.5.23",
            "0.5.23",
        ),
        scope=Scope(engine="sglang", since="0.5"),
        expr=all_of(*replicas_fit(DP)),
        feasible={COUNT: 8, NODES: 1, TP: 2, PP: 2, DP: 2},
        infeasible={COUNT: 4, NODES: 1, TP: 2, PP: 1, DP: 4},
    ),
]
