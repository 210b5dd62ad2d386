"""Explanation speed: time to the first minimal conflict and to the full report, for 10, 50
and 200 functional claims, side by side with CPMpy's `mus` and `marco` on the same
instances (CPMpy is optional: `pip install cpmpy`; without it the peer columns say so).

Instances: claims over the schema's Boolean options. A random planted assignment satisfies
every "planted" claim (a disjunction of 1-3 option literals) and every generated rule
(implications the planted assignment satisfies); two injected clusters (two claims and one
rule each) make the whole infeasible, and the planted claims they touch add overlapping
conflicts. Only the generated rules are used, so both tools see the same constraints.

- ours first: build the oracle model and extract one MUS (core-seeded deletion);
- ours full: `explain()` with its default budget (8 conflicts, 8 corrections, each
  correction verified by a full re-solve), rendered as text;
- CPMpy mus: `cpmpy.tools.explain.mus(soft, hard)` on OR-Tools;
- CPMpy marco: `marco(...)` until it has as many MUSes and MCSes as we report, or ends.

Run: python benchmarks/bench_explain.py [--seeds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from arbiter import func
from arbiter.explain import Explainer, explain
from arbiter.solve import prepare_claims, resolve_defaults, resolve_facts
from constraints.expr import And, Eq, Implies, Or, any_of, eq, implies
from constraints.rules import Rule, Source
from constraints.schema import options

BOOL_PATHS = [s.path for s in options() if s.domain.kind == "bool" and not s.fact]
SRC = Source("bench", "generated")


def instance(n: int, seed: int):
    rng = random.Random(seed)
    planted = {p: rng.random() < 0.5 for p in BOOL_PATHS}
    rules, claims = [], []
    for j in range(2):  # injected clusters: a = x, b = y, and a rule a = x -> b != y
        a, b = rng.sample(BOOL_PATHS, 2)
        x, y = rng.random() < 0.5, rng.random() < 0.5
        rules.append(Rule(f"bench.link{j}", f"link {j}", SRC, implies(eq(a, x), eq(b, not y))))
        claims += [func(f"inject{j}a", eq(a, x)), func(f"inject{j}b", eq(b, y))]
    for i in range(max(1, n // 10)):
        a, b = rng.sample(BOOL_PATHS, 2)
        then = eq(b, planted[b])
        rules.append(
            Rule(f"bench.rule{i}", f"rule {i}", SRC, implies(eq(a, rng.random() < 0.5), then))
        )
    while len(claims) < n:
        paths = rng.sample(BOOL_PATHS, rng.randint(1, 3))
        lits = [eq(p, planted[p] if k == 0 else rng.random() < 0.5) for k, p in enumerate(paths)]
        claims.append(func(f"c{len(claims):03d}", any_of(*lits)))
    return claims, rules


# ---------------------------------------------------------------------------- ours
def ours_first(claims, rules) -> tuple[float, int]:
    t0 = time.perf_counter()
    ordered = prepare_claims(claims)
    facts, source = resolve_facts(ordered)
    ex = Explainer(ordered, rules, facts, resolve_defaults(facts, None), source)
    found = ex.first_conflict()
    return (time.perf_counter() - t0) * 1000, len(found or ())


def ours_full(claims, rules):
    t0 = time.perf_counter()
    explanation = explain(claims, rules=rules)
    explanation.render("text")
    return (time.perf_counter() - t0) * 1000, explanation


# ---------------------------------------------------------------------------- CPMpy
def to_cpmpy(expr, bv):
    import cpmpy as cp

    if isinstance(expr, Eq):
        return bv[expr.path] if expr.value else ~bv[expr.path]
    if isinstance(expr, Or):
        return cp.any([to_cpmpy(i, bv) for i in expr.items])
    if isinstance(expr, And):
        return cp.all([to_cpmpy(i, bv) for i in expr.items])
    if isinstance(expr, Implies):
        return to_cpmpy(expr.condition, bv).implies(to_cpmpy(expr.then, bv))
    raise TypeError(type(expr).__name__)


def cpmpy_times(claims, rules, want_mus: int, want_mcs: int):
    import cpmpy as cp
    from cpmpy.tools.explain import marco, mus

    bv = {p: cp.boolvar(name=p.replace(".", "_")) for p in BOOL_PATHS}
    soft = [to_cpmpy(c.expr, bv) for c in claims]
    hard = [to_cpmpy(r.expr, bv) for r in rules]
    t0 = time.perf_counter()
    first = mus(soft=soft, hard=hard, solver="ortools")
    t_mus = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    muses = mcses = 0
    for kind, _ in marco(soft=soft, hard=hard, solver="ortools"):
        if kind == "MUS":
            muses += 1
        else:
            mcses += 1
        if muses >= want_mus and mcses >= want_mcs:
            break
    t_marco = (time.perf_counter() - t0) * 1000
    return t_mus, len(first), t_marco, muses, mcses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    try:
        import cpmpy  # noqa: F401

        have_peer = True
    except ImportError:
        have_peer = False
        print("CPMpy is not installed (pip install cpmpy): peer columns are skipped")
    warm_claims, warm_rules = instance(10, 999)
    ours_full(warm_claims, warm_rules)  # imports and first-solve costs
    if have_peer:
        cpmpy_times(warm_claims, warm_rules, 1, 1)
    header = (
        f"{'claims':>6} {'ours first':>11} {'ours full':>10} {'found':>9} "
        f"{'cpmpy mus':>10} {'cpmpy marco':>12} {'found':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in (10, 50, 200):
        rows = []
        for seed in range(args.seeds):
            claims, rules = instance(n, seed)
            first_ms, _ = ours_first(claims, rules)
            full_ms, ex = ours_full(claims, rules)
            peer = (
                cpmpy_times(claims, rules, len(ex.conflicts), len(ex.corrections))
                if have_peer
                else None
            )
            rows.append((first_ms, full_ms, len(ex.conflicts), len(ex.corrections), peer))
        med = statistics.median
        first = med(r[0] for r in rows)
        full = med(r[1] for r in rows)
        found = f"{med(r[2] for r in rows):.0f}/{med(r[3] for r in rows):.0f}"
        if have_peer:
            p_mus = f"{med(r[4][0] for r in rows):.1f} ms"
            p_marco = f"{med(r[4][2] for r in rows):.1f} ms"
            p_found = f"{med(r[4][3] for r in rows):.0f}/{med(r[4][4] for r in rows):.0f}"
        else:
            p_mus = p_marco = p_found = "missing"
        print(
            f"{n:>6} {first:>8.1f} ms {full:>7.1f} ms {found:>9} {p_mus:>10} {p_marco:>12} {p_found:>9}"
        )
    print("medians over", args.seeds, "seeds; found = conflicts/corrections (MUS/MCS)")
    print("targets: ours first < 50 ms at 50 claims, ours full < 1000 ms")


if __name__ == "__main__":
    main()
