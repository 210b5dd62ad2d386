"""SARIF 2.1.0 output: the structure the OASIS schema requires, checked here by hand (no
package ships the schema file: sarif-om 1.0.4 and sarif-tools 3.0.5 carry none), with one
result per conflict, input error, warning and engine change, each on its key's line.

The required properties and domains below are re-read from the OASIS SARIF 2.1.0 schema
(oasis-tcs/sarif-spec, Schemata/sarif-schema-2.1.0.json @0a8091f7): sarifLog requires
`version` ("2.1.0") and `runs`; run requires `tool`; tool requires `driver`;
toolComponent requires `name`; reportingDescriptor requires `id`; result requires
`message`; message has `text` or `id`; `level` is none, note, warning or error;
`ruleIndex` >= -1; `region.startLine` >= 1; `artifactLocation.uri` is a string.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from arbiter.report.sarif import render_sarif, to_sarif
from arbiter.report.schema import from_error, from_verdict
from arbiter.sources import key_lines

from .conftest import BAD_VLLM, LONG_VLLM

LEVELS = ("none", "note", "warning", "error")


def check_sarif(log: dict[str, Any]) -> None:
    """The SARIF 2.1.0 schema's required structure (see the module docstring)."""
    assert log["version"] == "2.1.0"
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        ids = [r["id"] for r in rules]
        assert all(isinstance(i, str) and i for i in ids)
        assert len(ids) == len(set(ids)), "rule ids are unique"
        for rule in rules:
            for key in ("shortDescription", "fullDescription"):
                if key in rule:
                    assert isinstance(rule[key]["text"], str)
        for result in run.get("results", []):
            message = result["message"]
            assert isinstance(message.get("text"), str) or isinstance(message.get("id"), str)
            assert result.get("level", "warning") in LEVELS
            if "ruleIndex" in result:
                assert result["ruleIndex"] >= -1
                assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            for location in result.get("locations", []):
                physical = location["physicalLocation"]
                assert isinstance(physical["artifactLocation"]["uri"], str)
                assert physical["region"]["startLine"] >= 1
        for artifact in run.get("artifacts", []):
            assert isinstance(artifact["location"]["uri"], str)


def test_the_checker_catches_what_it_must() -> None:
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": []}]}
    check_sarif(good)
    for broken in (
        {"runs": []},
        {"version": "2.0.0", "runs": [{"tool": {"driver": {"name": "x"}}}]},
        {"version": "2.1.0", "runs": [{"tool": {}}]},
        {
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {"driver": {"name": "x"}},
                    "results": [{"level": "fatal", "message": {"text": "m"}}],
                }
            ],
        },
    ):
        with pytest.raises((AssertionError, KeyError)):
            check_sarif(broken)


def test_a_conflict_is_an_error_on_its_rule_and_line(verdicts: dict[str, Any]) -> None:
    verdict, dialect, text = verdicts["conflict"]
    report = from_verdict(verdict, dialect=dialect, source="configs/long.yaml")
    log = to_sarif(report, lines=key_lines(LONG_VLLM))
    check_sarif(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "arbiter" and run["tool"]["driver"]["version"]
    (error,) = [r for r in run["results"] if r["level"] == "error"]
    assert error["ruleId"] == "vllm.model.len-within-positions"
    rule = run["tool"]["driver"]["rules"][error["ruleIndex"]]
    assert "vllm/config/model.py" in rule["fullDescription"]["text"]
    assert "fixes: drop" in error["message"]["text"]
    location = error["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "configs/long.yaml"
    assert location["region"]["startLine"] >= 1
    assert run["properties"]["verdict"] == "reject"


def test_input_errors_point_at_their_lines(verdicts: dict[str, Any]) -> None:
    verdict, dialect, _ = verdicts["bad-keys"]
    lines = key_lines(BAD_VLLM)
    report = from_verdict(verdict, dialect=dialect, source="bad.yaml", lines=lines)
    log = json.loads(render_sarif(report, lines=lines))
    check_sarif(log)
    results = log["runs"][0]["results"]
    where = {
        r["message"]["text"].split(":")[0]: r["locations"][0]["physicalLocation"]["region"][
            "startLine"
        ]
        for r in results
    }
    assert where == {"max-num-seqs": 1, "max-num-batch-tokens": 2}
    assert all(r["ruleId"] == "arbiter/input-error" and r["level"] == "error" for r in results)
    assert any("did you mean" in r["message"]["text"] for r in results)


def test_engine_changes_are_notes_and_warnings_warnings(verdicts: dict[str, Any]) -> None:
    verdict, dialect, _ = verdicts["adjust"]
    log = to_sarif(
        from_verdict(verdict, dialect=dialect, source="sglang.yaml"), lines={"page-size": 1}
    )
    check_sarif(log)
    results = log["runs"][0]["results"]
    notes = [r for r in results if r["level"] == "note"]
    assert notes and all(r["ruleId"] == "arbiter/engine-change" for r in notes)
    rewrite = next(r for r in notes if r["properties"]["kind"] == "rewrites")
    assert rewrite["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    assert len(results) == len(verdict.changes) + len(verdict.warnings)


def test_a_manifest_line_is_the_fallback_and_no_file_no_location() -> None:
    report = from_error(ValueError("bad flag"), source="deploy.yaml")
    log = to_sarif(report, line=42)
    check_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 42
    bare = to_sarif(from_error(ValueError("bad flag")))
    check_sarif(bare)
    assert bare["runs"][0]["results"][0]["locations"] == []


def test_a_manifest_flag_error_points_at_its_args_item() -> None:
    from arbiter.dialects._base import KeyProblem
    from arbiter.engines.vllm.fields import VllmArgErrors
    from arbiter.sources import targets

    from ..sources.test_manifest import HELM_RENDERED

    _, (target,) = targets(HELM_RENDERED, source="chart.yaml")
    exc = VllmArgErrors([KeyProblem("--max-model-len", "invalid value", value="x")])
    log = to_sarif(from_error(exc, source="chart.yaml"), lines=target.lines, line=target.line)
    check_sarif(log)
    (result,) = log["runs"][0]["results"]
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert HELM_RENDERED.splitlines()[line - 1].strip() == '- "--max-model-len"'
