"""Solve and explain claims for a front end: the built-in scenario, a claims file's own
`profile:`, and the share of a request's time a conflict explanation may take.

The command line (`arbiter solve|explain`) and the service (`POST /v1/arbitrate|explain`)
both go through here; `arbitrate()` and `explain()` stay the library's entry points.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..claims import load_claims
from ..errors import ConflictError
from ..explain import Explanation, Limits
from ..explain import explain as explain_claims
from ..resolution import Resolution
from ..solve import arbitrate

DEFAULT_SCENARIO = "server_h100.yaml"  # what `arbiter solve` solves without a file


@dataclass(frozen=True)
class Scenario:
    """Claims read from a file (or the built-in scenario), where they came from, and the
    `profile:` the file names beside its `claims:` (None when it names none)."""

    claims: list[Any]
    where: str
    profile: str | None


def _file_profile(text: str) -> str | None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None  # load_claims reports it
    profile = data.get("profile") if isinstance(data, dict) else None
    return str(profile) if profile is not None else None


def load_scenario(file: Path | None) -> Scenario:
    """Claims from `file`, or the built-in H100 serving scenario when it is None.
    Raises InvalidClaim naming the file and line at fault."""
    if file is None:
        text = resources.files("arbiter.scenarios").joinpath(DEFAULT_SCENARIO).read_text()
        claims = load_claims(text)
        return Scenario(claims, f"built-in scenario {DEFAULT_SCENARIO}", _file_profile(text))
    claims = load_claims(file)
    return Scenario(claims, str(file), _file_profile(file.read_text()))


@contextmanager
def conflict_budget(budget_s: float | None) -> Iterator[None]:
    """Give the conflict explanation of a ConflictError raised inside half of `budget_s`
    (it is searched when the payload first reads it)."""
    try:
        yield
    except ConflictError as exc:
        if budget_s is not None:
            exc.limits = Limits(time_budget_s=max(0.05, budget_s / 2))
        raise


def solve(
    claims: Sequence[Any],
    *,
    rules: Sequence[str] | None = None,
    time_limit_s: float | None = None,
    defaults: dict[str, Any] | None = None,
    profile: str | None = None,
    bounded_conflict: bool = False,
) -> Resolution:
    """`arbitrate()`; with `bounded_conflict`, a conflict's explanation gets half of the
    time limit (the service's budget) rather than the library's default."""
    with conflict_budget(time_limit_s if bounded_conflict else None):
        return arbitrate(
            claims, rules=rules, time_limit_s=time_limit_s, defaults=defaults, profile=profile
        )


def explain(
    claims: Sequence[Any],
    *,
    limits: Limits,
    rules: Sequence[str] | None = None,
    defaults: dict[str, Any] | None = None,
    profile: str | None = None,
) -> Explanation:
    """Every conflict, verified fix and dropped claim, within `limits`."""
    return explain_claims(claims, rules=rules, defaults=defaults, limits=limits, profile=profile)
