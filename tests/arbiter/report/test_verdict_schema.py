"""The verdict output as a contract: the exported JSON Schema is current, and real
reports of every kind (accept, adjust, conflict, bad keys, bad input that raised) validate
against it and round-trip through the pydantic model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.report.schema import (
    SCHEMA_VERSION,
    VerdictReport,
    assumptions,
    from_error,
    from_verdict,
    json_schema,
)
from arbiter.sources import key_lines

ROOT = Path(__file__).parents[3]
SCHEMA_FILE = ROOT / "docs" / "schema" / "verdict.schema.json"


def _validate(data: dict[str, Any]) -> None:
    """Against the exported schema with `jsonschema` where installed, else by the model
    (the schema is the model's own, so the round trip checks the same constraints)."""
    try:
        import jsonschema  # an optional test dependency: the schema validator
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        schema = json.loads(SCHEMA_FILE.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft202012Validator(schema).validate(data)
    again = VerdictReport.model_validate(data)
    assert again.to_json() == data


def test_the_exported_schema_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "export_verdict_schema", ROOT / "scripts" / "export_verdict_schema.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--check"]) == 0, "run scripts/export_verdict_schema.py"
    assert SCHEMA_FILE.read_text() == script.rendered()
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_the_schema_names_every_section() -> None:
    props = json_schema()["properties"]
    for name in (
        "schema",
        "version",
        "verdict",
        "assumptions",
        "engine_changes",
        "conflicts",
        "fixes",
        "warnings",
        "input_errors",
        "written",
    ):
        assert name in props, name
    entry = json_schema()["$defs"]["InputErrorEntry"]["properties"]
    assert {"path", "value", "reason", "suggestions", "limit"} <= set(entry)


def test_accept_carries_what_the_engine_derives(verdicts: dict[str, Any]) -> None:
    verdict, dialect, text = verdicts["accept"]
    facts = assumptions(
        dialect=("vllm", "given"),
        model=("llama-3.1-8b", "--model"),
        device=("H100-80GB", "--device"),
        gpus=(2, "assumed from tensor-parallel-size 2"),
    )
    report = from_verdict(verdict, dialect=dialect, source="serve.yaml", assumed=facts)
    data = report.to_json()
    _validate(data)
    assert data["schema"] == "arbiter.verdict" and data["version"] == SCHEMA_VERSION
    assert data["verdict"] == "accept"
    assert data["assumptions"]["summary"] == (
        "llama-3.1-8b (--model), 2x H100-80GB (assumed from tensor-parallel-size 2)"
    )
    derived = [c for c in data["engine_changes"] if c["kind"] == "derives"]
    assert derived and all(c["text"].startswith("vLLM would set") for c in derived)
    # every warning of the verdict is in the report: none is dropped (D-H4)
    texts = {c["text"] for c in data["engine_changes"]} | {w["text"] for w in data["warnings"]}
    assert set(verdict.warnings) <= texts
    assert data["written"]["config"] == verdict.config


def test_adjust_lists_the_rewrites(verdicts: dict[str, Any]) -> None:
    verdict, dialect, _ = verdicts["adjust"]
    data = from_verdict(verdict, dialect=dialect).to_json()
    _validate(data)
    assert data["verdict"] == "adjust"
    rewrites = [c for c in data["engine_changes"] if c["kind"] == "rewrites"]
    assert [c["path"] for c in rewrites] == ["page-size"]
    derived = {c["path"] for c in data["engine_changes"] if c["kind"] == "derives"}
    assert "chunked_prefill_size" in derived


def test_a_conflict_has_rules_with_text_and_source_and_fixes(verdicts: dict[str, Any]) -> None:
    verdict, dialect, text = verdicts["conflict"]
    data = from_verdict(verdict, dialect=dialect, source="long.yaml").to_json()
    _validate(data)
    assert data["verdict"] == "reject" and not data["input_errors"]
    (conflict,) = data["conflicts"]
    assert "vllm.model.len-within-positions" in conflict["rules"]
    rules = {r["id"]: r for r in data["rules"]}
    rule = rules["vllm.model.len-within-positions"]
    assert "max_position_embeddings" in rule["text"] and "vllm/config/model.py" in rule["source"]
    assert data["fixes"] and data["fixes"][0]["drop"]


def test_bad_keys_are_one_entry_each_with_lines(verdicts: dict[str, Any]) -> None:
    verdict, dialect, text = verdicts["bad-keys"]
    report = from_verdict(verdict, dialect=dialect, source="bad.yaml", lines=key_lines(text))
    data = report.to_json()
    _validate(data)
    errors = {e["path"]: e for e in data["input_errors"]}
    assert set(errors) == {"max-num-seqs", "max-num-batch-tokens"}
    typo = errors["max-num-batch-tokens"]
    assert typo["reason"] == "unknown key"
    assert "max-num-batched-tokens" in typo["suggestions"]  # spelled as the key (D-L7)
    assert (typo["file"], typo["line"]) == ("bad.yaml", 2)
    assert errors["max-num-seqs"]["line"] == 1 and errors["max-num-seqs"]["value"] == "x"


def test_bad_input_that_raised() -> None:
    from arbiter.dialects._base import KeyProblem
    from arbiter.engines.vllm.fields import VllmArgErrors

    exc = VllmArgErrors(
        [
            KeyProblem("max-num-seqs", "invalid value", value="x"),
            KeyProblem("swap-space", "unknown key", suggestions=("kv-cache-memory-bytes",)),
        ],
        file="serve.yaml",
    )
    data = from_error(exc, dialect="vllm", source="serve.yaml").to_json()
    _validate(data)
    assert data["verdict"] == "error"
    assert [(e["path"], e["value"]) for e in data["input_errors"]] == [
        ("max-num-seqs", "x"),
        ("swap-space", None),
    ]
    assert data["input_errors"][1]["suggestions"] == ["kv-cache-memory-bytes"]


def test_an_edge_limit_is_an_entry_with_its_limit() -> None:
    from constraints.edge import EdgeError

    exc = EdgeError("the document is nested too deeply", where="a.b", limit="MAX_DEPTH = 64")
    (entry,) = from_error(exc, source="deep.yaml").to_json()["input_errors"]
    assert (entry["path"], entry["limit"]) == ("a.b", "MAX_DEPTH = 64")


@pytest.mark.parametrize("field", ["verdict", "schema"])
def test_the_model_refuses_what_the_schema_refuses(field: str) -> None:
    from pydantic import ValidationError

    data = from_error(ValueError("x")).to_json()
    data[field] = "maybe"
    with pytest.raises(ValidationError):
        VerdictReport.model_validate(data)


def test_a_dialect_errors_file_and_key_are_read_back() -> None:
    from arbiter.dialects.mlc import check_mlc

    verdict = check_mlc({"model": "dist/x", "mode": "batch"})
    (entry,) = from_verdict(verdict, dialect="mlc").to_json()["input_errors"]
    assert entry["path"] == "mode"
    assert entry["reason"] == "mode must be one of local, interactive, server"
    assert entry["file"] == "<mlc>"


def test_trtllm_field_errors_are_one_entry_each() -> None:
    from arbiter.dialects.trtllm import check_trtllm

    verdict = check_trtllm({"invalid_arg": 1, "kv_cache_confg": {"x": 1}})
    data = from_verdict(verdict, dialect="trtllm").to_json()
    _validate(data)
    errors = {e["path"]: e for e in data["input_errors"]}
    assert set(errors) == {"invalid_arg", "kv_cache_confg"}
    assert "kv_cache_config" in errors["kv_cache_confg"]["suggestions"]
