"""Requirement and rule expressions, evaluable in Python and serialisable to JSON.

Boolean expressions (`Expr`): `Eq(path, value)`, `OneOf(path, values)`, `Cmp(lhs, op, rhs)`
over numeric terms, and the connectives `And`, `Or`, `Not`, `Implies`, plus `Const`.
Numeric terms (`Term`): `Lin` (a linear sum with integer coefficients over option paths plus
a constant) and `Prod` (`scale * (a * b) + offset` for two linear sums `a` and `b`, which
CP-SAT handles with one multiplication constraint).

Constructors validate paths and values against the schema, so a malformed expression fails
where it is written. Build them with the functions at the bottom: `eq`, `ne`, `ge`, `le`,
`gt`, `lt`, `one_of`, `all_of`, `any_of`, `not_`, `implies`, `ref`, `lin`. Called with a
single argument, `ge`, `le`, `ne`, `one_of` and `eq` return an unbound `Pred` that a claim
binds to a path: `{"build_config.max_num_tokens": ge(4096)}`.

Semantics of unset (None) nullable options: `Eq(path, None)` holds when the option is
unset; a comparison that reads an unset option is false. Fractions appear in sums as their
fixed-point integer (thousandths); compared with a plain number they read naturally.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .domains import EnumDomain, FractionDomain
from .edge import INT_LIMIT, MAX_EXPR_DEPTH, EdgeError, check_count
from .errors import ExpressionError
from .schema import lookup

_MISSING: Any = object()
OPS = {">=": "ge", "<=": "le", ">": "gt", "<": "lt", "==": "eq", "!=": "ne"}
_OP_NAMES = {v: k for k, v in OPS.items()}


# --------------------------------------------------------------------------- terms
class Term:
    """A numeric term over options."""

    def paths(self) -> frozenset[str]:
        """The option and fact paths this reads (computed once; expressions are immutable)."""
        found = self.__dict__.get("_paths_memo")
        if found is None:
            found = self._paths()
            self.__dict__["_paths_memo"] = found
        return found

    def _paths(self) -> frozenset[str]:
        raise NotImplementedError

    def magnitude(self) -> int:
        raise NotImplementedError

    def value(self, values: Mapping[str, Any]) -> int | None:
        raise NotImplementedError

    def __add__(self, other: Any) -> Lin:
        return _lin(self) + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Lin:
        return _lin(self) + (-1) * _lin(_term(other))

    def __rsub__(self, other: Any) -> Lin:
        return _lin(_term(other)) + (-1) * _lin(self)

    def __mul__(self, other: Any) -> Term:
        if isinstance(other, int) and not isinstance(other, bool):
            return _lin(self).scale(other)
        return Prod(_lin(self), _lin(_term(other)))

    __rmul__ = __mul__


@dataclass(frozen=True)
class Lin(Term):
    """sum(coef * option) + const, with terms sorted by path."""

    terms: tuple[tuple[int, str], ...] = ()
    const: int = 0

    def __post_init__(self) -> None:
        for coef, path in self.terms:
            spec = lookup(path)
            if isinstance(spec.domain, EnumDomain):
                raise ExpressionError(f"enum option {path} cannot appear in a sum")
            if not isinstance(coef, int) or isinstance(coef, bool):
                raise ExpressionError(f"coefficient of {path} must be an int", coef)
        if not isinstance(self.const, int) or isinstance(self.const, bool):
            raise ExpressionError("the constant of a sum must be an int", self.const)
        _within_limit(self.magnitude(), self)

    def magnitude(self) -> int:
        """The largest |value| the sum can take over the option domains."""
        found = self.__dict__.get("_magnitude_memo")
        if found is None:
            found = abs(self.const) + sum(
                abs(c) * max(abs(b) for b in lookup(p).domain.bounds()) for c, p in self.terms
            )
            self.__dict__["_magnitude_memo"] = found
        return found

    def _paths(self) -> frozenset[str]:
        return frozenset(p for _, p in self.terms)

    def value(self, values: Mapping[str, Any]) -> int | None:
        encoders = self.__dict__.get("_encoders_memo")
        if encoders is None:  # each term's domain encoder, looked up once
            encoders = tuple((c, p, lookup(p).domain.encode) for c, p in self.terms)
            self.__dict__["_encoders_memo"] = encoders
        total = self.const
        for coef, path, encode in encoders:
            v = values[path]
            if v is None:
                return None
            total += coef * encode(v)
        return total

    def __add__(self, other: Any) -> Lin:
        other = _term(other)
        if isinstance(other, Prod):
            raise ExpressionError("a product can only be compared, not added to")
        merged: dict[str, int] = {}
        for coef, path in self.terms + other.terms:
            merged[path] = merged.get(path, 0) + coef
        return Lin(
            tuple(sorted(((c, p) for p, c in merged.items() if c), key=lambda t: t[1])),
            self.const + other.const,
        )

    __radd__ = __add__

    def scale(self, k: int) -> Lin:
        return Lin(tuple((c * k, p) for c, p in self.terms if c * k), self.const * k)

    def single_path(self) -> str | None:
        if len(self.terms) == 1 and self.terms[0][0] == 1 and self.const == 0:
            return self.terms[0][1]
        return None

    def __str__(self) -> str:
        parts: list[str] = []
        for coef, path in self.terms:
            sign = "-" if coef < 0 else "+"
            body = path if abs(coef) == 1 else f"{abs(coef)} * {path}"
            parts.append(f"{sign} {body}")
        if self.const or not parts:
            parts.append(f"{'-' if self.const < 0 else '+'} {abs(self.const)}")
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def to_json(self) -> Any:
        if not self.terms:
            return self.const
        if self.single_path():
            return self.terms[0][1]
        return {"sum": [[c, p] for c, p in self.terms], "const": self.const}


@dataclass(frozen=True)
class Prod(Term):
    """``scale * (a * b) + offset``: the product of two linear sums, scaled and shifted by
    integer constants (so a comparison can weigh it and add a constant)."""

    a: Lin
    b: Lin
    scale: int = 1
    offset: int = 0

    def __post_init__(self) -> None:
        for name in ("scale", "offset"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ExpressionError(f"a product's {name} must be an int", value)
        if self.scale == 0:
            raise ExpressionError("a product's scale must not be 0", self.scale)
        _within_limit(self.magnitude(), self)

    def magnitude(self) -> int:
        """The largest |value| the product can take over the option domains."""
        return abs(self.scale) * self.a.magnitude() * self.b.magnitude() + abs(self.offset)

    def _paths(self) -> frozenset[str]:
        return self.a.paths() | self.b.paths()

    def value(self, values: Mapping[str, Any]) -> int | None:
        x, y = self.a.value(values), self.b.value(values)
        return None if x is None or y is None else self.scale * x * y + self.offset

    def __str__(self) -> str:
        def wrap(t: Lin) -> str:
            return str(t) if len(t.terms) + (1 if t.const else 0) <= 1 else f"({t})"

        return self.decorate(f"{wrap(self.a)} * {wrap(self.b)}")

    def decorate(self, product: str) -> str:
        """`product` (the rendered ``a * b``) with the scale and the offset around it."""
        text = product if self.scale == 1 else f"{self.scale} * {product}"
        if self.offset:
            text += f" {'-' if self.offset < 0 else '+'} {abs(self.offset)}"
        return text

    def to_json(self) -> Any:
        out: dict[str, Any] = {"mul": [self.a.to_json(), self.b.to_json()]}
        if self.scale != 1:
            out["scale"] = self.scale
        if self.offset:
            out["offset"] = self.offset
        return out


def _within_limit(magnitude: int, term: Any) -> None:
    """Refuse a term whose value could leave CP-SAT's int64 range (with margin)."""
    if magnitude > INT_LIMIT:
        raise ExpressionError(
            f"this term can reach {magnitude:.3g} over its option domains, beyond the "
            f"solver's integer bound INT_LIMIT = 2^62 - 1 = {INT_LIMIT}; narrow the options or "
            "the constants",
            str(term) if isinstance(term, Term) else term,
        )


def _term(x: Any) -> Term:
    if isinstance(x, Term):
        return x
    if isinstance(x, str):
        lookup(x)
        return Lin(((1, x),))
    if isinstance(x, bool) or not isinstance(x, int):
        raise ExpressionError("a numeric term must be an option path, an int or a term", x)
    return Lin((), x)


def _lin(x: Term) -> Lin:
    if isinstance(x, Prod):
        raise ExpressionError("a product can only be compared, not combined further")
    return x  # type: ignore[return-value]


# --------------------------------------------------------------------------- boolean expressions
class Expr:
    """A boolean expression over options."""

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def paths(self) -> frozenset[str]:
        """The option and fact paths this reads (computed once; expressions are immutable)."""
        found = self.__dict__.get("_paths_memo")
        if found is None:
            found = self._paths()
            self.__dict__["_paths_memo"] = found
        return found

    def _paths(self) -> frozenset[str]:
        raise NotImplementedError

    def to_json(self) -> Any:
        raise NotImplementedError

    def __and__(self, other: Expr) -> Expr:
        return all_of(self, other)

    def __or__(self, other: Expr) -> Expr:
        return any_of(self, other)

    def __invert__(self) -> Expr:
        return not_(self)


@dataclass(frozen=True)
class Const(Expr):
    value: bool

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return self.value

    def _paths(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        return "true" if self.value else "false"

    def to_json(self) -> Any:
        return {"const": self.value}


@dataclass(frozen=True)
class Eq(Expr):
    path: str
    value: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", lookup(self.path).check(self.value))

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return values[self.path] == self.value

    def _paths(self) -> frozenset[str]:
        return frozenset((self.path,))

    def __str__(self) -> str:
        return f"{self.path} = {self.value}"

    def to_json(self) -> Any:
        return {"eq": [self.path, self.value]}


@dataclass(frozen=True)
class OneOf(Expr):
    path: str
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        # refused by its size before any value is checked or compiled
        check_count(len(self.values), "MAX_SET_VALUES", f"one_of on {self.path}", self.path)
        spec = lookup(self.path)
        vals = tuple(dict.fromkeys(spec.check(v) for v in self.values))
        if not vals:
            raise ExpressionError(f"one_of on {self.path} needs at least one value")
        object.__setattr__(self, "values", vals)

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return values[self.path] in self.values

    def _paths(self) -> frozenset[str]:
        return frozenset((self.path,))

    def __str__(self) -> str:
        return f"{self.path} in {{{', '.join(str(v) for v in self.values)}}}"

    def to_json(self) -> Any:
        return {"one_of": [self.path, list(self.values)]}


@dataclass(frozen=True)
class Cmp(Expr):
    lhs: Term
    op: str
    rhs: Term

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ExpressionError(f"unknown comparison {self.op!r}; use one of {sorted(OPS)}")
        for side in (self.lhs, self.rhs):
            if not isinstance(side, Term):
                raise ExpressionError("a comparison compares numeric terms", side)
        _within_limit(self.lhs.magnitude() + self.rhs.magnitude(), f"{self.lhs} {self.op} ...")

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        a, b = self.lhs.value(values), self.rhs.value(values)
        if a is None or b is None:
            return False
        return _compare(a, self.op, b)

    def _paths(self) -> frozenset[str]:
        return self.lhs.paths() | self.rhs.paths()

    def __str__(self) -> str:
        return f"{_show_term(self.lhs, self.rhs)} {self.op} {_show_term(self.rhs, self.lhs)}"

    def to_json(self) -> Any:
        return {"cmp": [self.lhs.to_json(), self.op, self.rhs.to_json()]}


@dataclass(frozen=True)
class Not(Expr):
    item: Expr

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return not self.item.evaluate(values)

    def _paths(self) -> frozenset[str]:
        return self.item.paths()

    def __str__(self) -> str:
        if isinstance(self.item, Eq):
            return f"{self.item.path} != {self.item.value}"
        return f"not ({self.item})"

    def to_json(self) -> Any:
        return {"not": self.item.to_json()}


@dataclass(frozen=True)
class _Junction(Expr):
    """A conjunction or disjunction of `items`; subclasses name the word and evaluate."""

    items: tuple[Expr, ...]
    _word: ClassVar[str]
    _json_key: ClassVar[str]

    def _paths(self) -> frozenset[str]:
        return frozenset().union(*(i.paths() for i in self.items))

    def __str__(self) -> str:
        return f" {self._word} ".join(_wrap(i) for i in self.items)

    def to_json(self) -> Any:
        return {self._json_key: [i.to_json() for i in self.items]}


@dataclass(frozen=True)
class And(_Junction):
    _word = "and"
    _json_key = "all_of"

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        for item in self.items:  # as all(), without a generator
            if not item.evaluate(values):
                return False
        return True


@dataclass(frozen=True)
class Or(_Junction):
    _word = "or"
    _json_key = "any_of"

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        for item in self.items:  # as any(), without a generator
            if item.evaluate(values):
                return True
        return False


@dataclass(frozen=True)
class Implies(Expr):
    condition: Expr
    then: Expr

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return (not self.condition.evaluate(values)) or self.then.evaluate(values)

    def _paths(self) -> frozenset[str]:
        return self.condition.paths() | self.then.paths()

    def __str__(self) -> str:
        return f"if {self.condition} then {self.then}"

    def to_json(self) -> Any:
        return {"implies": [self.condition.to_json(), self.then.to_json()]}


TRUE = Const(True)
FALSE = Const(False)


def _wrap(e: Expr) -> str:
    return f"({e})" if isinstance(e, (And, Or, Implies)) else str(e)


def _show_term(term: Term, other: Term) -> str:
    """Show a constant compared with a fraction option in the option's own units."""
    if isinstance(term, Lin) and not term.terms and isinstance(other, Lin):
        path = other.single_path()
        if path is not None:
            domain = lookup(path).domain
            if isinstance(domain, FractionDomain):
                return str(domain.decode(term.const))
    return str(term)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


def _compare(a: int, op: str, b: int) -> bool:
    return _COMPARE[op](a, b)


# --------------------------------------------------------------------------- predicates
@dataclass(frozen=True)
class Pred:
    """An unbound predicate (`ge(4096)`): a claim binds it to a path."""

    op: str  # eq, ne, ge, le, gt, lt, one_of
    value: Any

    def bind(self, path: str) -> Expr:
        if self.op == "eq":
            return eq(path, self.value)
        if self.op == "ne":
            return ne(path, self.value)
        if self.op == "one_of":
            return one_of(path, self.value)
        return _cmp(path, _OP_NAMES[self.op], self.value)

    def to_json(self) -> Any:
        value = list(self.value) if self.op == "one_of" else self.value
        return {self.op: value}

    def __str__(self) -> str:
        return f"{self.op}({self.value!r})"


PRED_OPS = ("eq", "ne", "ge", "le", "gt", "lt", "one_of")


# --------------------------------------------------------------------------- constructors
def ref(path: str) -> Lin:
    """The numeric value of an option, for use in sums and products."""
    return _term(path)  # type: ignore[return-value]


def lin(coefs: Mapping[str, int], const: int = 0) -> Lin:
    """A linear sum: lin({"a": 2, "b": 1}, 3) is 2*a + b + 3."""
    total = Lin((), const)
    for path, coef in coefs.items():
        total = total + ref(path).scale(coef)
    return total


def _cmp(a: Any, op: str, b: Any) -> Cmp:
    lhs, rhs = _term_for(a, b), _term_for(b, a)
    return Cmp(lhs, op, rhs)


def _term_for(x: Any, other: Any) -> Term:
    """A term; plain numbers compared with a fraction option are put in its fixed point."""
    if isinstance(x, float) and not isinstance(x, bool):
        path = other if isinstance(other, str) else None
        if isinstance(other, Lin):
            path = other.single_path()
        if path is not None:
            spec = lookup(path)
            if isinstance(spec.domain, FractionDomain):
                return Lin((), spec.domain.encode(spec.check(x)))
        if x.is_integer():
            return Lin((), int(x))
        raise ExpressionError("a non-integer number can only be compared with a fraction option", x)
    return _term(x)


def eq(path: Any, value: Any = _MISSING) -> Any:
    """path == value; with one argument, an unbound predicate."""
    if value is _MISSING:
        return Pred("eq", path)
    if isinstance(path, Term):
        return _cmp(path, "==", value)
    return Eq(path, value)


def ne(path: Any, value: Any = _MISSING) -> Any:
    """path != value; with one argument, an unbound predicate."""
    if value is _MISSING:
        return Pred("ne", path)
    if isinstance(path, Term):
        return _cmp(path, "!=", value)
    return Not(Eq(path, value))


def ge(a: Any, b: Any = _MISSING) -> Any:
    """a >= b (paths, ints or terms); with one argument, an unbound predicate."""
    return Pred("ge", a) if b is _MISSING else _cmp(a, ">=", b)


def le(a: Any, b: Any = _MISSING) -> Any:
    """a <= b; with one argument, an unbound predicate."""
    return Pred("le", a) if b is _MISSING else _cmp(a, "<=", b)


def gt(a: Any, b: Any = _MISSING) -> Any:
    """a > b; with one argument, an unbound predicate."""
    return Pred("gt", a) if b is _MISSING else _cmp(a, ">", b)


def lt(a: Any, b: Any = _MISSING) -> Any:
    """a < b; with one argument, an unbound predicate."""
    return Pred("lt", a) if b is _MISSING else _cmp(a, "<", b)


def one_of(path: Any, values: Any = _MISSING) -> Any:
    """path in values; with one argument (the values), an unbound predicate."""
    if values is _MISSING:
        if isinstance(path, (str, bytes)) or not isinstance(path, Iterable):
            raise ExpressionError("one_of needs a list of values", path)
        return Pred("one_of", tuple(path))
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ExpressionError(f"one_of on {path} needs a list of values", values)
    return OneOf(path, tuple(values))


def all_of(*items: Expr) -> Expr:
    """Conjunction; nested conjunctions are flattened and constants folded."""
    flat: list[Expr] = []
    for item in items:
        _require_expr(item)
        if isinstance(item, And):
            flat.extend(item.items)
        elif item == TRUE:
            continue
        elif item == FALSE:
            return FALSE
        else:
            flat.append(item)
    if not flat:
        return TRUE
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def any_of(*items: Expr) -> Expr:
    """Disjunction; nested disjunctions are flattened and constants folded."""
    flat: list[Expr] = []
    for item in items:
        _require_expr(item)
        if isinstance(item, Or):
            flat.extend(item.items)
        elif item == FALSE:
            continue
        elif item == TRUE:
            return TRUE
        else:
            flat.append(item)
    if not flat:
        return FALSE
    return flat[0] if len(flat) == 1 else Or(tuple(flat))


def not_(item: Expr) -> Expr:
    _require_expr(item)
    if isinstance(item, Not):
        return item.item
    if isinstance(item, Const):
        return Const(not item.value)
    return Not(item)


def implies(condition: Expr, then: Expr) -> Expr:
    _require_expr(condition)
    _require_expr(then)
    return Implies(condition, then)


def _require_expr(item: Any) -> None:
    if not isinstance(item, Expr):
        raise ExpressionError("expected a boolean expression", item)


# --------------------------------------------------------------------------- JSON
EXPR_KEYS = frozenset({"eq", "one_of", "cmp", "not", "all_of", "any_of", "implies", "const"})


def from_json(data: Any, _depth: int = 0) -> Expr:
    """Read an expression written by `Expr.to_json()`. Strict: `const` takes a bool,
    coefficients, scales, offsets and constants take ints (a bool, a string or a fraction
    is an error, never rounded), and nesting is limited to MAX_EXPR_DEPTH levels."""
    if _depth > MAX_EXPR_DEPTH:
        raise ExpressionError(
            f"the expression is nested more than MAX_EXPR_DEPTH = {MAX_EXPR_DEPTH} levels deep"
        )
    if not isinstance(data, Mapping) or len(data) != 1:
        raise ExpressionError("an expression is an object with exactly one operator key", data)
    ((key, arg),) = data.items()
    inner = _depth + 1
    try:
        if key == "eq":
            path, value = arg
            return Eq(_path_arg(path), value)
        if key == "one_of":
            path, values = arg
            return one_of(_path_arg(path), values)
        if key == "cmp":
            lhs, op, rhs = arg
            if not isinstance(op, str):
                raise ExpressionError("a comparison operator is a string such as '>='", op)
            return Cmp(term_from_json(lhs), op, term_from_json(rhs))
        if key == "not":
            return not_(from_json(arg, inner))
        if key in ("all_of", "any_of"):
            if isinstance(arg, (str, bytes, Mapping)) or not isinstance(arg, Iterable):
                raise ExpressionError(f"{key!r} takes a list of expressions", arg)
            items = [from_json(a, inner) for a in arg]
            return all_of(*items) if key == "all_of" else any_of(*items)
        if key == "implies":
            a, b = arg
            return implies(from_json(a, inner), from_json(b, inner))
        if key == "const":
            if not isinstance(arg, bool):
                raise ExpressionError("'const' takes true or false", arg)
            return Const(arg)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, (ExpressionError, EdgeError)) or hasattr(exc, "path"):
            raise
        raise ExpressionError(f"malformed {key!r} expression", arg) from None
    raise ExpressionError(f"unknown expression operator {key!r}; use one of {sorted(EXPR_KEYS)}")


def _path_arg(path: Any) -> str:
    if not isinstance(path, str):
        raise ExpressionError("an option path is a string", path)
    return path


def _int_arg(value: Any, what: str) -> int:
    """An integer read from JSON: a bool, a string or a fraction is an error, not coerced."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ExpressionError(f"{what} must be an integer", value)
    return value


def term_from_json(data: Any) -> Term:
    if isinstance(data, Mapping):
        if "mul" in data:
            extra = set(data) - {"mul", "scale", "offset"}
            if extra:
                raise ExpressionError(f"unknown keys in a product: {sorted(map(str, extra))}", data)
            a, b = data["mul"]
            return Prod(
                _lin(term_from_json(a)),
                _lin(term_from_json(b)),
                _int_arg(data.get("scale", 1), "a product's scale"),
                _int_arg(data.get("offset", 0), "a product's offset"),
            )
        if "sum" in data:
            extra = set(data) - {"sum", "const"}
            if extra:
                raise ExpressionError(f"unknown keys in a sum: {sorted(map(str, extra))}", data)
            total = Lin((), _int_arg(data.get("const", 0), "a sum's constant"))
            terms = data["sum"]
            if isinstance(terms, (str, bytes, Mapping)) or not isinstance(terms, Iterable):
                raise ExpressionError("'sum' takes a list of [coefficient, path] pairs", terms)
            for coef, path in terms:
                total = total + ref(_path_arg(path)).scale(
                    _int_arg(coef, f"the coefficient of {path}")
                )
            return total
        raise ExpressionError("a term object has a 'sum' or a 'mul' key", data)
    return _term(data)


def pred_from_json(data: Any) -> Pred | None:
    """A predicate object such as {"ge": 4096}, or None when `data` is not one."""
    if isinstance(data, Mapping) and len(data) == 1:
        ((op, value),) = data.items()
        if op in PRED_OPS:
            if op == "one_of":
                if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                    raise ExpressionError("one_of needs a list of values", value)
                value = tuple(value)
            return Pred(op, value)
    return None
