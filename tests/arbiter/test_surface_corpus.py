"""The vLLM and SGLang corpora against the field lists and the engines' own verdicts.

- every case file has the corpus format (tests/corpus/README.md) and a unique id;
- every key of a case's config is a field of its release, unless the case's verdict is
  reject (an unknown key is the engine's own refusal);
- every case the oracle ran carries the oracle's verdict (tests/corpus/<engine>/oracle/
  corpus.json, written by benchmarks/oracle_<engine>.py in a throwaway venv);
- slow: rerun the oracle when its venv exists (`ARBITER_VLLM_PYTHON`, `ARBITER_SGLANG_PYTHON`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from arbiter.dialects.surface import UnknownFields, load_surface
from arbiter.engines.sglang.serve import resolve as sglang_resolve

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
ENGINES = {"vllm": "vllm-0.33", "sglang": "sglang-0.5"}
REQUIRED = (
    "id",
    "provenance",
    "engine",
    "profile",
    "model",
    "device",
    "gpus",
    "config",
    "verdict",
    "why",
)


def _cases(engine: str) -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted((CORPUS / engine).glob("*.yaml"))]


def _all_cases() -> list[dict]:
    return [case for engine in ENGINES for case in _cases(engine)]


@pytest.mark.parametrize("engine", ENGINES)
def test_corpus_has_forty_cases_with_unique_ids(engine):
    cases = _cases(engine)
    assert len(cases) >= 40
    ids = [case["id"] for case in cases]
    assert len(ids) == len(set(ids))
    verdicts = {case["verdict"] for case in cases}
    assert {"accept", "reject"} <= verdicts


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c["id"])
def test_case_format(case):
    for key in REQUIRED:
        assert key in case, f"{case['id']}: missing {key}"
    prov = case["provenance"]
    assert prov["repo"] and prov["path"] and prov["ref"]
    # the engine's default line, or another release line of it (`vllm-0.24`)
    assert case["engine"] in ENGINES and case["profile"].startswith(f"{case['engine']}-")
    assert case["verdict"] in ("accept", "adjust", "reject")
    if case["verdict"] == "adjust":
        assert case.get("adjust"), f"{case['id']}: an adjust verdict names what changes"
    if case["verdict"] == "reject":
        assert case.get("reject"), f"{case['id']}: a reject verdict names the refusal"
    assert isinstance(case["config"], dict) and case["config"]


def _spelled_keys(case: dict) -> dict:
    """The case's config less the SGLang keys its parser takes as the unique prefix of a
    flag (argparse's allow_abbrev: `mem-fraction` is --mem-fraction-static)."""
    if case["engine"] != "sglang":
        return case["config"]
    surface = load_surface(case["profile"])
    return {
        k: v
        for k, v in case["config"].items()
        if surface.resolve(str(k)) is not None or sglang_resolve(surface, str(k))[0] is None
    }


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c["id"])
def test_config_keys_are_fields_of_the_release(case):
    surface = load_surface(case["profile"])
    try:
        surface.check_keys(_spelled_keys(case))
    except UnknownFields as err:
        assert case["verdict"] == "reject", f"{case['id']}: {err}"
        unknown = [key for key, _ in err.unknown]
        assert any(
            key.replace("-", "_").lstrip("_") in case["reject"].replace("-", "_") for key in unknown
        ), f"{case['id']}: the refusal should name the unknown key(s) {unknown}"


def _oracle(engine: str) -> dict:
    """The oracle's rows of every release it ran the corpus on: `corpus.json` (the
    default line) and `corpus-<release>.json` (another line's cases, run in its venv)."""
    rows = {}
    for path in sorted((CORPUS / engine / "oracle").glob("corpus*.json")):
        rows.update({row["id"]: row for row in json.loads(path.read_text())["results"]})
    return rows


@pytest.mark.parametrize("engine", ENGINES)
def test_oracle_ran_every_case_it_could(engine):
    oracle = _oracle(engine)
    cases = {case["id"]: case for case in _cases(engine)}
    assert set(oracle) == set(cases), "rerun benchmarks/oracle_<engine>.py corpus"
    for case_id, case in cases.items():
        if case.get("oracle_skip"):
            assert oracle[case_id]["verdict"] == "skipped"


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c["id"])
def test_case_verdict_is_the_oracles(case):
    row = _oracle(case["engine"])[case["id"]]
    if row["verdict"] == "skipped":
        assert case.get("oracle_skip")
        return
    # a refusal only the CPU platform's runner gives carries the GPU's verdict (`gpu`,
    # benchmarks/oracle_vllm.py resolve)
    row = row.get("gpu", row)
    assert case["verdict"] == row["verdict"], f"{case['id']}: oracle said {row}"
    if case["verdict"] == "adjust":
        assert set(case["adjust"]) == set(row["adjust"])
        for field, value in case["adjust"].items():
            assert row["adjust"][field]["after"] == value


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c["id"])
def test_field_list_agrees_with_the_engines_parser(case):
    """A key the engine's own parser refused as unknown is unknown to the field list,
    and a case the parser took has only known keys."""
    row = _oracle(case["engine"])[case["id"]]
    if row["verdict"] == "skipped":
        return
    message = row.get("message", "")
    parser_refused_key = "unrecognized arguments" in message or "has no attribute" in message
    surface = load_surface(case["profile"])
    if parser_refused_key:
        with pytest.raises(UnknownFields):
            surface.check_keys(case["config"])
    elif row.get("stage") != "parse":
        surface.check_keys(_spelled_keys(case))


@pytest.mark.parametrize("engine", ENGINES)
def test_field_list_agrees_with_the_parser_on_generated_runs(engine):
    """The seeded combinations the oracle ran (a few hundred): the field list knows
    every key the engine's parser took, and none it refused as unknown (vLLM's generator
    includes `swap-space`, a serve argument of older releases, on purpose)."""
    payload = json.loads((CORPUS / engine / "oracle" / "generated.json").read_text())
    surface = load_surface(ENGINES[engine])
    verdicts = set()
    refused_unknown = 0
    for row in payload["results"]:
        verdicts.add(row["verdict"])
        message = row.get("message", "")
        if "unrecognized arguments" in message or "has no attribute" in message:
            refused_unknown += 1
            with pytest.raises(UnknownFields):
                surface.check_keys(row["args"])
        elif row.get("stage") != "parse":
            surface.check_keys(row["args"])
    assert len(payload["results"]) >= 150
    assert {"accept", "reject"} <= verdicts
    if engine == "vllm":
        assert refused_unknown > 0


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_oracle_rerun_agrees(engine, tmp_path):
    python = os.environ.get(f"ARBITER_{engine.upper()}_PYTHON", f"/tmp/v-{engine}/bin/python")
    if not Path(python).exists():
        pytest.skip(
            f"no {engine} venv at {python} (docs/engines.md: running the engines' own code)"
        )
    out = tmp_path / "corpus.json"
    subprocess.run(
        [python, str(ROOT / "benchmarks" / f"oracle_{engine}.py"), "corpus", "--out", str(out)],
        check=True,
        timeout=3000,
        stdout=sys.stdout,
    )
    fresh = {row["id"]: row["verdict"] for row in json.loads(out.read_text())["results"]}
    recorded = {case_id: row["verdict"] for case_id, row in _oracle(engine).items()}
    assert fresh == recorded
