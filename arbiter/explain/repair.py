"""Small repairs of a configuration, for the drop reasons' feasibility witness.

`suggest(expr, values, keep)` proposes option values that make `expr` hold where it does
not: an equality or a value set is set, a flag's negation flipped, a comparison over one
integer option moved to its nearest bound, a conjunction repaired item by item, a
disjunction or implication through the first part that can be repaired. It is only a
proposal: the witness (`arbiter.explain.resolved.Witness`) evaluates every item again in
the repaired configuration and trusts nothing else, so a repair can fail but never
prove a wrong answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from constraints.domains import BoolDomain, EnumDomain, IntDomain
from constraints.errors import SchemaError
from constraints.expr import And, Cmp, Eq, Expr, Implies, Lin, Not, OneOf, Or
from constraints.schema import lookup

Changes = dict[str, Any]


def suggest(expr: Expr, values: Mapping[str, Any], keep: Collection[str]) -> Changes | None:
    """Option values (none of the paths in `keep`) under which `expr` holds, given
    `values` for the rest; {} when it holds already, None when no repair is found."""
    if expr.evaluate(values):
        return {}
    if isinstance(expr, Eq):
        return None if expr.path in keep else {expr.path: expr.value}
    if isinstance(expr, OneOf):
        return None if expr.path in keep else {expr.path: expr.values[0]}
    if isinstance(expr, Not) and isinstance(expr.item, Eq):
        return _other_value(expr.item, keep)
    if isinstance(expr, And):
        merged: Changes = {}
        for item in expr.items:
            found = suggest(item, {**values, **merged}, keep)
            if found is None:
                return None
            merged.update(found)
        return merged
    if isinstance(expr, Or):
        for item in expr.items:
            found = suggest(item, values, keep)
            if found is not None:
                return found
        return None
    if isinstance(expr, Implies):
        return suggest(expr.then, values, keep)
    if isinstance(expr, Cmp):
        return _bound(expr, values, keep)
    return None


def _other_value(eq: Eq, keep: Collection[str]) -> Changes | None:
    """A value of `eq`'s option other than its value (a flag flipped, another enum value)."""
    if eq.path in keep:
        return None
    domain = lookup(eq.path).domain
    if isinstance(domain, BoolDomain) and eq.value is not None:
        return {eq.path: not eq.value}
    if isinstance(domain, EnumDomain):
        for value in domain.values:
            if value != eq.value:
                return {eq.path: value}
    return None


def _bound(cmp: Cmp, values: Mapping[str, Any], keep: Collection[str]) -> Changes | None:
    """`cmp` over linear sums with one integer option not in `keep` moved: that option
    at the nearest value that satisfies it."""
    if not isinstance(cmp.lhs, Lin) or not isinstance(cmp.rhs, Lin):
        return None
    diff = cmp.lhs + cmp.rhs.scale(-1)  # diff op 0
    free = [(c, p) for c, p in diff.terms if p not in keep]
    if len(free) != 1:
        return None
    coef, path = free[0]
    domain = lookup(path).domain
    if not isinstance(domain, IntDomain):
        return None
    rest = diff.const
    for c, p in diff.terms:
        if p != path:
            v = values[p]
            if v is None:
                return None
            rest += c * lookup(p).domain.encode(v)
    # coef * x + rest op 0, with op made non-strict on the integers
    op, bound = cmp.op, -rest
    if op in (">", "<"):
        bound += 1 if op == ">" else -1
        op += "="
    if op == "==":
        if bound % coef:
            return None
        x = bound // coef
    elif op == "!=":
        current = values[path]
        x = (current if current is not None else domain.lo) + 1
    elif (op == ">=") == (coef > 0):  # x >= bound / coef: its ceiling
        x = -(-bound // coef)
    else:  # x <= bound / coef: its floor
        x = bound // coef
    try:
        return {path: domain.check(x, path)}
    except SchemaError:
        return None
