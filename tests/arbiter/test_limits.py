"""The input limits (`constraints.limits`), enforced before compiling by `arbitrate()`,
and the dialect readers' refusal of a wrong JSON type: issue 31's hostile inputs, each
a typed error naming the limit or the key, never a solver or Python error."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter import InvalidClaim, arbitrate
from arbiter.application.check import check_file
from arbiter.core import Objective, fold
from arbiter.error_entries import ENTRY_FIELDS, entries
from arbiter.errors import DialectError
from constraints.edge import EdgeError, LimitExceeded, check_value
from constraints.limits import (
    BY_NAME,
    INT_LIMIT,
    LIMITS,
    MAX_ALTERNATIVES,
    MAX_CLAIMS,
    MAX_SET_VALUES,
    MAX_WEIGHT,
)

BATCH = "build_config.max_batch_size"


def perf_with_alternatives(count: int, name: str = "p") -> dict:
    alternatives = [{"requires": {BATCH: i + 1}, "weight": 10**6 - 1 - i} for i in range(count)]
    return {
        "kind": "perf",
        "name": name,
        "weight": 10**6,
        "requires": {BATCH: 9999},
        "alternatives": alternatives,
    }


def test_5000_alternatives_are_refused_naming_the_limit():
    """Was: CP-SAT rejected the compiled model (possible integer overflow in objective)."""
    with pytest.raises(InvalidClaim) as info:
        arbitrate([perf_with_alternatives(5000)])
    exc = info.value
    assert exc.limit == f"MAX_ALTERNATIVES = {MAX_ALTERNATIVES}"
    assert exc.claim == "p" and exc.value == 5000
    assert exc.allowed == f"at most {MAX_ALTERNATIVES} alternatives"
    assert "MAX_ALTERNATIVES" in str(exc)


def test_alternatives_at_the_limit_solve():
    resolution = arbitrate([perf_with_alternatives(MAX_ALTERNATIVES)], time_limit_s=10)
    assert resolution.values[BATCH] == 9999  # the claim itself holds


@pytest.mark.parametrize(
    "requires",
    [
        {BATCH: {"one_of": list(range(1, 50_001))}},
        {"one_of": [BATCH, list(range(1, 50_001))]},
    ],
    ids=["predicate", "expression"],
)
def test_one_of_of_50000_values_is_refused_at_once(requires):
    """Was: 17 s to the request's deadline (408). Now refused by its size; the message
    does not echo the values."""
    with pytest.raises(InvalidClaim) as info:
        arbitrate([{"kind": "func", "name": "o", "requires": requires}])
    exc = info.value
    assert exc.limit == f"MAX_SET_VALUES = {MAX_SET_VALUES}"
    assert exc.path == BATCH and exc.value == 50_000
    assert len(str(exc)) < 400


def test_one_of_at_the_limit_solves():
    values = list(range(1, MAX_SET_VALUES + 1))
    resolution = arbitrate([{"kind": "func", "name": "o", "requires": {BATCH: {"one_of": values}}}])
    assert resolution.values[BATCH] in values


def test_claims_over_the_limit_are_refused_before_any_is_read():
    claims = ({"kind": "nope", "name": f"c{i}"} for i in range(MAX_CLAIMS + 1))  # all bad
    with pytest.raises(InvalidClaim) as info:
        arbitrate(claims)
    assert info.value.limit == f"MAX_CLAIMS = {MAX_CLAIMS}"


def test_long_names_keys_and_strings_are_refused():
    with pytest.raises(InvalidClaim) as info:
        arbitrate([{"kind": "func", "name": "n" * 300, "requires": {BATCH: 8}}])
    assert info.value.limit == "MAX_NAME_CHARS = 256"
    with pytest.raises(LimitExceeded) as edge:
        check_value({"k" * 2000: 1}, "doc")
    assert edge.value.name == "MAX_KEY_CHARS" and edge.value.count == 2000
    with pytest.raises(EdgeError) as edge_string:
        check_value({"a": "s" * 70_000}, "doc")
    assert edge_string.value.limit == "MAX_STRING_CHARS = 65536"
    assert edge_string.value.where == "doc.a"


def test_every_bad_claim_is_named_at_once():
    claims = [
        {"kind": "func", "name": "ok", "requires": {BATCH: 8}},
        {"kind": "func", "name": "typo", "requires": {"build_config.max_batch_sise": 8}},
        {"kind": "perf", "name": "w", "weight": 0, "requires": {BATCH: 8}},
        {"kind": "other", "name": "k"},
    ]
    with pytest.raises(InvalidClaim) as info:
        arbitrate(claims)
    found = entries(info.value)
    assert [e["path"] for e in found] == [
        "claims[1].build_config.max_batch_sise",
        "claims[2]",
        "claims[3]",
    ]
    assert found[0]["suggestions"][0] == BATCH
    for item in found:
        assert set(ENTRY_FIELDS) <= set(item) and item["reason"]


def test_fold_counts_every_term_not_only_the_range():
    """A perf tier's range is its claims' weights (a claim's requirement and alternatives
    exclude each other), but CP-SAT's overflow check adds every term's coefficient."""
    tier = Objective({i: 10**6 for i in range(5000)})  # 5,000 exclusive selectors
    below = Objective({5000: 1})
    parts = [(tier, 10**6, 1), (below, 10**12, -1)]
    assert fold(parts, 1 << 60) is None  # 5,000 x 10^6 x 10^12 would pass 2^60
    assert fold(parts[:1], 1 << 60) is not None
    assert fold([(Objective({0: 3, 1: 4}), 4, 1), (Objective({2: 1}), 10, -1)], 1 << 60) is not None


def test_the_claim_limits_keep_a_tier_inside_int64():
    """The arithmetic the limits module states: a tier's largest magnitude."""
    assert MAX_CLAIMS * (1 + MAX_ALTERNATIVES) * MAX_WEIGHT < 1 << 57 < INT_LIMIT


def test_limits_table_names_each_constant_once():
    names = [limit.name for limit in LIMITS]
    assert len(names) == len(set(names)) and set(BY_NAME) == set(names)
    assert BY_NAME["MAX_BODY_BYTES"].http_status == 413
    assert all(limit.value > 0 and limit.bounds for limit in LIMITS)


# --------------------------------------------------------------- wrong JSON types
ENGINE = {
    "build_config": {"max_batch_size": 8, "plugin_config": {}},
    "pretrained_config": {"architecture": "LlamaForCausalLM"},
}


@pytest.mark.parametrize(
    ("dialect", "config", "key"),
    [
        ("mlc", {"speculative_mode": {"a": 1}}, "speculative_mode"),
        ("mlc", {"speculative_mode": [1, 2]}, "speculative_mode"),
        ("mlc", {"prefix_cache_mode": {"a": 1}}, "prefix_cache_mode"),
        ("trtllm", {**ENGINE, "build_config": {"plugin_config": [1, 2]}}, "build_config.plugin_config"),
        ("trtllm", {**ENGINE, "pretrained_config": "x"}, "pretrained_config"),
        ("trtllm", {"backend": ["pytorch"]}, "backend"),
        ("trtllm", {"speculative_config": {"decoding_type": {"a": 1}}}, "speculative_config.decoding_type"),
        ("vllm", {"speculative-config": {"method": [1], "num_speculative_tokens": 2}}, "speculative_config.method"),
        ("vllm", {"speculative-config": {"method": "ngram", "num_speculative_tokens": "x"}}, "speculative_config.num_speculative_tokens"),
        ("sglang", {"quantization": {"a": 1}}, "quantization"),
    ],
)  # fmt: skip
def test_a_wrong_json_type_is_refused_naming_the_key(dialect, config, key):
    """Were: AttributeError, `TypeError: unhashable type`, `int()` errors (HTTP 500)."""
    with pytest.raises(DialectError) as info:
        check_file(config, dialect, time_limit_s=2)
    found = entries(info.value)
    assert any(key in (e["path"] or "") for e in found), found
    assert any("expected" in e["reason"] or "one of" in e["reason"] for e in found), found


def test_docs_table_lists_every_limit_with_its_value():
    text = (Path(__file__).parents[2] / "docs" / "service.md").read_text(encoding="utf-8")
    for limit in LIMITS:
        assert f"| `{limit.name}` | {limit.value} |" in text, limit.name
