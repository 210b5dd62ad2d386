"""The routes that describe: GET /v1/schema and /v1/rules, the same rows as
`arbiter schema --json` and `arbiter rules --json` (`arbiter.application.listing`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from constraints.errors import SchemaError

from ..application.listing import option_rows, rule_rows
from .models import OptionOut, RuleOut
from .responses import exception_response

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
