"""`check_value`'s fast path (`_plainly_valid`) accepts exactly what the exact walk
accepts: generated documents full of edge values get the same answer both ways."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import constraints.edge as edge
from constraints.edge import INT_LIMIT, MAX_DEPTH, EdgeError, check_value

EDGE_INTS = [INT_LIMIT, INT_LIMIT + 1, -INT_LIMIT, -INT_LIMIT - 1, 2**63, 0, True, False]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from(EDGE_INTS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["\ud800", "a\udfffb", "é", "名前", ""]),
)
keys = st.one_of(st.text(max_size=4), st.sampled_from(["\ud800", 1, 2.5, None, True]))
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
    ),
    max_leaves=30,
)


def answer(data: Any, exact: bool, json_only: bool = True) -> str:
    saved = edge._plainly_valid
    if exact:
        edge._plainly_valid = lambda _data: False
    try:
        check_value(data, "body", json_only=json_only)
        return "accepted"
    except EdgeError as exc:
        return f"refused: {exc}"
    finally:
        edge._plainly_valid = saved


@settings(max_examples=400, deadline=None)
@given(documents, st.booleans())
def test_the_fast_path_answers_as_the_exact_walk(data, json_only):
    assert answer(data, exact=False, json_only=json_only) == answer(
        data, exact=True, json_only=json_only
    )


@pytest.mark.parametrize(
    "data",
    [
        {"a": [1, 2.5, "x", None, True]},
        {"a": float("nan")},
        {"a": [INT_LIMIT + 1]},
        {"k\ud800": 1},
        {1: "non-string key"},
        ("a", "tuple"),
        {"f": object()},
        [[[]]] * 3,
    ],
)
def test_named_cases_agree(data):
    assert answer(data, exact=False) == answer(data, exact=True)


def test_depth_and_node_limits_agree():
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    assert answer(deep, exact=False) == answer(deep, exact=True) != "accepted"
    flat = [0] * (edge.MAX_NODES + 1)
    assert answer(flat, exact=False) == answer(flat, exact=True) != "accepted"
