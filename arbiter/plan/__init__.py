"""SLA planning: the fastest rule-valid configuration that meets TTFT and TPOT targets.

import arbiter
report = arbiter.plan("Qwen/Qwen3-32B", "8xH200", isl=4000, osl=1000, ttft=2000, tpot=40)
report.to_json()["engines"][0]["pick"]

The performance oracle is AIConfigurator's estimator (`aiconfigurator-core`, the optional
extra `plan`), imported on first use; arbiter's rules and memory model decide what is
admissible (see `planner`, `table`, `solve`, `relax`).
"""

from __future__ import annotations

from ..callable_module import make_callable
from .errors import OracleUnavailable, PlanExtraMissing, PlanInputError
from .planner import plan, plan_request
from .request import Lattice, PlanRequest
from .result import EnginePlan, PlanReport

__all__ = [
    "EnginePlan",
    "Lattice",
    "OracleUnavailable",
    "PlanExtraMissing",
    "PlanInputError",
    "PlanReport",
    "PlanRequest",
    "plan",
    "plan_request",
]

make_callable(__name__, plan)  # `arbiter.plan(...)` runs it (callable_module.py)
