"""POST /v1/plan: the fastest rule-valid configuration that meets an SLA, the same JSON as
`arbiter plan --format json` (`arbiter.plan.PlanReport.to_json`).

A plan prices thousands of points with the oracle and takes seconds to minutes, so it runs
in a thread, off the event loop. Without the oracle extra the answer is 501 with the install
line; bad input is 422 naming the field.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..errors import ArbiterError
from .responses import exception_response

router = APIRouter()


class PlanIn(BaseModel):
    """A plan request; times in ms, as `arbiter plan`'s flags."""

    model: str = Field(description="A Hugging Face ID the oracle bundles, or a folder")
    device: str = Field(description="GPUs, e.g. 8xH200")
    isl: int
    osl: int
    ttft: float = Field(description="TTFT target, ms")
    tpot: float = Field(description="TPOT target, ms")
    engine: str = "trtllm"
    kv_dtypes: list[str] = Field(default_factory=lambda: ["auto"])
    max_batch: int = 512
    exact_batch: int = 16
    budget_step: int = 512
    refine_step: int = Field(
        128, ge=0, description="Budget step of the denser second lattice; 0: none"
    )
    max_pp: int = 2
    gpus_per_node: int = 8
    min_tokens_per_user: float | None = None
    runners_up: int = Field(3, ge=0, le=10)
    nextn: int = Field(0, ge=0, le=8, description="MTP draft tokens a step, searched 0..nextn")
    accept_rate: float | None = Field(None, description="Acceptance of each draft token, 0..1")
    nextn_accept: float | None = Field(None, description="Accepted draft tokens a step at nextn")


def _plan(body: PlanIn) -> dict[str, Any]:
    # the planner, its oracle and the solver load only when a plan is asked for
    from ..plan import Lattice, plan

    report = plan(
        body.model,
        body.device,
        body.isl,
        body.osl,
        body.ttft,
        body.tpot,
        body.engine,
        gpus_per_node=body.gpus_per_node,
        min_tokens_per_user=body.min_tokens_per_user,
        nextn=body.nextn,
        accept_rate=body.accept_rate,
        nextn_accept=body.nextn_accept,
        lattice=Lattice(
            max_batch=body.max_batch,
            exact_batch=body.exact_batch,
            budget_step=body.budget_step,
            refine_step=body.refine_step or None,
            max_pp=body.max_pp,
            kv_dtypes=tuple(body.kv_dtypes),
        ),
        runners_up=body.runners_up,
    )
    return report.to_json()


@router.post("/v1/plan", summary="The fastest rule-valid configuration that meets an SLA")
async def plan_route(body: PlanIn) -> Any:
    try:
        return await run_in_threadpool(_plan, body)
    except ArbiterError as exc:
        return exception_response(exc)
