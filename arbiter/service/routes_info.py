"""The routes that describe: GET /v1/schema and /v1/rules, the same rows as
`arbiter schema --json` and `arbiter rules --json` (`arbiter.application.listing`), and
GET /v1/limits, the input limits this instance enforces before compiling."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from constraints.errors import SchemaError
from constraints.limits import LIMITS

from ..application.listing import option_rows, rule_rows
from .models import LimitOut, OptionOut, RuleOut
from .responses import exception_response
from .state import State

router = APIRouter()


@router.get(
    "/v1/schema",
    response_model=list[OptionOut],
    summary="Options with domains, defaults and descriptions",
)
async def schema(
    path: str | None = Query(None, description="A dotted path or a section name"),
) -> Any:
    try:
        return option_rows(path)
    except SchemaError as exc:  # an unknown path or section: 404 with suggestions
        return exception_response(exc)


@router.get("/v1/rules", response_model=list[RuleOut], summary="The shipped rules")
async def rules(
    grep: str | None = Query(
        None, description="Case-insensitive filter on id, text, source and scope"
    ),
    profile: str | None = Query(None, description="Only the rules in scope of this profile"),
) -> Any:
    try:  # hard and default rules, as `arbiter rules` lists them
        return rule_rows(profile, grep)
    except SchemaError as exc:  # an unknown profile: 400 naming the known ones
        return exception_response(exc)


@router.get(
    "/v1/limits",
    response_model=list[LimitOut],
    summary="The input limits, each refused before compiling with its name",
)
async def limits(state: State) -> Any:
    """Every limit of `constraints.limits`, with this instance's own body size and claim
    count (`arbiter serve --max-body-bytes / --max-claims`), and its time limits."""
    settings = state.settings
    own = {"MAX_BODY_BYTES": settings.max_body_bytes, "MAX_CLAIMS": settings.max_claims}
    rows = [{**limit.to_json(), "value": own.get(limit.name, limit.value)} for limit in LIMITS]
    rows.append(
        {
            "name": "MAX_TIME_LIMIT_S",
            "value": settings.max_time_limit_s,
            "unit": "seconds",
            "bounds": "a request's time limit (larger ones are capped, not refused)",
            "http_status": 408,
        }
    )
    return rows
