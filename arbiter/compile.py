"""Claims + rules + schema -> one CP-SAT model, with one literal per claim and per rule.

Options become integer variables over their domains (enums also get one-hot literals,
nullable options a presence literal); facts (`device.*`, `model.*`) are constants, so any
part of an expression that reads only facts is folded before it reaches the solver and a
product with a fact stays linear.

Each func and setup claim gets a literal that implies its requirement; each perf claim gets
one selection literal per alternative (at most one true), each implying its requirement;
each rule gets a literal that implies the rule. Solving fixes the hard literals; explaining
passes them as assumptions instead. Requirements are half-reified where they appear at the
top level (an And of atoms is posted atom by atom under the literal) and fully reified only
under Or, Not and Implies.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from constraints.domains import BoolDomain, EnumDomain, FractionDomain
from constraints.expr import And, Cmp, Const, Eq, Expr, Implies, Lin, Not, OneOf, Or, Prod, Term
from constraints.rules import Rule
from constraints.schema import OptionSpec, lookup, options, schema_index, scope_for

from .claims import AnyClaim, FuncClaim, PerfClaim, SetupClaim
from .cpsat import cp_model, cp_model_helper
from .dormant import asleep, guarded_rules

Lit = Any  # a CP-SAT literal (IntVar of a bool, or its negation)


@dataclass
class OptionVar:
    spec: OptionSpec
    var: cp_model.IntVar
    present: Lit | None = None  # nullable non-enum options only
    onehot: list[Lit] = field(default_factory=list)  # enums only


class CompiledModel:
    """One CP-SAT model for a set of claims and rules over fixed facts.

    The rules are compiled once per (rules, facts, defaults) into a rule base (see
    `RuleBases`); a model for claims starts from a copy of that base's CP-SAT proto and
    adds only the claims. Options are declared when a rule or claim first reads them: an
    option nothing mentions has no variable and keeps its default. An option outside the
    profile's surface (`frozen`, `Profile.surface`) never gets one: it is a constant at
    the profile's default, so no solve can change an option the release lacks."""

    model: cp_model.CpModel
    facts: dict[str, Any]
    defaults: dict[str, Any]
    _pin: Any
    _undeclared: dict[str, Any]
    fixed: dict[str, Any]
    _consts: dict[str, Any]

    def __init__(
        self,
        claims: Sequence[AnyClaim],
        rules: Sequence[Rule],
        facts: Mapping[str, Any],
        defaults: Mapping[str, Any],
        *,
        objective: bool = True,
        key: Hashable | None = None,
        pin: Any = None,
        cache: bool = True,
        fixed: Mapping[str, Any] | None = None,
        frozen: Mapping[str, Any] | None = None,
    ):
        # options outside the profile's surface are constants in every model, as the
        # options the hard claims fix are in the solve's (`frozen`: path -> its default)
        if frozen:
            fixed = {**frozen, **(fixed or {})}
        if cache:
            base = RULE_BASES.get(
                rules,
                facts,
                defaults,
                objective=objective,
                key=key,
                pin=pin,
                claims=claims,
                fixed=fixed,
            )
            self.model = _copy(base.model)
        else:  # a one-off model (a few rules): not worth a place in the cache, nor a copy,
            # nor the dormant-rule analysis (its claims are mostly added afterwards)
            base = RuleBases._compile(rules, facts, defaults, objective, {}, fixed)
            self.model = base.model
        self.facts = base.facts
        self.fixed = base.fixed
        self._consts = base._consts
        self.defaults = base.defaults
        self.vars: dict[str, OptionVar] = dict(base.vars)
        self.claim_lit: dict[str, Lit] = {}
        self.perf_sel: dict[str, list[Lit]] = {}
        self.rule_lit: dict[str, Lit] = dict(base.rule_lit)
        self._cache: dict[Any, Any] = dict(base._cache)
        self._bounds: dict[str, tuple[int, int]] = dict(base._bounds)
        self._changed: dict[str, Lit] = dict(base._changed)
        self._distance: dict[str, Any] = dict(base._distance)
        self._asleep: dict[str, tuple[Rule, frozenset[str]]] = dict(base._asleep)
        self._undeclared = base._undeclared  # shared: the values of options without a variable
        for claim in claims:
            self._add_claim(claim)

    @classmethod
    def rule_base(
        cls,
        rules: Sequence[Rule],
        facts: Mapping[str, Any],
        defaults: Mapping[str, Any],
        dormant: Mapping[str, frozenset[str]] | None = None,
        fixed: Mapping[str, Any] | None = None,
    ) -> CompiledModel:
        """The model of `rules` alone, with the change and distance terms of every option
        the rules read (what each model for claims copies). The `dormant` rules (id ->
        guard options, `arbiter.dormant`) get their literal but no body until one of their
        guard options is declared. The `fixed` options (path -> value, `arbiter.fixed`)
        are constants, as facts are: only a model whose every solution gives them those
        values may fix them (the solve's model, where the claims that fix them are hard)."""
        self = cls.__new__(cls)
        self.model = _new_model()
        self.facts = dict(facts)
        self.fixed = dict(fixed or {})
        self._consts = {**self.facts, **self.fixed}
        self.defaults = dict(defaults)
        self.vars = {}
        self.claim_lit = {}
        self.perf_sel = {}
        self.rule_lit = {}
        self._cache = {}
        self._bounds = {}
        self._changed = {}
        self._distance = {}
        self._pin = None
        self._undeclared = {}
        dormant = dormant or {}
        self._asleep = {r.id: (r, dormant[r.id]) for r in rules if r.id in dormant}
        read: set[str] = set()
        for rule in rules:
            if rule.id not in dormant:
                read |= rule.expr.paths()
        # in schema order, so the base is the same for any rule order
        for spec in in_schema_order(read):
            if not spec.fact and spec.path not in self.fixed:
                self._declare(spec)
        for rule in rules:
            lit = self.model.new_bool_var(f"rule:{rule.id}")
            self.rule_lit[rule.id] = lit
            if rule.id not in dormant:
                self.enforce(rule.expr, [lit])
        return self

    def var(self, path: str) -> OptionVar:
        """The variable of an option, declared on first use (which wakes the dormant
        rules whose guard reads it)."""
        ov = self.vars.get(path)
        if ov is None:
            self._declare(lookup(path))
            ov = self.vars[path]
            if self._asleep:
                self._wake(path)
        return ov

    def _wake(self, path: str) -> None:
        """Compile the body of every dormant rule whose guard reads `path`."""
        for rid in sorted(r for r, (_, guard) in self._asleep.items() if path in guard):
            rule, _ = self._asleep.pop(rid)
            self.enforce(rule.expr, [self.rule_lit[rid]])

    # ------------------------------------------------------------------ declarations
    def _declare(self, spec: OptionSpec) -> None:
        d = spec.domain
        lo, hi = d.bounds()
        default = self.defaults[spec.path]
        if isinstance(d, EnumDomain):
            var = self.model.new_int_var(lo, hi, spec.path)
            onehot = [self.model.new_bool_var(f"{spec.path}={v}") for v in d.values]
            self.model.add_exactly_one(onehot)
            self.model.add(var == sum(i * lit for i, lit in enumerate(onehot)))
            self.vars[spec.path] = OptionVar(spec, var, onehot=onehot)
            hint = self.model.proto.solution_hint  # as add_hint writes it, in one go
            hint.vars.extend(lit.index for lit in onehot)
            hint.values.extend(int(value == default) for value in d.values)
        elif d.nullable:
            var = self.model.new_int_var_from_domain(
                cp_model.Domain.from_intervals(
                    [[0, 0], [lo, hi]] if lo > 0 else [[min(lo, 0), hi]]
                ),
                spec.path,
            )
            present = self.model.new_bool_var(f"{spec.path}?set")
            self.model.add(var == 0).only_enforce_if(~present)
            self.model.add_linear_constraint(var, lo, hi).only_enforce_if(present)
            self.vars[spec.path] = OptionVar(spec, var, present=present)
            self.model.add_hint(present, default is not None)
            lo = min(lo, 0)
        else:
            var = (
                self.model.new_bool_var(spec.path)
                if isinstance(d, BoolDomain)
                else self.model.new_int_var(lo, hi, spec.path)
            )
            self.vars[spec.path] = OptionVar(spec, var)
            self.model.add_hint(var, d.encode(default))
        self._bounds[spec.path] = (lo, hi)
        if spec.path in self.fixed:  # asked for all the same (a forced literal): held to it
            self.model.add(var == d.encode(self.fixed[spec.path]))
            ov = self.vars[spec.path]
            if ov.present is not None:
                self.model.add_bool_and([ov.present])

    def add_claim(self, claim: AnyClaim) -> None:
        """Compile one more claim into this model (its literals are free until fixed or
        assumed)."""
        self._add_claim(claim)

    def _add_claim(self, claim: AnyClaim) -> None:
        if isinstance(claim, PerfClaim):
            sels = []
            for i, (expr, _weight) in enumerate(claim.options()):
                sel = self.model.new_bool_var(f"perf:{claim.name}#{i}")
                self.enforce(expr, [sel])
                sels.append(sel)
            if len(sels) > 1:
                self.model.add_at_most_one(sels)
            self.perf_sel[claim.name] = sels
        elif isinstance(claim, SetupClaim):
            fixes = {p: v for p, v in claim.fixes.items() if p not in self.facts}
            if fixes:
                lit = self.model.new_bool_var(f"setup:{claim.name}")
                self.claim_lit[claim.name] = lit
                self.enforce(claim.expr, [lit])
        else:
            assert isinstance(claim, FuncClaim)
            lit = self.model.new_bool_var(f"func:{claim.name}")
            self.claim_lit[claim.name] = lit
            self.enforce(claim.expr, [lit])

    # ------------------------------------------------------------------ terms
    def _is_fact(self, path: str) -> bool:
        """A fact, or an option this model fixes: a constant either way."""
        return path in self._consts

    def _reads_unset(self, expr: Expr) -> bool:
        """Whether `expr` reads a constant that is None (an unset option held constant)."""
        return any(p in self._consts and self._consts[p] is None for p in expr.paths())

    def _fact_number(self, path: str) -> int:
        return lookup(path).domain.encode(self._consts[path])

    def linear(self, term: Term) -> tuple[Any, int, int]:
        """A CP-SAT linear expression for a term, with its lower and upper bound."""
        if isinstance(term, Lin):
            expr: Any = term.const
            lo = hi = term.const
            for coef, path in term.terms:
                if self._is_fact(path):
                    value = coef * self._fact_number(path)
                    expr += value
                    lo += value
                    hi += value
                    continue
                expr += coef * self.var(path).var
                a, b = self._bounds[path]
                lo += min(coef * a, coef * b)
                hi += max(coef * a, coef * b)
            return expr, lo, hi
        assert isinstance(term, Prod)
        # The bare product a * b is built once and shared by every scaled, shifted use.
        key = ("prod", term.a, term.b)
        if key not in self._cache:
            ea, alo, ahi = self.linear(term.a)
            eb, blo, bhi = self.linear(term.b)
            corners = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
            if alo == ahi:  # a fact side keeps the product linear
                out = (alo * eb, min(corners), max(corners))
            elif blo == bhi:
                out = (blo * ea, min(corners), max(corners))
            else:
                va = self._as_var(ea, alo, ahi)
                vb = self._as_var(eb, blo, bhi)
                prod = self.model.new_int_var(
                    min(corners), max(corners), f"({term.a}) * ({term.b})"
                )
                self.model.add_multiplication_equality(prod, [va, vb])
                out = (prod, min(corners), max(corners))
            self._cache[key] = out
        expr, lo, hi = self._cache[key]
        k, c = term.scale, term.offset
        if k == 1 and c == 0:
            return expr, lo, hi
        return k * expr + c, min(k * lo, k * hi) + c, max(k * lo, k * hi) + c

    def _as_var(self, expr: Any, lo: int, hi: int) -> Any:
        if isinstance(expr, cp_model.IntVar):
            return expr
        var = self.model.new_int_var(lo, hi, "")
        self.model.add(var == expr)
        return var

    def _presence(self, paths: Iterable[str]) -> list[Lit]:
        return [
            self.var(p).present
            for p in sorted(paths)
            if not self._is_fact(p) and self.var(p).present is not None
        ]

    # ------------------------------------------------------------------ literals
    def constant(self, expr: Expr) -> bool | None:
        """The value of an expression that reads only facts (and fixed options), else None."""
        if expr.paths() <= self._consts.keys():
            return expr.evaluate(self._consts)
        return None

    def lit_for(self, expr: Expr) -> Lit | bool:
        """A literal equivalent to `expr` (or a Python bool when it folds to a constant)."""
        folded = self.constant(expr)
        if folded is not None:
            return folded
        if expr in self._cache:
            return self._cache[expr]
        lit = self._reify(expr)
        self._cache[expr] = lit
        return lit

    def _reify(self, expr: Expr) -> Lit | bool:
        m = self.model
        if isinstance(expr, Eq):
            ov = self.var(expr.path)
            d = ov.spec.domain
            if isinstance(d, EnumDomain):
                return ov.onehot[d.encode(expr.value)]
            if expr.value is None:
                return ~ov.present
            if isinstance(d, BoolDomain):
                return ov.var if expr.value else ~ov.var
            number = d.encode(expr.value)
            b = m.new_bool_var(str(expr))
            m.add(ov.var == number).only_enforce_if(b)
            m.add(ov.var != number).only_enforce_if(~b)
            if ov.present is not None:
                m.add_implication(b, ov.present)
            return b
        if isinstance(expr, OneOf):
            return self._or([self.lit_for(Eq(expr.path, v)) for v in expr.values])
        if isinstance(expr, Cmp):
            if self._reads_unset(expr):
                return False  # a comparison with an unset value is false (Cmp.evaluate)
            lhs, _, _ = self.linear(expr.lhs)
            rhs, _, _ = self.linear(expr.rhs)
            b = m.new_bool_var(str(expr))
            m.add(_relation(lhs - rhs, expr.op)).only_enforce_if(b)
            m.add(_relation(lhs - rhs, _NEGATE[expr.op])).only_enforce_if(~b)
            present = self._presence(expr.paths())
            return self._and([b, *present]) if present else b
        if isinstance(expr, Not):
            lit = self.lit_for(expr.item)
            return (not lit) if isinstance(lit, bool) else ~lit
        if isinstance(expr, And):
            return self._and([self.lit_for(i) for i in expr.items])
        if isinstance(expr, Or):
            return self._or([self.lit_for(i) for i in expr.items])
        if isinstance(expr, Implies):
            cond = self.lit_for(expr.condition)
            then = self.lit_for(expr.then)
            return self._or([(not cond) if isinstance(cond, bool) else ~cond, then])
        if isinstance(expr, Const):
            return expr.value
        raise TypeError(f"cannot compile {type(expr).__name__}")

    def _and(self, lits: list[Lit | bool]) -> Lit | bool:
        if any(lit is False for lit in lits):
            return False
        lits = [lit for lit in lits if lit is not True]
        if not lits:
            return True
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var("and")
        self.model.add_bool_and(lits).only_enforce_if(b)
        self.model.add_bool_or([~lit for lit in lits]).only_enforce_if(~b)
        return b

    def _or(self, lits: list[Lit | bool]) -> Lit | bool:
        if any(lit is True for lit in lits):
            return True
        lits = [lit for lit in lits if lit is not False]
        if not lits:
            return False
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var("or")
        self.model.add_bool_or(lits).only_enforce_if(b)
        self.model.add_bool_and([~lit for lit in lits]).only_enforce_if(~b)
        return b

    # ------------------------------------------------------------------ enforcement
    def enforce(self, expr: Expr, enf: list[Lit]) -> None:
        """Post `enf (a conjunction) implies expr`, half-reified where possible."""
        m = self.model
        folded = self.constant(expr)
        if folded is not None:
            if not folded:
                m.add_bool_or([~e for e in enf])
            return
        if isinstance(expr, And):
            for item in expr.items:
                self.enforce(item, enf)
            return
        if isinstance(expr, Implies):
            cond = self.lit_for(expr.condition)
            if cond is False:
                return
            self.enforce(expr.then, enf if cond is True else [*enf, cond])
            return
        if isinstance(expr, Cmp):
            if self._reads_unset(expr):  # false (Cmp.evaluate): the literals cannot all hold
                m.add_bool_or([~e for e in enf])
                return
            lhs, _, _ = self.linear(expr.lhs)
            rhs, _, _ = self.linear(expr.rhs)
            m.add(_relation(lhs - rhs, expr.op)).only_enforce_if(enf)
            present = self._presence(expr.paths())
            if present:
                m.add_bool_and(present).only_enforce_if(enf)
            return
        if isinstance(expr, Eq):
            ov = self.var(expr.path)
            if not isinstance(ov.spec.domain, (EnumDomain, BoolDomain)) and expr.value is not None:
                m.add(ov.var == ov.spec.domain.encode(expr.value)).only_enforce_if(enf)
                if ov.present is not None:
                    m.add_bool_and([ov.present]).only_enforce_if(enf)
                return
        if isinstance(expr, Or):
            lits = [self.lit_for(i) for i in expr.items]
            if any(lit is True for lit in lits):
                return
            m.add_bool_or([lit for lit in lits if lit is not False]).only_enforce_if(enf)
            return
        lit = self.lit_for(expr)
        if lit is True:
            return
        if lit is False:
            m.add_bool_or([~e for e in enf])
            return
        m.add_bool_and([lit]).only_enforce_if(enf)

    # ------------------------------------------------------------------ objectives
    def change_literals(self) -> dict[str, Lit]:
        """One literal per declared option that is at least true when the option leaves
        its default (an undeclared option never does)."""
        for path, ov in self.vars.items():
            if path not in self._changed:
                self._changed[path] = self._change_literal(path, ov)
        return {path: self._changed[path] for path in self.vars}

    def _change_literal(self, path: str, ov: OptionVar) -> Lit:
        default = self.defaults[path]
        d = ov.spec.domain
        if isinstance(d, EnumDomain):
            return ~ov.onehot[d.encode(default)]
        if isinstance(d, BoolDomain) and not d.nullable:
            return ~ov.var if default else ov.var
        if ov.present is not None and default is None:
            return ov.present
        c = self.model.new_bool_var(f"changed:{path}")
        self.model.add(ov.var == d.encode(default)).only_enforce_if(~c)
        if ov.present is not None:
            self.model.add_implication(~c, ov.present)
        return c

    def distance_terms(self) -> list[Any]:
        """Per declared numeric option, how far its value lies from the default (unset
        nullable options with a None default count as infinitely large, so larger is
        closer)."""
        terms = []
        for path, ov in self.vars.items():
            if isinstance(ov.spec.domain, (EnumDomain, BoolDomain)):
                continue
            if path not in self._distance:
                self._distance[path] = self._distance_term(path, ov)
            terms.append(self._distance[path])
        return terms

    def _distance_term(self, path: str, ov: OptionVar) -> Any:
        d = ov.spec.domain
        lo, hi = self._bounds[path]
        default = self.defaults[path]
        dist = self.model.new_int_var(0, hi - lo + abs(hi), f"distance:{path}")
        if ov.present is not None and default is None:
            self.model.add(dist >= hi - ov.var).only_enforce_if(ov.present)
        elif isinstance(d, FractionDomain) or ov.present is None:
            self.model.add_abs_equality(dist, ov.var - d.encode(default))
        else:
            self.model.add(dist >= ov.var - d.encode(default)).only_enforce_if(ov.present)
            self.model.add(dist >= d.encode(default) - ov.var).only_enforce_if(ov.present)
        return dist

    # ------------------------------------------------------------------ reading solutions
    def values(self, solver: cp_model.CpSolver) -> dict[str, Any]:
        """Every option and fact as {path: value} from a solved model (an option without
        a variable at its default)."""
        out: dict[str, Any] = {}
        for spec in self.specs():
            if spec.fact:
                out[spec.path] = self.facts[spec.path]
                continue
            ov = self.vars.get(spec.path)
            if ov is None:
                out[spec.path] = self.fixed.get(spec.path, self.defaults[spec.path])
            elif ov.present is not None and not solver.boolean_value(ov.present):
                out[spec.path] = None
            else:
                out[spec.path] = spec.domain.decode(solver.value(ov.var))
        return out

    def values_from(self, solution: Sequence[int]) -> dict[str, Any]:
        """As `values()`, from a response's solution vector (indexed by variable): every
        fact and default in schema order (worked out once per rule base), then the value
        of each option with a variable written over its default."""
        if not self._undeclared:  # the rule base's own dict, shared by its copies; filled in
            # one update from a dict (atomic under the GIL): a thread sees it empty or whole
            full = {
                spec.path: self.facts[spec.path]
                if spec.fact
                else self.fixed.get(spec.path, self.defaults[spec.path])
                for spec in self.specs()
            }
            self._undeclared.update(full)
        out = dict(self._undeclared)
        out.update(self.declared_values(solution))
        return out

    def specs(self) -> list[OptionSpec]:
        """Every fact and option this model ranges over (those its defaults name: the
        sections of its problem's scope), in schema order."""
        return in_schema_order([*self.facts, *self.defaults])

    def declared_values(self, solution: Sequence[int]) -> dict[str, Any]:
        """The value of each option with a variable, from a solution vector."""
        out: dict[str, Any] = {}
        for path, ov in self.vars.items():
            if ov.spec.fact:  # a fact keeps its value (facts have no variable)
                continue
            if ov.present is not None and not solution[ov.present.index]:
                out[path] = None
            else:
                out[path] = ov.spec.domain.decode(solution[ov.var.index])
        return out


def in_schema_order(paths: Iterable[str]) -> list[OptionSpec]:
    """The specs of `paths` in schema order (the order `options()` lists them), reading
    only the packs whose sections they name; paths that are no option are left out."""
    paths = list(paths)
    scope = scope_for(paths)
    specs, order = options(scope), schema_index(scope)
    return [specs[i] for i in sorted({order[p] for p in paths if p in order})]


class _Model(cp_model.CpModel):
    """A CpModel that skips the per-instance aliases of the pre-PEP8 method names (a few
    ms per copy); only the PEP8 names are used here."""

    def __init__(self) -> None:
        cp_model_helper.CpBaseModel.__init__(self, None)


def _new_model() -> cp_model.CpModel:
    try:
        return _Model()
    except (AttributeError, TypeError):  # an OR-Tools without that base class
        return cp_model.CpModel()


def _copy(model: cp_model.CpModel) -> cp_model.CpModel:
    """A copy of a model's proto as a new model (variables keep their indices)."""
    clone = _new_model()
    clone.proto.copy_from(model.proto)
    clone.rebuild_constant_map()
    return clone


class RuleBases:
    """Compiled rule bases, kept across calls: the key is the rules (ids and expressions),
    the facts and the defaults, so every profile and rule set gets its own, and a base is
    only ever copied, never changed (safe to share between threads)."""

    def __init__(self, size: int = 32):
        self.size = size
        self.enabled = True  # False: compile the rules on every call (the old path)
        self._bases: OrderedDict[Any, CompiledModel] = OrderedDict()
        self._guards: OrderedDict[Any, dict[str, frozenset[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        rules: Sequence[Rule],
        facts: Mapping[str, Any],
        defaults: Mapping[str, Any],
        *,
        objective: bool = True,
        key: Hashable | None = None,
        pin: Any = None,
        claims: Sequence[AnyClaim] = (),
        fixed: Mapping[str, Any] | None = None,
    ) -> CompiledModel:
        """The base for these rules, facts and defaults, with the rules that can sleep
        for `claims` dormant (`arbiter.dormant`); with `objective`, it also holds the
        change and distance terms (feasibility checks go without them). `key` stands for
        the rules when the caller has a cheaper one than their expressions (it must
        determine them, and stay valid while the base is cached: `pin` is kept with the
        base, for objects whose ids the key holds). `fixed`: the options the base holds as
        constants (part of the key)."""
        fixed = fixed or {}
        if not self.enabled:
            sleeping = asleep(guarded_rules(rules, facts, defaults), claims)
            return self._compile(rules, facts, defaults, objective, sleeping, fixed)
        try:
            key = (
                objective,
                # rules by identity (the base pins them, so no id is reused while it lives)
                tuple((r.id, id(r)) for r in rules) if key is None else key,
                tuple(sorted(facts.items())),
                tuple(sorted(defaults.items())),
            )
            hash(key)
        except TypeError:  # an unhashable fact or default: no reuse for this input
            sleeping = asleep(guarded_rules(rules, facts, defaults), claims)
            return self._compile(rules, facts, defaults, objective, sleeping, fixed)
        guards = self._guards.get(key)
        if guards is None:
            guards = guarded_rules(rules, facts, defaults)
            with self._lock:
                self._guards[key] = guards
                while len(self._guards) > 4 * self.size:
                    self._guards.popitem(last=False)
        sleeping = asleep(guards, claims)
        key = (key, frozenset(sleeping), tuple(sorted(fixed.items())))
        pin = (tuple(rules), pin)
        with self._lock:
            base = self._bases.get(key)
            if base is not None:
                self._bases.move_to_end(key)
                return base
        base = self._compile(rules, facts, defaults, objective, sleeping, fixed)
        base._pin = pin
        with self._lock:
            self._bases[key] = base
            while len(self._bases) > self.size:
                self._bases.popitem(last=False)
        return base

    @staticmethod
    def _compile(
        rules,
        facts,
        defaults,
        objective: bool,
        sleeping: Mapping[str, frozenset[str]],
        fixed: Mapping[str, Any] | None = None,
    ) -> CompiledModel:
        base = CompiledModel.rule_base(rules, facts, defaults, sleeping, fixed)
        if objective:
            base.change_literals()
            base.distance_terms()
        return base

    def clear(self) -> None:
        with self._lock:
            self._bases.clear()
            self._guards.clear()


RULE_BASES = RuleBases()


_NEGATE = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "==": "!=", "!=": "=="}


def _relation(expr: Any, op: str) -> Any:
    if op == ">=":
        return expr >= 0
    if op == "<=":
        return expr <= 0
    if op == ">":
        return expr >= 1
    if op == "<":
        return expr <= -1
    if op == "==":
        return expr == 0
    return expr != 0
