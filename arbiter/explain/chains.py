"""Derivation chains: a networkx graph of a conflict, rendered as one sentence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from constraints.domains import EnumDomain
from constraints.expr import And, Cmp, Const, Eq, Expr, Implies, Lin, Not, OneOf, Or
from constraints.rules import Rule
from constraints.schema import lookup

from ..claims import SetupClaim
from .data import show_value

if TYPE_CHECKING:
    import networkx as nx


# ---------------------------------------------------------------------------- chains
def _partial(expr: Expr, known: Mapping[str, Any]) -> bool | None:
    """Three-valued evaluation: True/False when the known values decide it, else None."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Eq):
        return known[expr.path] == expr.value if expr.path in known else None
    if isinstance(expr, OneOf):
        return known[expr.path] in expr.values if expr.path in known else None
    if isinstance(expr, Cmp):
        if all(p in known for p in expr.paths()):
            return expr.evaluate(known)
        return None
    if isinstance(expr, Not):
        inner = _partial(expr.item, known)
        return None if inner is None else not inner
    if isinstance(expr, And):
        parts = [_partial(i, known) for i in expr.items]
        if False in parts:
            return False
        return True if all(p is True for p in parts) else None
    if isinstance(expr, Or):
        parts = [_partial(i, known) for i in expr.items]
        if True in parts:
            return True
        return False if all(p is False for p in parts) else None
    if isinstance(expr, Implies):
        cond, then = _partial(expr.condition, known), _partial(expr.then, known)
        if cond is False or then is True:
            return True
        if cond is True and then is False:
            return False
        return None
    return None


def _assignments(expr: Expr) -> list[tuple[str, Any]]:
    """The option values an expression fixes outright (equalities under conjunctions)."""
    if isinstance(expr, Eq):
        return [(expr.path, expr.value)]
    if isinstance(expr, OneOf) and len(expr.values) == 1:
        return [(expr.path, expr.values[0])]
    if isinstance(expr, Not) and isinstance(expr.item, Eq):
        domain = lookup(expr.item.path).domain
        if domain.kind == "bool" and not domain.nullable:
            return [(expr.item.path, not expr.item.value)]
        if isinstance(domain, EnumDomain):
            rest = [v for v in domain.values if v != expr.item.value]
            if domain.nullable:
                rest.append(None)
            if len(rest) == 1:
                return [(expr.item.path, rest[0])]
    if isinstance(expr, Cmp) and expr.op == "==":
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(a, Lin) and isinstance(b, Lin) and a.single_path() and not b.terms:
                path = a.single_path()
                return [(path, lookup(path).domain.decode(b.const))]  # type: ignore[arg-type]
    if isinstance(expr, And):
        return [a for item in expr.items for a in _assignments(item)]
    return []


def _pieces(expr: Expr) -> list[Expr]:
    return [p for item in expr.items for p in _pieces(item)] if isinstance(expr, And) else [expr]


@dataclass
class _Origin:
    kind: str  # claim, setup, fact, rule
    name: str = ""
    premises: tuple[str, ...] = ()


class ChainBuilder:
    """Builds the derivation sentence and numeric notes for one set of claims and rules."""

    def __init__(
        self,
        members: Sequence[tuple[str, str, Expr]],  # (name, kind, requirement)
        rules: Sequence[Rule],
        setups: Sequence[SetupClaim],
        facts: Mapping[str, Any],
    ):
        self.members = list(members)
        self.rules = list(rules)
        self.setups = list(setups)
        self.facts = dict(facts)
        self.graph = self._graph()

    def _graph(self) -> nx.Graph:
        import networkx as nx  # only an explained conflict pays for networkx (~0.15 s)

        g = nx.Graph()
        for name, kind, expr in self.members:
            g.add_node(("claim", name), kind=kind)
            for p in expr.paths():
                g.add_edge(("claim", name), ("option", p))
        for rule in self.rules:
            g.add_node(("rule", rule.id), kind="rule")
            for p in rule.expr.paths():
                g.add_edge(("rule", rule.id), ("option", p))
        return g

    def edges(self) -> tuple[tuple[str, str, str], ...]:
        """(claim, rule, option) for each option a claim and a rule share; rule-to-rule
        links appear as (rule, rule, option)."""
        out = set()
        nodes = sorted(n for n in self.graph if n[0] != "option")
        for i, a in enumerate(nodes):
            for b in nodes[i + 1 :]:
                if a[0] == "claim" and b[0] == "claim":
                    continue
                shared = set(self.graph[a]) & set(self.graph[b])
                for opt in sorted(shared):
                    first, second = (a, b) if a[0] == "claim" or b[0] == "rule" else (b, a)
                    out.add((first[1], second[1], opt[1]))
        return tuple(sorted(out))

    def order(self) -> list[tuple[str, str]]:
        """Claims and rules in breadth-first order from the first claim, through options."""
        start = [("claim", n) for n, _, _ in self.members] or [("rule", r.id) for r in self.rules]
        seen: list[tuple[str, str]] = []
        import networkx as nx  # loaded by _graph already; named here for bfs_tree

        for root in sorted(start):
            if root in seen or root not in self.graph:
                continue
            for node in nx.bfs_tree(self.graph, root, sort_neighbors=sorted):
                if node[0] != "option" and node not in seen:
                    seen.append(node)
        for node in sorted(self.graph):
            if node[0] != "option" and node not in seen:
                seen.append(node)
        return seen

    # -- propagation
    def sentence(self) -> str:
        """One sentence: what each claim needs, what the rules derive from it (values
        propagated along the graph, setups and facts included), and where two of them
        clash. When propagation finds no clash (the conflict needs case analysis or
        arithmetic), it lists the claims and rules in graph order instead."""
        self._clash_value: Any = None
        self._clash_piece: Expr | None = None
        known: dict[str, Any] = {}
        origin: dict[str, _Origin] = {}
        for s in self.setups:
            for p, v in sorted(s.fixes.items()):
                known[p], origin[p] = v, _Origin("setup", s.name)
        for p, v in self.facts.items():
            if p not in known:
                known[p], origin[p] = v, _Origin("fact")
        order = self.order()
        exprs = {n: e for n, _, e in self.members}
        by_rule = {r.id: r for r in self.rules}
        clash: tuple[str, ...] | None = None

        def assign(p: str, v: Any, why: _Origin) -> tuple[str, ...] | None:
            if p in known:
                if known[p] != v:
                    return ("option", p, repr(v), why.kind, why.name, *why.premises)
                return None
            known[p], origin[p] = v, why
            return None

        for kind, name in order:
            if kind == "claim":
                for p, v in _assignments(exprs[name]):
                    clash = clash or assign(p, v, _Origin("claim", name))
        changed = True
        while clash is None and changed:
            changed = False
            for kind, name in order:
                if clash is not None:
                    break
                pieces = _pieces(exprs[name]) if kind == "claim" else _pieces(by_rule[name].expr)
                for piece in pieces:
                    state = _partial(piece, known)
                    if state is False:
                        clash = (kind, name, str(piece))
                        self._clash_piece = piece
                        break
                    if kind == "rule" and isinstance(piece, Implies):
                        if _partial(piece.condition, known) is True:
                            for p, v in _assignments(piece.then):
                                if p in known and known[p] == v:
                                    continue
                                why = _Origin("rule", name, tuple(sorted(piece.condition.paths())))
                                result = assign(p, v, why)
                                if result is not None:
                                    clash = result
                                    self._clash_value = v
                                    break
                                changed = True
                    elif kind == "rule":
                        for p, v in _assignments(piece):
                            if p not in known:
                                assign(p, v, _Origin("rule", name, ()))
                                changed = True
                    if clash is not None:
                        break
        return self._render(clash, known, origin)

    def _render(self, clash, known, origin) -> str:
        steps: list[str] = []
        said: set[tuple[str, str]] = set()
        rules = {r.id: r for r in self.rules}
        exprs = {n: e for n, _, e in self.members}
        setups = {s.name: s for s in self.setups}

        def claim_step(name: str) -> None:
            if ("claim", name) not in said:
                said.add(("claim", name))
                steps.append(f"`{name}` needs {exprs[name]}")

        def explain(path: str, seen: frozenset[str] = frozenset()) -> None:
            why = origin.get(path)
            if why is None or path in seen:
                return
            if why.kind == "claim":
                claim_step(why.name)
            elif why.kind == "setup":
                if ("setup", why.name) not in said:
                    said.add(("setup", why.name))
                    fixes = ", ".join(
                        f"{p} = {show_value(v)}" for p, v in sorted(setups[why.name].fixes.items())
                    )
                    steps.append(f"the setup `{why.name}` fixes {fixes}")
            elif why.kind == "fact":
                if ("fact", path) not in said:
                    said.add(("fact", path))
                    steps.append(f"{path} is {show_value(known[path])} (a fact)")
            elif why.kind == "rule":
                for premise in why.premises:
                    explain(premise, seen | {path})
                key = ("derived", f"{why.name}:{path}")
                if key not in said:
                    said.add(key)
                    steps.append(
                        f"rule {why.name} says {rules[why.name].text}, "
                        f"so {path} = {show_value(known[path])}"
                    )

        if clash is None:
            for kind, name in self.order():
                if kind == "claim":
                    claim_step(name)
                else:
                    steps.append(f"rule {name} says {rules[name].text}")
            return self._finish(steps, "together")
        if clash[0] == "option":
            _, path, _, kind, name, *premises = clash
            explain(path)
            if kind == "claim":
                claim_step(name)
            else:
                for premise in premises:
                    explain(premise)
                steps.append(
                    f"rule {name} says {rules[name].text}, "
                    f"so {path} = {show_value(self._clash_value)}"
                )
        else:
            kind, name, _ = clash
            piece = self._clash_piece
            # what triggers the rule first, then what it then contradicts
            first = piece.condition.paths() if isinstance(piece, Implies) else frozenset()
            for p in [*sorted(first), *sorted(piece.paths() - first)]:
                explain(p)
            if kind == "claim":
                claim_step(name)
                if str(piece) != str(exprs[name]):
                    steps.append(f"and {piece} fails")
            elif isinstance(piece, Implies) and _partial(piece.condition, known) is True:
                steps.append(f"rule {name} says {rules[name].text}, so it needs {piece.then}")
            else:
                steps.append(f"rule {name} says {rules[name].text}")
        for name_, _, _ in self.members:  # a claim the propagation did not reach
            if ("claim", name_) not in said:
                steps.insert(0, f"`{name_}` needs {exprs[name_]}")
        return self._finish(steps, "")

    def _finish(self, steps: list[str], lead: str) -> str:
        n = len(self.members)
        if n == 0:
            end = "so the setup facts contradict the rules"
        else:
            end = (
                ("so they cannot both hold" if n == 2 else "so they cannot all hold")
                if n > 1
                else "so it cannot hold"
            )
        if lead:
            end = end.replace("so ", f"so, {lead}, ", 1)
        text = "; ".join(steps + [end])
        return text
