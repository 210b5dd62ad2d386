"""The differential agreement with the engines' own code (`benchmarks/oracle_agreement.py`):
every recorded oracle file of an engine and release replayed against arbiter. The slow
test asserts the acceptance figures for each engine/release with enough records; the fast
ones check that the replay counts and lists what it should (a difference no reason covers
is reported as unlisted, and fails the slow test)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> Any:
    spec = importlib.util.spec_from_file_location(
        "oracle_agreement", ROOT / "benchmarks" / "oracle_agreement.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["oracle_agreement"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


AGREEMENT = _load()


class _Toy(AGREEMENT.Replay):
    """An engine whose arbiter side is a table: args["ours"] is arbiter's answer."""

    engine = "toy"

    def __init__(self, folder: Path):
        self.folder = folder

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("generated*.json"))

    def profile(self, release: str) -> str:
        return f"toy-{release}"

    def expected(self, record):
        if record["verdict"] == "reject":
            return AGREEMENT.Outcome(True, detail=record.get("message", ""))
        return AGREEMENT.Outcome(False, {k: v["after"] for k, v in record["adjust"].items()})

    def ours(self, record, profile):
        ours = record["args"]["ours"]
        return AGREEMENT.Outcome(ours == "reject", ours if isinstance(ours, dict) else {}), None


def _write(folder: Path, results: list[dict[str, Any]]) -> None:
    payload = {"engine": "toy", "version": "1.2.3", "seed": 1, "batch": "mixed"}
    (folder / "generated-1.json").write_text(json.dumps({**payload, "results": results}))


def test_the_replay_counts_agreement_and_lists_every_difference(tmp_path):
    _write(
        tmp_path,
        [
            {"args": {"ours": "reject"}, "verdict": "reject", "message": "no"},
            {"args": {"ours": {}}, "verdict": "accept", "adjust": {}},
            {"args": {"ours": {"x": 2}}, "verdict": "adjust", "adjust": {"x": {"after": 2}}},
            {"args": {"ours": {"x": 3}}, "verdict": "adjust", "adjust": {"x": {"after": 2}}},
            {"args": {"ours": {}, "cpu": 1}, "verdict": "reject", "message": "cpu only"},
            {"args": {"ours": "reject"}, "verdict": "accept", "adjust": {}},
            {"args": {}, "verdict": "skipped"},
        ],
    )
    toy = _Toy(tmp_path)
    toy.known = (
        AGREEMENT.Known("cpu", "the CPU platform's", lambda r, t, o, v: "cpu" in r["args"]),
    )
    result = AGREEMENT.replay(toy, "1.2")
    assert result.n == 6 and result.verdicts_agree == 4 and result.both_accept == 3
    assert result.rewrites_agree == 2  # the x: 3 against the engine's 2 differs
    kinds = sorted((d.kind, d.known or "") for d in result.differences)
    assert kinds == [("accept/refuse", ""), ("accept/refuse", "cpu"), ("rewrites", "")]
    assert len(result.unlisted) == 2
    # the CPU-only difference is left out of the share's denominator, the others count
    assert result.verdict_share == pytest.approx(4 / 5)
    assert result.rewrite_share == pytest.approx(2 / 3)
    assert "UNLISTED" in result.unlisted[0].line()


def test_the_vllm_replay_reads_its_records_by_release():
    vllm = AGREEMENT.ENGINES["vllm"]
    releases = AGREEMENT.releases(vllm)
    assert {"0.24", "0.33"} <= set(releases)
    for release in ("0.24", "0.33"):
        records = sum(len(p["results"]) for _, p in vllm.records(release))
        assert records >= AGREEMENT.MIN_RECORDS
        assert vllm.profile(release) == f"vllm-{release}"


def test_a_vllm_record_is_replayed_with_its_release_and_listed_reason():
    vllm = AGREEMENT.ENGINES["vllm"]
    # vLLM 0.24.0 drops `enable-chunked-prefill: false` (load_config_file): chunked
    # prefill stays on, and arbiter's value is the engine's
    record = {
        "args": {"enable-chunked-prefill": False},
        "verdict": "accept",
        "adjust": {},
        "derived": {"enable_chunked_prefill": True, "max_model_len": 131072},
    }
    theirs = vllm.expected(record)
    ours, _ = vllm.ours(record, "vllm-0.24")
    assert not ours.refused and ours.values == theirs.values
    ours33, _ = vllm.ours(record, "vllm-0.33")
    assert ours33.values["enable_chunked_prefill"] is False  # 0.33: --no-enable-chunked-prefill


@pytest.mark.slow
@pytest.mark.parametrize(
    ("engine", "release"),
    [(e, r) for e, rep in AGREEMENT.ENGINES.items() for r in AGREEMENT.releases(rep)],
)
def test_agreement_with_the_engines_own_code(engine, release):
    """>= 98% on accept/refuse and on the rewritten values for every engine/release with
    at least MIN_RECORDS records; every difference carries a listed reason."""
    result = AGREEMENT.replay(AGREEMENT.ENGINES[engine], release)
    assert not result.unlisted, "\n".join(d.line() for d in result.unlisted)
    if result.n < AGREEMENT.MIN_RECORDS:
        pytest.skip(f"{engine} {release}: {result.n} records, below {AGREEMENT.MIN_RECORDS}")
    assert result.verdict_share >= AGREEMENT.TARGET, result.summary()
    assert result.rewrite_share >= AGREEMENT.TARGET, result.summary()
