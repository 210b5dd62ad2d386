"""Options the hard claims fix: constants in the solve's model.

When solving, every functional and setup claim holds, so an option one of them sets by
equality (a top-level `path == value`, alone or in a conjunction) takes that value in every
configuration the solve may return. `arbiter.compile` then treats it as it treats a fact:
a rule reading only facts and fixed options evaluates to true or false in Python before
anything reaches CP-SAT, and a memory rule's cases for the precisions and parallel sizes
the claims exclude fold away instead of becoming constraints. The answer is the same:
the model admits exactly the configurations it admitted before, and the option's change
and distance terms, constant there, leave the order of the optimum unchanged.

Only the solve's model fixes options: the explanations take claims away (a conflict or a
drop reason is a subset of them), so their models keep every option a variable.

The rule base is compiled (and cached) per set of fixed values, so only options with at
most `MAX_VALUES` values are fixed: precisions, flags, modes, parallel sizes, the values
one deployment's requests repeat. Numeric sizes (batch, sequence lengths, token budgets,
memory fractions) stay variables, so that a request with a new size reuses the cached base
instead of compiling one of its own (about 10 ms).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from constraints.errors import SchemaError
from constraints.expr import And, Eq, Expr
from constraints.schema import lookup

from .claims import AnyClaim, FuncClaim, SetupClaim

MAX_VALUES = 1024  # the most values an option may have to be fixed


def equalities(expr: Expr) -> list[tuple[str, Any]]:
    """The (path, value) pairs `expr` requires at its top level."""
    if isinstance(expr, Eq):
        return [(expr.path, expr.value)]
    if isinstance(expr, And):
        return [pair for item in expr.items for pair in equalities(item)]
    return []


def fixed_options(claims: Iterable[AnyClaim], facts: Mapping[str, Any]) -> dict[str, Any]:
    """{path: value} of every option (not fact, at most `MAX_VALUES` values) that the func
    and setup claims set by equality. An option two claims set to different values, set to None, or to a value
    the solver would not read back as it is (encoded and decoded) is left out: the
    solver's model keeps it a variable and finds a conflict as before."""
    seen: dict[str, list[Any]] = {}
    for claim in claims:
        if not isinstance(claim, (FuncClaim, SetupClaim)):
            continue
        for path, value in equalities(claim.expr):
            if path in facts or value is None:
                continue
            try:
                spec = lookup(path)
                lo, hi = spec.domain.bounds()
                small = hi - lo < MAX_VALUES and spec.domain.kind != "fraction"
                read_back = (
                    spec.domain.decode(spec.domain.encode(value))
                    if small and not spec.fact
                    else _NEVER
                )
            except (SchemaError, ValueError, TypeError):
                read_back = _NEVER  # no value the solver reads back: keep it a variable
            if read_back != value:
                read_back = _NEVER
            seen.setdefault(path, []).append(read_back)
    return {
        path: values[0]
        for path, values in sorted(seen.items())
        if values[0] is not _NEVER and all(v == values[0] for v in values)
    }


_NEVER = object()
