"""vLLM 0.24.0's own form of checks that 0.33.0 changed (the 0.33 forms, in their topic
modules, are scoped from 0.33 on; these to the 0.24 line). Read side by side in the two
wheels (vllm-project/vllm v0.24.0 and v0.33.0):

- async scheduling: 0.24 refuses an explicit `async_scheduling` with a speculation method
  outside EAGLE / MTP / DFlash / ngram_gpu / draft_model, or with
  disable_padded_drafter_batch, on either model runner (`VllmConfig.__post_init__`); 0.33
  refuses them on the V1 model runner only, and adds pipeline parallelism to the list;
- EPLB: 0.24 needs TP x DP > 1; 0.33 counts the prefill-context ranks too;
- decode context parallelism: 0.24 divides the TP size by the DCP size whatever the
  prefill context parallel size; 0.33 does so only with PCP off and has its own rule with
  PCP on.
"""

from __future__ import annotations

from constraints.expr import any_of, eq, gt, implies, one_of
from constraints.rules.base import Rule

from . import (
    ASYNC,
    DCP,
    DP,
    EPLB,
    METHOD,
    PADDED_OFF,
    PARALLEL,
    TP,
    UNTIL_0_24,
    VLLM_CONFIG_PY,
    _dcp_divides_tp,
    src_0_24,
)

# vllm/config/speculative.py v0.24.0: EagleModelTypes (eagle, eagle3,
# extract_hidden_states, the MTP types, dflash), NgramGPUTypes (ngram_gpu), and
# draft_model; "none": no speculation (0.24 has no dspark)
ASYNC_METHODS_0_24 = (
    "none",
    "eagle",
    "eagle3",
    "extract_hidden_states",
    "mtp",
    "dflash",
    "ngram_gpu",
    "draft_model",
)
RULES = [
    Rule(
        id="vllm.runner.async-speculation-method-0.24",
        text="async scheduling (async_scheduling true) supports only EAGLE, EAGLE-3, MTP,"
        " DFlash, ngram_gpu, draft_model and extract_hidden_states speculation, on either"
        " model runner (vLLM 0.24)",
        source=src_0_24(VLLM_CONFIG_PY, "VllmConfig.__post_init__ (async scheduling)"),
        scope=UNTIL_0_24,
        expr=implies(eq(ASYNC, True), one_of(METHOD, ASYNC_METHODS_0_24)),
        feasible={ASYNC: True, METHOD: "eagle3"},
        infeasible={ASYNC: True, METHOD: "ngram"},
    ),
    Rule(
        id="vllm.runner.async-padded-drafter-batch-0.24",
        text="async scheduling is not compatible with disable_padded_drafter_batch, on either"
        " model runner (vLLM 0.24)",
        source=src_0_24(VLLM_CONFIG_PY, "VllmConfig.__post_init__ (async scheduling)"),
        scope=UNTIL_0_24,
        expr=implies(eq(ASYNC, True), eq(PADDED_OFF, False)),
        feasible={ASYNC: True, PADDED_OFF: False},
        infeasible={ASYNC: True, PADDED_OFF: True},
    ),
    Rule(
        id="vllm.parallel.eplb-needs-several-ranks-0.24",
        text="EPLB needs tensor or data parallelism (TP x DP > 1; prefill context parallelism"
        " does not count in vLLM 0.24)",
        source=src_0_24(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=UNTIL_0_24,
        expr=implies(eq(EPLB, True), any_of(gt(TP, 1), gt(DP, 1))),
        feasible={EPLB: True, TP: 2, DP: 1},
        infeasible={EPLB: True, TP: 1, DP: 1},
    ),
    Rule(
        id="vllm.parallel.dcp-divides-tp-0.24",
        text="tensor_parallel_size must be divisible by decode_context_parallel_size, whatever"
        " the prefill context parallel size (vLLM 0.24)",
        source=src_0_24(PARALLEL, "ParallelConfig._validate_parallel_config"),
        scope=UNTIL_0_24,
        expr=_dcp_divides_tp(),
        feasible={TP: 4, DCP: 2},
        infeasible={TP: 4, DCP: 3},
    ),
]
