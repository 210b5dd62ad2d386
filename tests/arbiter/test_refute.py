"""Exhaustive refutation of a small core (arbiter/explain/refute.py): True only when no
combination of the options read satisfies every item, checked against CP-SAT and
against enumeration over the same options."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter import ConflictError, arbitrate, func, load_claims
from arbiter.explain.refute import (
    MAX_COMBINATIONS,
    Item,
    domain_values,
    satisfiable,
)
from arbiter.explain.resolved import ResolutionExplainer
from constraints.expr import all_of, any_of, eq, ge, gt, implies, le, lin, lt, not_, one_of
from constraints.schema import EngineConfig, lookup

from .test_properties import BOOL_PATHS, instances

SCENARIO = Path(__file__).resolve().parents[2] / "arbiter" / "scenarios" / "server_h100.yaml"
TP = "parallel_config.tensor_parallel_size"
RF = "plugin_config.reduce_fusion"
UB = "plugin_config.user_buffer"
CHUNK = "scheduler_config.context_chunking_policy"
BATCH = "build_config.max_batch_size"


def _as_items(exprs, facts=frozenset()) -> list[Item]:
    return [Item(e, frozenset(p for p in e.paths() if p not in facts)) for e in exprs]


def _refutes(*exprs) -> bool:
    return satisfiable(_as_items(exprs), EngineConfig().flat()) is False


def test_a_chain_of_implications_against_a_pinned_integer_is_refuted():
    # the realistic scenario's user_buffer reason: tp is pinned to 1 by an equality
    items = [
        eq(UB, True),
        eq(TP, 1),
        implies(eq(RF, True), gt(TP, 1)),
        implies(eq(UB, True), eq(RF, True)),
    ]
    assert _refutes(*items)
    # without any one of them some combination holds
    for i in range(len(items)):
        assert not _refutes(*items[:i], *items[i + 1 :])


def test_an_integer_compared_with_constants_is_tried_around_them():
    assert domain_values(TP) is None  # too wide to try whole
    items = [gt(TP, 4), implies(eq(RF, True), le(TP, 4)), eq(RF, True)]
    assert satisfiable(_as_items(items), EngineConfig().flat()) is False
    assert satisfiable(_as_items(items[:2]), EngineConfig().flat()) is True


def test_a_sum_of_two_wide_options_is_not_decided():
    items = [gt(lin({TP: 1, BATCH: 1}), 4), eq(RF, True)]
    assert satisfiable(_as_items(items), EngineConfig().flat()) is None
    assert not _refutes(*items)


def test_enums_and_nullable_flags_take_every_value():
    spec = lookup(CHUNK)
    assert set(domain_values(CHUNK)) >= set(spec.domain.values)
    every = [~eq(CHUNK, v) for v in domain_values(CHUNK)]
    assert _refutes(*every)
    assert not _refutes(*every[1:])


def test_too_many_combinations_give_no_proof():
    paths = BOOL_PATHS[: MAX_COMBINATIONS.bit_length()]
    assert 2 ** len(paths) > MAX_COMBINATIONS
    # a contradiction on the first option, next to items that only read the others (an
    # equality would pin its option to one value, so these are implications)
    first = [
        implies(eq(paths[0], True), eq(paths[0], False)),
        implies(eq(paths[0], False), eq(paths[0], True)),
    ]
    others = [implies(eq(p, True), eq(p, True)) for p in paths[1:]]
    assert not _refutes(*first, *others)
    assert _refutes(*first)


@st.composite
def _items(draw):
    paths = draw(st.permutations(BOOL_PATHS))[: draw(st.integers(1, 4))]

    def literal():
        return eq(draw(st.sampled_from(paths)), draw(st.booleans()))

    def item():
        shape = draw(st.integers(0, 2))
        if shape == 0:
            return literal()
        if shape == 1:
            return all_of(literal(), literal())
        return implies(literal(), literal())

    return paths, [item() for _ in range(draw(st.integers(1, 5)))]


@given(_items())
@settings(max_examples=30, deadline=None)
def test_agrees_with_enumeration(case):
    paths, items = case
    base = EngineConfig().flat()
    feasible = any(
        all(e.evaluate({**base, **dict(zip(paths, bits, strict=True))}) for e in items)
        for bits in itertools.product([False, True], repeat=len(paths))
    )
    assert satisfiable(_as_items(items), base) is feasible


def test_the_realistic_scenarios_reasons_need_no_solver_check():
    # its three dropped claims clash with a claim through one or two plugin rules over a
    # few flags, tensor parallelism (pinned) and the quantization (an enum): trying
    # values shows each neighbourhood infeasible with only one minimal reason, which is
    # then the reason whatever the deletion order: no model, no solver check
    r = arbitrate(load_claims(SCENARIO), profile="trtllm-tensorrt")
    reasons = {d.name: d.reason for d in r.dropped}
    assert reasons["user_buffer"].rules == (
        "plugin.reduce-fusion-needs-tensor-parallel",
        "plugin.user-buffer-needs-reduce-fusion",
    )
    assert reasons["streaming_window"].winners == ("block_reuse",)
    assert len(reasons) == 3
    assert r._context.small_calls == r._context.small_checks == 0


def _mixed_atom(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return eq(draw(st.sampled_from([RF, UB])), draw(st.booleans()))
    if kind == 1:
        op = draw(st.sampled_from([gt, ge, le, lt, eq]))
        return op(TP, draw(st.integers(1 if op is eq else 0, 10)))  # tp's domain starts at 1
    if kind == 2:
        return one_of(TP, draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    if kind == 3:
        spec = lookup(CHUNK)
        return eq(CHUNK, draw(st.sampled_from(spec.domain.values)))
    return ge(lin({TP: draw(st.sampled_from([2, -3])), "device.count": 1}), 5)


@st.composite
def _mixed(draw):
    def item():
        shape = draw(st.integers(0, 3))
        a, b = _mixed_atom(draw), _mixed_atom(draw)
        return [a, all_of(a, b), implies(a, b), any_of(not_(a), b)][shape]

    return [item() for _ in range(draw(st.integers(1, 4)))]


@given(_mixed())
@settings(max_examples=40, deadline=None)
def test_decides_integers_and_enums_as_the_solver_does(items):
    # a fact (the GPU count) inside a comparison counts as a constant
    answer = satisfiable(_as_items(items, facts={"device.count"}), EngineConfig().flat())
    assert answer is not None
    claims = [func(f"c{i}", e) for i, e in enumerate(items)]
    try:
        arbitrate(claims, rules=[])
        solver = True
    except ConflictError:
        solver = False
    assert answer is solver, [str(e) for e in items]


@given(instances(max_perf=8, max_options=8, funcs=(0, 3)))
@settings(max_examples=25, deadline=None)
def test_drop_reasons_are_the_ones_the_solver_checks_alone_give(inst):
    # trying values only skips models and checks whose answer is "feasible" (and the
    # confirmation of a core): with it turned off, every reason is the same
    paths, rules, claims = inst
    try:
        tried = arbitrate(claims, rules=rules)
    except ConflictError:
        return
    with_values = [d.reason for d in tried.dropped]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ResolutionExplainer, "_holds", lambda self, claim, setups, keys: None)
        m.setattr(ResolutionExplainer, "_refutes", lambda self, claim, setups, keys: False)
        alone = [d.reason for d in arbitrate(claims, rules=rules).dropped]
    assert with_values == alone
