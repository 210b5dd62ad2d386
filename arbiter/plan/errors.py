"""Errors of `arbiter plan`: the oracle's extra missing, bad plan input, an oracle with no
answer. Each carries `exit_code`, `http_status` and `code` like every arbiter error."""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import ArbiterError

INSTALL_HINT = 'pip install "arbiter-llm[plan]"  (or, from a checkout: pip install ".[plan]")'


class PlanExtraMissing(ArbiterError):
    """The performance oracle (`aiconfigurator-core`) is not installed."""

    exit_code: ClassVar[int] = 2
    http_status: ClassVar[int] = 501
    code: ClassVar[str] = "plan_extra_missing"

    def __init__(self, missing: str):
        super().__init__(missing)
        self.missing = missing

    def __str__(self) -> str:
        return (
            f"arbiter plan needs its performance oracle ({self.missing} is not installed);"
            f" install it with: {INSTALL_HINT}"
        )


class PlanInputError(ArbiterError):
    """A plan request that names something the planner cannot use (a field, its value and
    what is allowed)."""

    code: ClassVar[str] = "invalid_plan"

    def __init__(self, field: str, value: Any, allowed: str):
        super().__init__(field)
        self.field = field
        self.value = value
        self.allowed = allowed

    def __str__(self) -> str:
        return f"plan: {self.field} = {self.value!r} is not usable; allowed: {self.allowed}"


class OracleUnavailable(ArbiterError):
    """The oracle has no data for the request (no database for the GPU and engine, a model
    outside its support matrix); `detail` is its own message, shortened."""

    code: ClassVar[str] = "oracle_unavailable"

    def __init__(self, what: str, detail: str):
        super().__init__(what)
        self.what = what
        self.detail = detail

    def __str__(self) -> str:
        first = self.detail.strip().splitlines()[0] if self.detail.strip() else "no detail"
        return f"plan: the performance oracle cannot price {self.what}: {first[:300]}"
