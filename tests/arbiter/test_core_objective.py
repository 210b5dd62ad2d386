"""`arbiter.core.Objective` writes the same proto as CP-SAT's own expression API.

The stages set their objectives and pin their optima through `Objective`, which writes
{variable index: coefficient} straight into the model's proto; the search depends on that
proto, so it must be the one `maximize`/`minimize` and `add(expr == value)` would write.
"""

from __future__ import annotations

import random

import pytest
from ortools.sat.python import cp_model

from arbiter.core import Objective


def _model_and_terms(seed: int):
    rng = random.Random(seed)
    model = cp_model.CpModel()
    bools = [model.new_bool_var(f"b{i}") for i in range(12)]
    ints = [model.new_int_var(0, 1000, f"x{i}") for i in range(4)]
    terms = []
    for _ in range(20):
        if rng.random() < 0.7:
            var = rng.choice(bools)
            if rng.random() < 0.5:
                var = ~var
        else:
            var = rng.choice(ints)
        terms.append((var, rng.randint(-9, 9)))
    return model, terms


def _copy(model):
    clone = cp_model.CpModel()
    clone.proto.copy_from(model.proto)
    return clone


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sense", [1, -1])
def test_objective_and_pin_match_the_expression_api(seed, sense):
    model, terms = _model_and_terms(seed)
    objective = Objective.of(terms)
    expr = sum(coef * var for var, coef in terms)

    ours, theirs = _copy(model), _copy(model)
    objective.set_on(ours, sense)
    if sense > 0:
        theirs.maximize(expr)
    else:
        theirs.minimize(expr)
    a, b = ours.proto.objective, theirs.proto.objective
    assert list(a.vars) == list(b.vars)
    assert list(a.coeffs) == list(b.coeffs)
    assert (a.offset, a.scaling_factor) == (b.offset, b.scaling_factor)

    objective.pin(ours, 17)
    theirs.add(expr == 17)
    n = len(ours.proto.constraints)
    assert n == len(theirs.proto.constraints)
    pa, pb = ours.proto.constraints[n - 1].linear, theirs.proto.constraints[n - 1].linear
    assert (list(pa.vars), list(pa.coeffs), list(pa.domain)) == (
        list(pb.vars),
        list(pb.coeffs),
        list(pb.domain),
    )


def test_objective_value_reads_as_the_sum():
    model, terms = _model_and_terms(3)
    objective = Objective.of(terms)
    objective.set_on(model, 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    value = sum(coef * solver.value(var) for var, coef in terms)
    assert int(round(solver.objective_value)) == value


def test_folded_stages_keep_their_order():
    """`plus` scales a lower stage under a higher one exactly as the big-M fold does."""
    model = cp_model.CpModel()
    a, b = model.new_bool_var("a"), model.new_bool_var("b")
    high, low = Objective.of([(a, 1)]), Objective.of([(~b, 1)])
    combined = Objective().plus(low, 1).plus(high, 2)
    assert combined.coeffs == {b.index: -1, a.index: 2}
    assert combined.offset == 1
