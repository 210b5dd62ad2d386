"""What TensorRT-LLM runs for the fields an input leaves open, in the common form
(`arbiter.dialects.open_defaults`): the table (`OPEN_DEFAULTS`) and the rows one input
leaves open (`open_defaults`).

- The MoE parallel sizes and the load balancer: left open, the engine derives them
  (`parallel_config.moe_*_parallel_size` 0 means "derive from tp and ep"; MoeConfig
  load_balancer None is off: tensorrt_llm/llmapi/llm_args.py, the 1.0 and 1.2 field lists).
  No solve may pick a value for them: facts of the run (setup, never blamed).
- The PyTorch backend's MoE backend: left open, the engine runs MoeConfig.backend's default
  (1.0: CUTLASS, 1.2: AUTO, the release's field list), never another one that would suit
  the model better: a conflict names it ("engine default moe_config.backend"), and
  setting moe_config.backend is the fix.
"""

from __future__ import annotations

from ...dialects.open_defaults import EngineDefault
from .fields import catalogue

LEFT_OPEN = "TensorRT-LLM defaults of the fields left open"
LLM_ARGS = "tensorrt_llm/llmapi/llm_args.py (field lists 1.0, 1.2)"
MOE_BACKEND = "moe_config.backend"

OPEN_DEFAULTS = (
    *(
        EngineDefault(key, f"parallel_config.{key}", 0, LLM_ARGS, LEFT_OPEN)
        for key in (
            "moe_expert_parallel_size",
            "moe_tensor_parallel_size",
            "moe_cluster_parallel_size",
        )
    ),
    EngineDefault(
        "moe_config.load_balancer", "moe_config.load_balancer", False, LLM_ARGS, LEFT_OPEN
    ),
    # the value is the release's (`moe_backend_default`); PyTorch backend only
    EngineDefault(
        MOE_BACKEND,
        MOE_BACKEND,
        None,
        "MoeConfig.backend default of the field list",
        f"engine default {MOE_BACKEND}",
        blame=True,
    ),
)


def moe_backend_default(release: str) -> str:
    """MoeConfig.backend's default in the release's field list."""
    return str(catalogue(release).fields("MoeConfig")["backend"].default)


def open_defaults(given: set[str], release: str, backend: str) -> list[EngineDefault]:
    """The rows of `OPEN_DEFAULTS` for the fields not in `given` (the LLM-API keys the
    input set, dotted), with the values of `release`; the MoE backend on the PyTorch
    backend only."""
    rows: list[EngineDefault] = []
    for row in OPEN_DEFAULTS:
        if row.field in given:
            continue
        if row.path == MOE_BACKEND:
            if backend != "pytorch":
                continue
            source = f"MoeConfig.backend default of the {release} field list"
            row = row.at(moe_backend_default(release), source)
        rows.append(row)
    return rows


__all__ = ["OPEN_DEFAULTS", "moe_backend_default", "open_defaults"]
