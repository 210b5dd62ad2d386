"""Expressions: construction checks, evaluation semantics and JSON round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from constraints.errors import DomainError, ExpressionError, UnknownPath
from constraints.expr import (
    FALSE,
    TRUE,
    Prod,
    all_of,
    any_of,
    eq,
    from_json,
    ge,
    implies,
    le,
    lin,
    ne,
    not_,
    one_of,
    ref,
)
from constraints.schema import EngineConfig

VALUES = EngineConfig().flat()


def test_constructors_validate_paths_and_values():
    with pytest.raises(UnknownPath):
        eq("kv_cache_config.nope", True)
    with pytest.raises(DomainError):
        eq("kv_cache_config.enable_block_reuse", 3)
    with pytest.raises(ExpressionError):
        ref("scheduler_config.capacity_scheduler_policy") + 1  # enums cannot be summed
    with pytest.raises(ExpressionError):
        one_of("build_config.max_beam_width", 4)


def test_linear_sums_and_products_evaluate():
    values = dict(VALUES, **{"build_config.max_batch_size": 64, "build_config.max_draft_len": 4})
    budget = ref("build_config.max_batch_size") * (ref("build_config.max_draft_len") + 1)
    assert budget.value(values) == 320
    assert ge("build_config.max_num_tokens", budget).evaluate(
        {**values, "build_config.max_num_tokens": 320}
    )
    assert not ge("build_config.max_num_tokens", budget).evaluate(
        {**values, "build_config.max_num_tokens": 319}
    )
    total = lin({"build_config.max_batch_size": 2, "build_config.max_draft_len": -1}, 3)
    assert total.value(values) == 2 * 64 - 4 + 3
    weighed = Prod(budget.a, budget.b, scale=3, offset=-7)
    assert weighed.value(values) == 3 * 320 - 7
    assert str(weighed) == "3 * build_config.max_batch_size * (build_config.max_draft_len + 1) - 7"
    with pytest.raises(ExpressionError):
        Prod(budget.a, budget.b, scale=0)


def test_unset_nullable_options():
    values = dict(VALUES)
    assert values["kv_cache_config.max_tokens"] is None
    assert eq("kv_cache_config.max_tokens", None).evaluate(values)
    assert not ge("kv_cache_config.max_tokens", 1).evaluate(values)
    assert not le("kv_cache_config.max_tokens", 1).evaluate(values)
    assert ne("kv_cache_config.max_tokens", 5).evaluate(values)


def test_fraction_compares_in_its_own_units():
    expr = ge("kv_cache_config.free_gpu_memory_fraction", 0.85)
    assert expr.evaluate(VALUES)  # default 0.9
    assert str(expr) == "kv_cache_config.free_gpu_memory_fraction >= 0.85"


def test_connectives_fold_constants():
    a = eq("plugin_config.streamingllm", True)
    assert all_of(a, TRUE) == a
    assert all_of(a, FALSE) == FALSE
    assert any_of(a, TRUE) == TRUE
    assert not_(not_(a)) == a


def test_rendering_reads_like_the_rule():
    expr = implies(
        eq("plugin_config.streamingllm", True), eq("plugin_config.use_paged_context_fmha", False)
    )
    assert (
        str(expr)
        == "if plugin_config.streamingllm = True then plugin_config.use_paged_context_fmha = False"
    )


BOOLS = [
    "plugin_config.streamingllm",
    "kv_cache_config.enable_block_reuse",
    "plugin_config.context_fmha",
]
atoms = st.one_of(
    st.builds(eq, st.sampled_from(BOOLS), st.booleans()),
    st.builds(ge, st.just("build_config.max_batch_size"), st.integers(1, 5000)),
    st.builds(le, st.just("build_config.max_num_tokens"), st.integers(1, 9000)),
    st.builds(
        one_of,
        st.just("quant_config.quant_algo"),
        st.lists(st.sampled_from([None, "FP8", "NVFP4"]), min_size=1),
    ),
    st.just(
        ge(
            "build_config.max_num_tokens",
            ref("build_config.max_batch_size") * (ref("build_config.max_draft_len") + 1),
        )
    ),
    st.builds(
        lambda k, c: ge(
            "build_config.max_num_tokens",
            Prod(ref("build_config.max_batch_size"), ref("build_config.max_draft_len") + 1, k, c),
        ),
        st.integers(1, 5),
        st.integers(-100, 100),
    ),
)
exprs = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(lambda xs: all_of(*xs), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda xs: any_of(*xs), st.lists(inner, min_size=2, max_size=3)),
        st.builds(not_, inner),
        st.builds(implies, inner, inner),
    ),
    max_leaves=8,
)


@given(exprs)
def test_json_round_trip_preserves_meaning(expr):
    back = from_json(expr.to_json())
    assert back == expr
    assert back.evaluate(VALUES) == expr.evaluate(VALUES)


def test_from_json_rejects_unknown_operators():
    with pytest.raises(ExpressionError, match="unknown expression operator"):
        from_json({"xor": []})
    with pytest.raises(ExpressionError):
        from_json({"eq": "not-a-pair"})
