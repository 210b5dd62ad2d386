"""Every fixture model reads to exactly the facts pinned in
tests/fixtures/models/groundtruth.json (written by tests/constraints/model_groundtruth.py):
the family table (constraints/facts/families.py) must not move a number."""

from __future__ import annotations

import json

import pytest

from constraints.facts import read_model

from .model_groundtruth import FIXTURES, GROUNDTRUTH, fixture_names, record

PINNED = json.loads(GROUNDTRUTH.read_text())


def test_every_fixture_model_is_pinned():
    assert sorted(PINNED) == fixture_names()
    assert len(PINNED) >= 22


@pytest.mark.parametrize("name", fixture_names())
def test_facts_equal_the_groundtruth(name):
    got = json.loads(json.dumps(record(read_model(FIXTURES / f"{name}.json"))))
    want = PINNED[name]
    differ = {
        k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)
    }
    assert not differ, differ


def test_the_groundtruth_tells_families_apart():
    # a check that can fail: the pinned numbers differ between families
    assert PINNED["llama-3.1-8b"]["family"] == "dense"
    assert PINNED["deepseek-v3"]["family"] == "mla"
    assert PINNED["rwkv6-finch-1b6"]["family"] == "recurrent"
    assert (
        PINNED["llama-3.1-8b"]["facts"]["model.num_params"]
        != (PINNED["llama-3.1-70b"]["facts"]["model.num_params"])
    )
