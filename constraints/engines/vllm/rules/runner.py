"""vLLM 0.33's rules on the V1 model runner."""

from __future__ import annotations

from constraints.expr import all_of, eq, implies, ne, one_of
from constraints.rules.base import Rule

from . import (
    ADAPTIVE,
    ASYNC,
    LM_HEAD_QUANT,
    METHOD,
    PADDED_OFF,
    PP,
    RUNNER_V1,
    SCOPE,
    SHARDED_SAMPLING,
    V1_ASYNC_METHODS,
    VLLM_CONFIG_PY,
    src,
)

RULES = [
    # vLLM runs its V1 model runner when the arguments ask for what V2 lacks
    # (model_runner_v1, derived by the dialect from VllmConfig.use_v2_model_runner); then
    # it refuses what only V2 serves, and an explicit async_scheduling V1 cannot run
    Rule(
        id="vllm.runner.v1-async-without-pp",
        text="on vLLM's V1 model runner, async scheduling (async_scheduling true) is not"
        " supported with pipeline parallelism",
        source=src(
            VLLM_CONFIG_PY,
            "VllmConfig.__post_init__ (async scheduling), _get_v1_model_runner_unsupported_features",
        ),
        scope=SCOPE,
        expr=implies(all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), eq(PP, 1)),
        feasible={RUNNER_V1: True, ASYNC: True, PP: 1},
        infeasible={RUNNER_V1: True, ASYNC: True, PP: 2},
    ),
    Rule(
        id="vllm.runner.v1-async-speculation-method",
        text="on vLLM's V1 model runner, async scheduling supports only EAGLE, EAGLE-3, MTP,"
        " DFlash, DSpark, ngram_gpu, draft_model and extract_hidden_states speculation (not"
        " ngram, suffix or custom_class)",
        source=src(VLLM_CONFIG_PY, "VllmConfig.__post_init__ (async scheduling)"),
        scope=SCOPE,
        expr=implies(
            all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), one_of(METHOD, V1_ASYNC_METHODS)
        ),
        feasible={RUNNER_V1: True, ASYNC: True, METHOD: "draft_model"},
        infeasible={RUNNER_V1: True, ASYNC: True, METHOD: "ngram"},
    ),
    Rule(
        id="vllm.runner.v1-async-padded-drafter-batch",
        text="on vLLM's V1 model runner, async scheduling is not supported with"
        " disable_padded_drafter_batch",
        source=src(VLLM_CONFIG_PY, "VllmConfig.__post_init__ (async scheduling)"),
        scope=SCOPE,
        expr=implies(all_of(eq(RUNNER_V1, True), eq(ASYNC, True)), eq(PADDED_OFF, False)),
        feasible={RUNNER_V1: True, ASYNC: True, PADDED_OFF: False},
        infeasible={RUNNER_V1: True, ASYNC: True, PADDED_OFF: True},
    ),
    Rule(
        id="vllm.runner.v1-no-dspark",
        text="DSpark speculative decoding runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG_PY, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), ne(METHOD, "dspark")),
        feasible={RUNNER_V1: False, METHOD: "dspark"},
        infeasible={RUNNER_V1: True, METHOD: "dspark"},
    ),
    Rule(
        id="vllm.runner.v1-no-adaptive-verification",
        text="adaptive draft verification runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG_PY, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(ADAPTIVE, False)),
        feasible={RUNNER_V1: False, ADAPTIVE: True},
        infeasible={RUNNER_V1: True, ADAPTIVE: True},
    ),
    Rule(
        id="vllm.runner.v1-no-draft-lm-head-quantization",
        text="draft lm_head quantization runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG_PY, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(LM_HEAD_QUANT, False)),
        feasible={RUNNER_V1: False, LM_HEAD_QUANT: True},
        infeasible={RUNNER_V1: True, LM_HEAD_QUANT: True},
    ),
    Rule(
        id="vllm.runner.v1-no-batch-sharded-sampling",
        text="batch-sharded sampling runs only on vLLM's V2 model runner",
        source=src(VLLM_CONFIG_PY, "VllmConfig._get_v1_model_runner_unsupported_features"),
        scope=SCOPE,
        expr=implies(eq(RUNNER_V1, True), eq(SHARDED_SAMPLING, False)),
        feasible={RUNNER_V1: False, SHARDED_SAMPLING: True},
        infeasible={RUNNER_V1: True, SHARDED_SAMPLING: True},
    ),
]
