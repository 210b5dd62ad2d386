"""Exhaustive refutation of a small core (arbiter/explain/refute.py): True only when no
combination of the options read satisfies every item, checked against CP-SAT and
against enumeration over the same options."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter import arbitrate, load_claims
from arbiter.explain.refute import MAX_COMBINATIONS, domain_values, refutes
from constraints.expr import all_of, eq, gt, implies
from constraints.schema import EngineConfig, lookup

from .test_properties import BOOL_PATHS

SCENARIO = Path(__file__).resolve().parents[2] / "arbiter" / "scenarios" / "server_h100.yaml"
TP = "parallel_config.tensor_parallel_size"
RF = "plugin_config.reduce_fusion"
UB = "plugin_config.user_buffer"
CHUNK = "scheduler_config.context_chunking_policy"


def _reads(exprs) -> list[frozenset[str]]:
    return [frozenset(e.paths()) for e in exprs]  # these items read no fact


def _refutes(*exprs) -> bool:
    return refutes(exprs, _reads(exprs), EngineConfig().flat())


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


def test_an_unpinned_wide_integer_is_not_enumerated():
    assert domain_values(TP) is None
    # infeasible, but tp's domain is too wide to try: no proof, the solver decides
    assert not _refutes(gt(TP, 4), implies(eq(RF, True), ~gt(TP, 4)), eq(RF, True))


def test_enums_and_nullable_flags_take_every_value():
    spec = lookup(CHUNK)
    assert set(domain_values(CHUNK)) >= set(spec.domain.values)
    every = [~eq(CHUNK, v) for v in domain_values(CHUNK)]
    assert _refutes(*every)
    assert not _refutes(*every[1:])


def test_too_many_combinations_give_no_proof():
    paths = BOOL_PATHS[: MAX_COMBINATIONS.bit_length()]  # 2^n > MAX_COMBINATIONS
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
@settings(max_examples=60, deadline=None)
def test_agrees_with_enumeration(case):
    paths, items = case
    base = EngineConfig().flat()
    feasible = any(
        all(e.evaluate({**base, **dict(zip(paths, bits, strict=True))}) for e in items)
        for bits in itertools.product([False, True], repeat=len(paths))
    )
    assert refutes(items, _reads(items), base) is (not feasible)


def test_the_realistic_scenarios_reasons_take_one_check_each():
    # its three dropped claims clash with a setup through one or two plugin rules: each
    # reason's core is confirmed by enumeration, so one solver check per reason remains
    r = arbitrate(load_claims(SCENARIO), profile="trtllm-tensorrt")
    reasons = {d.name: d.reason for d in r.dropped}
    assert reasons["user_buffer"].rules == (
        "plugin.reduce-fusion-needs-tensor-parallel",
        "plugin.user-buffer-needs-reduce-fusion",
    )
    assert reasons["streaming_window"].winners == ("block_reuse",)
    assert r._context.small_checks == len(reasons) == 3
