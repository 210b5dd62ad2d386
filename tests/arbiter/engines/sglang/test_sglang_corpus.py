"""SGLang corpus agreement: `check_sglang` on every `tests/corpus/sglang/*.yaml` case gives
the verdict SGLang 0.5.23's own code gave (recorded in the case, checked against
`oracle/corpus.json` by test_surface_corpus.py); for an adjustment, the same fields are
rewritten to the same values. A known difference would be listed in `DIFFERENCES` with its
sourced reason and run as a strict xfail: all 146 agree."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from arbiter.engines.sglang.native import check_sglang
from arbiter.engines.sglang.native import read as sglang_read

ROOT = Path(__file__).resolve().parents[4]
CORPUS = ROOT / "tests" / "corpus" / "sglang"
# case id -> why arbiter and the recorded verdict differ (with the source); strict xfails
DIFFERENCES: dict[str, str] = {}


def _models() -> dict[str, dict[str, Any]]:
    """The model configs the oracle resolved the cases against (benchmarks/oracle_common.py
    and the SGLang-only ones of benchmarks/oracle_sglang.py; loading it imports no SGLang)."""
    spec = importlib.util.spec_from_file_location(
        "oracle_sglang", ROOT / "benchmarks" / "oracle_sglang.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


MODELS = _models()
CASES = [yaml.safe_load(p.read_text()) for p in sorted(CORPUS.glob("*.yaml"))]


# Cases whose check takes more than a few seconds on this machine run with -m slow; none
# since the numbers of a conflict are searched with presolve when the plain search cannot
# prove them (arbiter/explain/numbers.py), which took the two chunk-vs-page cases from
# ~20 s to under 1 s.
SLOW_CASES: set[str] = set()
# The model override hook, FP4 KV and asymmetric-KV families (40 cases) run with -m slow
# but for one representative each: the default run is at its 10-minute budget, their
# conflicts take 1-4 s each to explain here, and every rule they exercise has its own
# feasible and infeasible example in the default run (tests/constraints/test_rules.py).
FAMILIES = ("sglang-model-", "sglang-kv4-", "sglang-asym-kv-")
DEFAULT_RUN = {
    "sglang-model-deepseek-v3-b200-trtllm-mla",
    "sglang-kv4-nvfp4-b200",
    "sglang-kv4-fp4-mx-triton",
    "sglang-asym-kv-b200-page-64-adjusted",
}
SLOW_CASES |= {
    c["id"] for c in CASES if c["id"].startswith(FAMILIES) and c["id"] not in DEFAULT_RUN
}


def _params():
    for case in CASES:
        marks: tuple[pytest.MarkDecorator, ...] = ()
        if case["id"] in DIFFERENCES:
            marks = (pytest.mark.xfail(reason=DIFFERENCES[case["id"]], strict=True),)
        if case["id"] in SLOW_CASES:
            marks = (*marks, pytest.mark.slow)
        yield pytest.param(case, id=case["id"], marks=marks)


def check_case(case: dict[str, Any]):
    model = MODELS.get(case["model"], MODELS["llama-3.1-8b"])
    return check_sglang(case["config"], model=model, device=case["device"], gpus=case["gpus"])


@pytest.mark.parametrize("case", _params())
def test_verdict_agrees_with_sglang(case):
    verdict = check_case(case)
    assert verdict.verdict == case["verdict"], (verdict.reasons, verdict.changes)
    if case["verdict"] == "adjust":
        for name, after in case["adjust"].items():
            key = next(k for k in case["config"] if k.replace("-", "_") == name)
            assert any(
                c.startswith(f"{key}: ") and f"-> {after!r}" in c for c in verdict.changes
            ), (
                name,
                verdict.changes,
            )
    if case["verdict"] == "reject":
        assert verdict.reasons
    else:
        assert verdict.config is not None and verdict.resolution is not None


def test_corpus_agreement_figure():
    """The figure docs/sglang.md reports: 146 of 146 agree, no difference."""
    assert len(CASES) >= 40
    assert set(DIFFERENCES) <= {c["id"] for c in CASES}
    assert len(CASES) - len(DIFFERENCES) == 146
    verdicts = {c["verdict"] for c in CASES}
    assert verdicts == {"accept", "adjust", "reject"}


def _oracle_rows() -> dict[str, dict[str, Any]]:
    import json

    rows = json.loads((CORPUS / "oracle" / "corpus.json").read_text())["results"]
    return {row["id"]: row for row in rows}


POOL_CASES = [c for c in CASES if "kv_pool_tokens" in c]


@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: c["id"])
def test_running_requests_are_sglangs_for_the_pool(case):
    """The pool the case gives is the one arbiter computes, and the running requests
    arbiter arbitrates (max_running_requests x attention DP) are what SGLang's own
    resolve_max_num_reqs gives for it (the oracle ran it on that pool)."""
    from arbiter.engines.sglang.report import pool_requests

    verdict = check_case(case)
    assert verdict.resolution is not None
    assert verdict.resolution.capacity.kv_tokens == case["kv_pool_tokens"]
    row = _oracle_rows()[case["id"]]
    parsed_args = sglang_read(case["config"]).native.arguments
    running = pool_requests(verdict.resolution, parsed_args)
    assert running is not None
    assert running.per_worker == row["derived"]["running_requests_per_worker"]
    assert verdict.resolution.values["build_config.max_batch_size"] == running.total


def test_pool_cases_cover_lowered_and_kept_values():
    assert {c["verdict"] for c in POOL_CASES} == {"accept", "adjust"}


@pytest.mark.slow
def test_generated_combinations_agree():
    """The 200 seeded argument combinations of `benchmarks/oracle_sglang.py generate`
    (rerun with the oracle answering SGLang's SM probes for the GPU): every verdict
    agrees (200 / 200)."""
    import json

    data = json.loads((CORPUS / "oracle" / "generated.json").read_text())
    differ = []
    for record in data["results"]:
        verdict = check_sglang(
            record["args"], model=MODELS["llama-3.1-8b"], device=record["gpu"], gpus=64
        )
        if verdict.verdict != record["verdict"]:
            differ.append(record)
    assert len(data["results"]) == 200
    assert differ == []


def _split_differences(path: str) -> list[str]:
    """The argument sets of a split-backend batch whose verdict arbiter and SGLang differ on."""
    import json

    data = json.loads((CORPUS / "oracle" / path).read_text())
    assert len(data["results"]) == 200
    differ = []
    for record in data["results"]:
        verdict = check_sglang(
            record["args"], model=MODELS["llama-3.1-8b"], device=record["gpu"], gpus=64
        )
        if verdict.verdict != record["verdict"]:
            differ.append(json.dumps(record["args"]))
    return differ


@pytest.mark.slow
def test_split_backend_combinations_agree_on_h100():
    """200 seeded combinations of attention / prefill / decode backends with page sizes,
    speculative decoding, KV dtypes and chunks (`generate --axes split --gpu H100`):
    every verdict agrees, an unset backend being SGLang's fa3 for the H100."""
    assert _split_differences("generated-split-h100.json") == []


@pytest.mark.slow
def test_split_backend_combinations_agree_on_b200():
    """The same axes on a B200 (`--gpu B200`): every verdict agrees, an unset backend
    being SGLang's trtllm_mha for SM100 (its pages of 16-128 tokens) and the fp8_e5m2
    refusals of trtllm_mla / cutedsl_mla included."""
    assert _split_differences("generated-split-b200.json") == []
