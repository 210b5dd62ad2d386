"""Deciding a small set of requirements by trying values, without a solver call.

A drop reason's neighbourhood (`arbiter.explain.resolved`) is usually a handful of claims
and rules over a few options. When every option they read can be tried at a few
representative values, `satisfiable()` decides the set exactly by trying every
combination (a backtracking search that checks each item as soon as its options have
values): a drop reason's search skips the model of a neighbourhood shown feasible, takes
the reason of one shown to have a single minimal reason directly, and otherwise lets the
deletion pass of `Oracle.mus` skip every solver check whose answer would be "feasible"
(`satisfiable()` as its witness) as well as the check that confirms the solver's first
core (when `satisfiable()` says False).

Representative values: an option an item sets by equality (a conjunction of equalities
at its top) is tried at that value alone, since every combination satisfying that item
has it; a flag at both values; an enum at each member the items name plus one they do
not (None only where it is a member, as the model declares it); an integer read only by
equalities, value sets and comparisons with constants (facts count as constants) at the
points around each constant and its domain's ends, since every other value lies between
two of those points and makes every such atom come out as its neighbour does; a nullable
flag or integer also unset. A value tried is a real value of the option, so a
combination that holds proves the set feasible (the project's evaluation is the
semantics the solver's encoding follows, as `verify()` checks after each solve); when
none holds, it is infeasible. Anything else (a product, a sum of two options, a
fraction, too many combinations) is not decided, and the caller asks the solver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from constraints.domains import BoolDomain, EnumDomain, IntDomain
from constraints.expr import And, Cmp, Eq, Implies, Lin, Not, OneOf, Or
from constraints.schema import lookup

from ..capacity import equalities

MAX_COMBINATIONS = 512  # above this the solver check is the cheaper proof
MAX_INT_RANGE = 8  # an integer option is enumerated when its domain is at most this wide


@lru_cache(maxsize=4096)
def domain_values(path: str) -> tuple[Any, ...] | None:
    """Every value option `path` can take (None included where it may be unset), or None
    when its domain is too wide (or not discrete) to enumerate."""
    domain = lookup(path).domain
    if isinstance(domain, EnumDomain):
        # as the model has it: one value per member (None only where it is a member)
        return tuple(domain.values)
    if isinstance(domain, BoolDomain):
        values: tuple[Any, ...] = (False, True)
    elif isinstance(domain, IntDomain) and domain.hi - domain.lo < MAX_INT_RANGE:
        values = tuple(range(domain.lo, domain.hi + 1))
    else:
        return None
    return (*values, None) if domain.nullable else values


def _atoms(expr: Any, out: list[Any]) -> None:
    """The atoms (equalities, value sets, comparisons, constants) under `expr`."""
    if isinstance(expr, (And, Or)):
        for item in expr.items:
            _atoms(item, out)
    elif isinstance(expr, Not):
        _atoms(expr.item, out)
    elif isinstance(expr, Implies):
        _atoms(expr.condition, out)
        _atoms(expr.then, out)
    else:
        out.append(expr)


class Item:
    """An expression with what trying values needs of it, worked out once: the options
    (not facts) it reads, its atoms and the equalities at its top."""

    __slots__ = ("atoms", "expr", "pins", "reads")

    def __init__(self, expr: Any, reads: frozenset[str]):
        self.expr = expr
        self.reads = reads
        atoms: list[Any] = []
        _atoms(expr, atoms)
        self.atoms = tuple(atoms)
        self.pins = equalities(expr)


def _int_points(
    path: str, atoms: Sequence[Any], free: frozenset[str], values: Mapping[str, Any]
) -> set[int] | None:
    """The constants around which `path`'s atoms change (with their neighbours), or None
    when an atom reading it is not an equality, a value set or a comparison of it with
    constants."""
    points: set[int] = set()
    for atom in atoms:
        if isinstance(atom, Eq):
            if atom.value is not None:
                points.add(atom.value)
        elif isinstance(atom, OneOf):
            points.update(v for v in atom.values if v is not None)
        elif isinstance(atom, Cmp) and isinstance(atom.lhs, Lin) and isinstance(atom.rhs, Lin):
            diff = atom.lhs + atom.rhs.scale(-1)  # coef * path + rest (op) 0
            coef, rest = 0, diff.const
            for c, p in diff.terms:
                if p == path:
                    coef = c
                elif p in free:
                    return None  # a sum of two tried options
                else:
                    fact = values[p]
                    if fact is None:
                        break  # the atom is false whatever the option's value
                    rest += c * lookup(p).domain.encode(fact)
            else:
                if coef:
                    points.add(-rest // coef)  # the floor of the threshold
        else:
            return None
    return {q + d for q in points for d in (-1, 0, 1, 2)}


def _choices(
    path: str, atoms: Sequence[Any], free: frozenset[str], values: Mapping[str, Any]
) -> tuple[Any, ...] | None:
    """Representative values of `path` for `atoms` (the atoms that read it; see the
    module docstring)."""
    domain = lookup(path).domain
    if isinstance(domain, BoolDomain):
        return domain_values(path)
    if isinstance(domain, EnumDomain):
        named: dict[Any, None] = {}
        for atom in atoms:
            if isinstance(atom, Eq):
                named[atom.value] = None
            elif isinstance(atom, OneOf):
                named.update(dict.fromkeys(atom.values))
            else:
                return domain_values(path)
        chosen = [v for v in domain.values if v in named]
        chosen += [v for v in domain.values if v not in named][:1]
        return tuple(chosen)  # None only where it is a member, as in the model
    elif isinstance(domain, IntDomain):
        points = _int_points(path, atoms, free, values)
        if points is None:
            return domain_values(path)
        chosen = sorted({domain.lo, domain.hi} | {q for q in points if domain.lo <= q <= domain.hi})
    else:
        return None
    return (*chosen, None) if domain.nullable else tuple(chosen)


def satisfiable(
    items: Sequence[Item], values: Mapping[str, Any], scratch: dict[str, Any] | None = None
) -> bool | None:
    """Whether some values of the options the `items` read make every one of them hold,
    `values` giving every other path (facts included); None when those options cannot
    be tried in few combinations. `scratch`: a copy of `values` to try values in (left
    as it was found), so that a caller deciding many sets copies `values` once."""
    free = frozenset().union(*(item.reads for item in items))
    paths = sorted(free)
    pinned: dict[str, Any] = {}
    reading: dict[str, list[Any]] = {p: [] for p in paths}
    for item in items:
        pinned.update(item.pins)
        for atom in item.atoms:
            for p in atom.paths():
                if p in free:
                    reading[p].append(atom)
    choices = []
    size = 1
    for path in paths:
        found = (pinned[path],) if path in pinned else _choices(path, reading[path], free, values)
        if found is None:
            return None
        size *= len(found)
        if size > MAX_COMBINATIONS:
            return None
        choices.append(found)
    # each item is checked once the last of its options (in `paths` order) has a value
    depth = {p: i for i, p in enumerate(paths)}
    due: list[list[Any]] = [[] for _ in range(len(paths) + 1)]
    for item in items:
        due[1 + max((depth[p] for p in item.reads), default=-1)].append(item.expr)
    trial = dict(values) if scratch is None else scratch
    if not all(expr.evaluate(trial) for expr in due[0]):
        return False

    def search(i: int) -> bool:
        if i == len(paths):
            return True
        path, checks = paths[i], due[i + 1]
        for value in choices[i]:
            trial[path] = value
            if all(expr.evaluate(trial) for expr in checks) and search(i + 1):
                return True
        return False

    try:
        return search(0)
    finally:
        for path in paths:
            trial[path] = values[path]
