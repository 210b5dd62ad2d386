"""The edge validator names every problem of a document at once (issue 30, D-L6/D-L7):
all out-of-range values with their paths and allowed domain, keys given twice, and YAML or
JSON syntax errors in words (line, column, "indent with spaces")."""

from __future__ import annotations

import json

import pytest
import yaml

from constraints.edge import (
    INT_LIMIT,
    EdgeError,
    check_value,
    parse_json,
    parse_yaml,
    syntax_message,
    value_problems,
    without_problems,
)

HUGE = 10**23


def test_every_value_problem_is_found_in_document_order():
    data = {"a": HUGE, "b": [1, float("nan"), 3], "c": {"d": -HUGE}, "ok": 1}
    found = value_problems(data, "doc")
    assert [p.where for p in found] == ["doc.a", "doc.b[1]", "doc.c.d"]
    assert found[0].allowed == f"an integer from -{INT_LIMIT} to {INT_LIMIT}"
    with pytest.raises(EdgeError) as err:
        check_value(data, "doc")
    assert err.value.where == "doc.a"  # the first, carrying them all
    assert [p.where for p in err.value.problems] == ["doc.a", "doc.b[1]", "doc.c.d"]


def test_the_document_without_its_problems_keeps_everything_else():
    data = {"a": HUGE, "b": [1, HUGE, 3], "c": {"d": HUGE, "e": 2}, "ok": 1}
    rest = without_problems(data, value_problems(data))
    assert rest == {"b": [1, 3], "c": {"e": 2}, "ok": 1}
    assert data["a"] == HUGE  # the input itself is left as it was


def test_a_problems_list_collects_instead_of_raising():
    text = f"max_batch_size: {HUGE}\nmax_num_tokenz: 5\n"
    refused: list[EdgeError] = []
    assert parse_yaml(text, problems=refused) == {"max_num_tokenz": 5}
    assert [p.where for p in refused] == ["max_batch_size"]
    refused = []
    assert parse_json(json.dumps({"a": HUGE, "b": 1}), problems=refused) == {"b": 1}
    assert [p.where for p in refused] == ["a"]
    with pytest.raises(EdgeError):
        parse_yaml(text)  # without the list, the first problem raises


@pytest.mark.parametrize(
    ("parse", "text", "where"),
    [
        (parse_yaml, "max_batch_size: 8\nmax_batch_size: 16\n", "max_batch_size"),
        (parse_yaml, "a:\n  b: 1\n  b: 2\n", "b"),
        (parse_json, '{"max_batch_size": 8, "max_batch_size": 16}', "max_batch_size"),
    ],
)
def test_a_key_given_twice_is_an_input_error_naming_the_key(parse, text, where):
    with pytest.raises(EdgeError) as err:
        parse(text)
    assert err.value.where == where and "set twice" in err.value.reason
    refused: list[EdgeError] = []
    parse(text, problems=refused)  # collected: the last value is kept, the key named
    assert [p.where for p in refused] == [where]


def test_a_yaml_merge_key_is_no_duplicate():
    text = "base: &b {x: 1}\nother:\n  <<: *b\n  x: 2\n"
    assert parse_yaml(text)["other"] == {"x": 2}


def test_a_tab_says_indent_with_spaces_and_no_stream_name():
    with pytest.raises(yaml.YAMLError) as err:
        parse_yaml("a:\n\tb: 1\n")
    text = syntax_message(err.value)
    assert "line 2, column 1" in text and "indent with spaces" in text
    assert "<unicode string>" not in text


def test_a_json_syntax_error_names_line_and_column():
    with pytest.raises(ValueError) as err:
        parse_json('{\n "a": 1,\n}')
    assert syntax_message(err.value, "JSON").startswith("not valid JSON: line 3, column 1:")
