"""Differential agreement with SGLang's own code: the replay of the oracle's generated
records (`benchmarks/oracle_replay_sglang.py`) and what it compares.

The default run checks the replay's machinery on records built here (a disagreement is
found, listed with its reason, a known entry that no longer differs is reported); the
slow test replays every recorded batch (`tests/corpus/sglang/oracle/generated*.json`)
and holds each SGLang release to >= 500 records, >= 98% on the verdicts and on the
silently rewritten values, and a listed reason for every difference."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from arbiter.engines.sglang.native import check_sglang

ROOT = Path(__file__).resolve().parents[4]


def _replay_module():
    spec = importlib.util.spec_from_file_location(
        "oracle_replay_sglang", ROOT / "benchmarks" / "oracle_replay_sglang.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPLAY = _replay_module()


def test_rewrites_are_read_from_the_adjustments():
    changes = (
        "disable-radix-cache: False -> True (SGLang would change it because x: y)",
        "attention-backend: 'fa3' -> 'triton' (SGLang would change it because z)",
        "a note without an arrow",
    )
    assert REPLAY.our_rewrites(changes) == {
        "disable_radix_cache": True,
        "attention_backend": "triton",
    }


def _verdict(kind, changes=(), values=None, rules=()):
    resolution = SimpleNamespace(values=values or {}) if kind != "reject" else None
    return SimpleNamespace(verdict=kind, changes=changes, rules=rules, resolution=resolution)


def test_compare_counts_derived_values_and_explicit_rewrites():
    record = {
        "args": {"disable-radix-cache": False},
        "verdict": "adjust",
        "adjust": {"disable_radix_cache": {"before": False, "after": True}},
        "derived": {"mem_fraction_static": 0.83, "attention_backend": "fa3", "page_size": 1},
    }
    values = {
        "kv_cache_config.free_gpu_memory_fraction": 0.83,
        "sglang_config.attention_backend": "fa3",
        "kv_cache_config.tokens_per_block": 1,
    }
    change = ("disable-radix-cache: False -> True (SGLang would change it because r)",)
    assert REPLAY.compare(record, _verdict("adjust", change, values))[:2] == (True, True)
    # another derived fraction: the verdict agrees, the rewritten values do not
    off = {**values, "kv_cache_config.free_gpu_memory_fraction": 0.836}
    assert REPLAY.compare(record, _verdict("adjust", change, off))[:2] == (True, False)
    # no rewrite where SGLang made one
    assert REPLAY.compare(record, _verdict("accept", (), values))[:2] == (False, False)
    # a written field is no derived value: the fraction given is not compared
    given = {**record, "args": {**record["args"], "mem-fraction": 0.7}}
    assert REPLAY.compare(given, _verdict("adjust", change, off))[:2] == (True, True)
    # a refusal on either side compares the verdict only
    assert REPLAY.compare(record, _verdict("reject", rules=("r",)))[1] is None


def _batch(tmp_path: Path, results: list[dict]) -> Path:
    payload = {"engine": "sglang", "release": "0.5.23", "gpu": "H100", "results": results}
    (tmp_path / "generated-test.json").write_text(json.dumps(payload))
    return tmp_path


def test_replay_lists_each_difference_with_its_reason(tmp_path):
    records = [
        # SGLang accepted it; arbiter agrees
        {"args": {"tp-size": 2}, "gpu": "H100", "verdict": "accept", "derived": {}},
        # a verdict recorded the other way round: arbiter refuses plain gptq on CUDA
        {"args": {"quantization": "gptq"}, "gpu": "H100", "verdict": "accept", "derived": {}},
    ]
    directory = _batch(tmp_path, records)
    (row,) = REPLAY.replay(directory=directory, known={})
    assert (row.engine, row.release, row.n) == ("sglang", "0.5.23", 2)
    assert row.verdict_agree == 0.5
    (diff,) = row.differences
    assert diff.case == "generated-test#1" and diff.reason == REPLAY.UNLISTED
    assert diff.ours.startswith("reject") and diff.theirs == "accept"
    (row,) = REPLAY.replay(directory=directory, known={"generated-test#1": "a reason"})
    assert row.differences[0].reason == "a reason"
    assert "generated-test#1: a reason" in REPLAY.render([row])


def test_a_release_without_a_profile_is_named():
    with pytest.raises(REPLAY.UnknownRelease) as err:
        REPLAY.profile_for("0.0.1")
    assert err.value.release == "0.0.1" and "0.0.1" in str(err.value)


def test_equal_split_backends_are_not_written_back_as_a_null_backend():
    """SGLang's parser refuses `attention-backend: null`; the backend both phases name is
    what SGLang runs (overrides._attention_backend_default), derived, not written."""
    verdict = check_sglang(
        {"prefill-attention-backend": "triton", "decode-attention-backend": "triton"},
        device="H100",
    )
    assert verdict.verdict == "accept"
    assert verdict.config is not None and "attention-backend" not in verdict.config
    assert verdict.resolution is not None
    assert verdict.resolution.values["sglang_config.attention_backend"] == "triton"


@pytest.mark.slow
def test_agreement_with_sglangs_own_code_per_release():
    """Every recorded release: >= 500 records, >= 98% on accept / adjust / reject and on
    the rewritten values, every difference listed with its reason, and no listed
    difference that has gone away."""
    rows = REPLAY.replay()
    assert {row.release for row in rows} >= {"0.5.23", "0.5.16"}
    differing = set()
    for row in rows:
        assert row.n >= 500, row.release
        assert row.verdict_agree >= 0.98, REPLAY.render([row])
        assert row.rewrites_agree >= 0.98, REPLAY.render([row])
        unlisted = [d for d in row.differences if d.reason == REPLAY.UNLISTED]
        assert unlisted == [], REPLAY.render([row], verbose=True)
        differing |= {d.case for d in row.differences}
    assert set(REPLAY.KNOWN_DIFFERENCES) <= differing, "a listed difference now agrees"
