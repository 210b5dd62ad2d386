"""A proof that a small set of requirements cannot hold together, without a solver call.

A drop reason's deletion pass (`Oracle.mus`) confirms the solver's first core with one more
check before trusting it. When the core's items read only a few options of small finite
domains (flags, enums, short integer ranges), trying every combination of their values
in Python is cheaper than that check: if no combination satisfies every item, the core
is infeasible on any model of those items (a model only narrows the domains tried here).
An option an item sets by equality (a conjunction of equalities at its top) is tried at
that value alone, since every combination satisfying that item has it. `refutes()`
answers True only for such a proof; anything it cannot enumerate, or any
combination that holds, gives False and the caller runs the solver check as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from constraints.domains import BoolDomain, EnumDomain, IntDomain
from constraints.schema import lookup

from ..capacity import equalities

MAX_COMBINATIONS = 64  # above this the solver check is the cheaper proof
MAX_INT_RANGE = 8  # an integer option is enumerated when its domain is at most this wide


@lru_cache(maxsize=4096)
def domain_values(path: str) -> tuple[Any, ...] | None:
    """Every value option `path` can take (None included where it may be unset), or None
    when its domain is too wide (or not discrete) to enumerate."""
    domain = lookup(path).domain
    if isinstance(domain, BoolDomain):
        values: tuple[Any, ...] = (False, True)
    elif isinstance(domain, EnumDomain):
        values = tuple(domain.values)
    elif isinstance(domain, IntDomain) and domain.hi - domain.lo < MAX_INT_RANGE:
        values = tuple(range(domain.lo, domain.hi + 1))
    else:
        return None
    return (*values, None) if domain.nullable else values


def refutes(
    exprs: Iterable[Any], reads: Iterable[frozenset[str]], values: Mapping[str, Any]
) -> bool:
    """True when no values of the options in `reads` (the options, not facts, that
    `exprs` read) make every expression of `exprs` hold; `values` gives every other path
    (facts included). False when some combination holds or the options are too many."""
    items = list(exprs)
    paths = sorted(frozenset().union(*reads))
    pinned: dict[str, Any] = {}
    for expr in items:
        pinned.update(equalities(expr))
    choices = []
    size = 1
    for path in paths:
        found = (pinned[path],) if path in pinned else domain_values(path)
        if found is None:
            return False
        size *= len(found)
        if size > MAX_COMBINATIONS:
            return False
        choices.append(found)
    trial = dict(values)
    for combination in itertools.product(*choices):
        trial.update(zip(paths, combination, strict=True))
        if all(expr.evaluate(trial) for expr in items):
            return False
    return True
