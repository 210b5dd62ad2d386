"""Edge values at the boundary: the one validator (constraints.edge) as the API sees it."""

from __future__ import annotations

import json
import math

import pytest

from arbiter import InvalidClaim, arbitrate, load_claims
from arbiter.claims import claim_from_dict
from constraints.edge import (
    INT_LIMIT,
    MAX_DEPTH,
    MAX_EXPR_DEPTH,
    MAX_WEIGHT,
    EdgeError,
    check_value,
    parse_json,
    parse_yaml,
    safe_dumps,
)
from constraints.errors import ExpressionError
from constraints.expr import from_json
from constraints.schema import options


def func(requires, name="c"):
    return {"kind": "func", "name": name, "requires": requires}


def perf(requires, name="p", **extra):
    return {"kind": "perf", "name": name, "requires": requires, **extra}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_everywhere(bad):
    for claim in (
        func({"build_config.max_batch_size": bad}),
        func({"build_config.max_batch_size": {"ge": bad}}),
        func({"kv_cache_config.free_gpu_memory_fraction": bad}),
        perf({"plugin_config.use_fused_mlp": True}, weight=bad),
    ):
        with pytest.raises(InvalidClaim) as err:
            arbitrate([claim])
        assert "not finite" in str(err.value) or "int" in str(err.value)
    with pytest.raises(EdgeError, match="not finite"):
        parse_json('{"a": NaN}')
    with pytest.raises(EdgeError, match="overflows"):
        parse_json('{"a": 1e400}')
    with pytest.raises(EdgeError, match="not finite"):
        parse_yaml("a: .nan")


def test_integers_beyond_the_solver_bound_are_refused_with_the_bound_named():
    for value in (2**63, -(2**64), 10**30):
        with pytest.raises(InvalidClaim) as err:
            arbitrate([func({"build_config.max_batch_size": {"ge": value}})])
        assert "INT_LIMIT" in str(err.value)
    # within int64 but a comparison against it could overflow a sum: refused the same way
    with pytest.raises(InvalidClaim, match="INT_LIMIT"):
        arbitrate([func({"cmp": [{"sum": [[2**61, "kv_cache_config.host_cache_size"]]}, ">=", 1]})])


def test_weights_near_2_62_are_refused_and_max_weight_solves():
    with pytest.raises(InvalidClaim, match="MAX_WEIGHT"):
        arbitrate([perf({"plugin_config.use_fused_mlp": True}, weight=2**61)])
    with pytest.raises(InvalidClaim, match="MAX_WEIGHT"):
        arbitrate(
            [
                perf(
                    {"plugin_config.use_fused_mlp": True},
                    weight=5,
                    alternatives=[
                        {"requires": {"plugin_config.context_fmha": True}, "weight": 2**41}
                    ],
                )
            ]
        )
    claims = [
        perf({"plugin_config.use_fused_mlp": True}, name=f"p{i}", weight=MAX_WEIGHT)
        for i in range(3)
    ]
    assert arbitrate(claims).kept_names == ("p0", "p1", "p2")


def test_every_product_of_two_paths_is_solved_or_refused_clearly():
    from arbiter import ConflictError
    from constraints.expr import ref

    numeric = [s.path for s in options() if s.domain.kind in ("int", "fraction")]
    size = {p: ref(p).magnitude() for p in numeric}
    refused = 0
    for a in numeric:
        fits = [b for b in numeric if size[a] * size[b] <= INT_LIMIT]
        for b in numeric:
            if b not in fits:  # refused before solving, naming the bound
                with pytest.raises(InvalidClaim, match="INT_LIMIT"):
                    claim_from_dict(func({"cmp": [{"mul": [a, b]}, ">=", 0]}), 0)
                refused += 1
        # the largest product that fits compiles and solves (or conflicts), never overflows
        b = max(fits, key=lambda p: (size[p], p))
        try:
            arbitrate([func({"cmp": [{"mul": [a, b]}, ">=", 0]})], time_limit_s=5)
        except ConflictError:
            pass  # an unset nullable option makes the comparison false: a real answer
    assert refused  # host_cache_size (up to 2^42) squared is refused


def test_lone_surrogates_are_refused_in_names_paths_and_values():
    for claim in (
        func({"plugin_config.use_fused_mlp": True}, name="\ud800"),
        func({"plugin_config.use_fused_mlp\udfff": True}),
        func({"kv_cache_config.dtype": "fp8\ud800"}),
    ):
        with pytest.raises(InvalidClaim, match="Unicode") as err:
            claim_from_dict(claim, 0)
        str(err.value).encode("utf-8")  # the message itself is valid text


def test_nesting_depth_is_limited_and_named():
    deep = {"eq": ["plugin_config.use_fused_mlp", True]}
    for _ in range(MAX_EXPR_DEPTH + 1):
        deep = {"not": deep}
    with pytest.raises(InvalidClaim, match="MAX_EXPR_DEPTH"):
        claim_from_dict(func(deep), 0)
    nested: object = 1
    for _ in range(MAX_DEPTH + 1):
        nested = [nested]
    with pytest.raises(EdgeError, match="MAX_DEPTH"):
        check_value(nested)
    with pytest.raises(EdgeError, match="MAX_DEPTH"):
        parse_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(EdgeError, match="MAX_DEPTH"):
        parse_yaml("[" * 5_000 + "]" * 5_000)


def test_no_silent_coercion():
    with pytest.raises(InvalidClaim, match="'const' takes true or false"):
        claim_from_dict(func({"const": "false"}), 0)
    assert claim_from_dict(func({"const": False}), 0).expr.evaluate({}) is False
    with pytest.raises(InvalidClaim, match="must be an integer"):
        claim_from_dict(func({"cmp": [{"sum": [[1.7, "build_config.max_batch_size"]]}, ">=", 8]}))
    with pytest.raises(InvalidClaim, match="must be an integer"):
        claim_from_dict(
            func({"cmp": [{"mul": ["build_config.max_batch_size", 2], "scale": True}, ">=", 8]})
        )
    with pytest.raises(InvalidClaim, match="weight must be an int"):
        claim_from_dict(perf({"plugin_config.use_fused_mlp": True}, weight=True))
    with pytest.raises(InvalidClaim, match="weight must be an int"):
        load_claims(
            '[{"kind": "perf", "name": "p", "weight": true, "requires": {"plugin_config.use_fused_mlp": true}}]'
        )


def test_yaml_billion_laughs_is_refused_before_expansion():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(EdgeError, match="MAX_YAML_ALIASES"):
        parse_yaml("\n".join(lines))
    with pytest.raises(InvalidClaim, match="MAX_YAML_ALIASES"):
        load_claims("claims: []\n" + "\n".join(lines))


def test_error_payloads_always_encode():
    text = safe_dumps({"value": math.nan, "bad": "\ud800", "obj": object(), "inf": [math.inf]})
    data = json.loads(text)
    assert data["value"] == "nan" and data["inf"] == ["inf"]
    assert INT_LIMIT == 2**62 - 1


def test_expression_errors_carry_the_culprit():
    with pytest.raises(ExpressionError) as err:
        from_json({"cmp": [{"mul": ["kv_cache_config.host_cache_size"] * 2}, ">=", 0]})
    assert "INT_LIMIT = 2^62 - 1" in str(err.value)


def test_in_process_time_limit_is_positive_and_finite():
    import math

    from arbiter import InvalidClaim, arbitrate, func

    claim = func("b", {"build_config.max_batch_size": 8})
    for bad in (math.inf, math.nan, 0, -1, True):
        with pytest.raises(InvalidClaim):
            arbitrate([claim], time_limit_s=bad)
