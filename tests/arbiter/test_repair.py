"""The drop-reason witness's repairs (arbiter/explain/repair.py): proposals that make an
expression hold, or None; the witness re-evaluates whatever they propose."""

from __future__ import annotations

from arbiter.explain.repair import suggest
from constraints.expr import all_of, eq, ge, gt, implies, le, lin, one_of, ref
from constraints.schema import EngineConfig

TP = "parallel_config.tensor_parallel_size"
RF = "plugin_config.reduce_fusion"
UB = "plugin_config.user_buffer"
REUSE = "kv_cache_config.enable_block_reuse"
CHUNK = "scheduler_config.context_chunking_policy"
BATCH = "build_config.max_batch_size"


def _values(**changes) -> dict:
    values = EngineConfig().flat()
    values.update({k.replace("__", "."): v for k, v in changes.items()})
    return values


def test_equalities_value_sets_and_negations_are_set():
    values = _values()
    assert suggest(eq(UB, True), values, ()) == {UB: True}
    assert suggest(eq(UB, False), values, ()) == {}  # holds already
    assert suggest(~eq(REUSE, True), {**values, REUSE: True}, ()) == {REUSE: False}
    found = suggest(~eq(CHUNK, values[CHUNK]), values, ())
    assert found is not None and found[CHUNK] != values[CHUNK]
    assert suggest(one_of(TP, [2, 4]), values, ()) == {TP: 2}


def test_a_comparison_moves_its_one_free_option_to_the_nearest_bound():
    values = {**_values(), TP: 1, BATCH: 8}
    assert suggest(gt(TP, 1), values, ()) == {TP: 2}
    assert suggest(le(TP, 0), values, ()) is None  # outside the domain
    # 2 * batch - tp >= 30 with tp held: batch >= 15.5, so 16
    assert suggest(ge(lin({BATCH: 2, TP: -1}), 30), values, (TP,)) == {BATCH: 16}
    # -3 * batch >= -30: batch <= 10 holds at 8; at 12 it moves to 10
    assert suggest(ge(lin({BATCH: -3}), -30), {**values, BATCH: 12}, ()) == {BATCH: 10}
    assert suggest(ge(ref(BATCH), ref(TP)), {**values, BATCH: 1, TP: 4}, ()) is None  # two free


def test_implications_and_conjunctions_are_repaired_through_their_parts():
    values = _values()
    rule = implies(eq(UB, True), eq(RF, True))
    assert suggest(rule, {**values, UB: True}, {UB}) == {RF: True}
    both = all_of(eq(RF, True), gt(TP, 1))
    assert suggest(both, values, ()) == {RF: True, TP: 2}
    assert suggest(eq(UB, True), values, {UB}) is None  # a kept option is never changed
