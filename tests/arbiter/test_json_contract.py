"""The verdict report as a contract, over every shipped example and generated configs:

- `arbiter check --format json` and `POST /v1/check` answer the same `arbiter.verdict`
  body for the same input (`DIFFERING` lists what must differ, and why), with matching
  exit code and HTTP status;
- every body, the service's errors included, validates against
  `docs/schema/verdict.schema.json` (`jsonschema`, draft 2020-12);
- every line the text report shows under an accepted or adjusted config (the engine's
  changes, what it derives, its warnings, the option changes, the drops, the capacity) is
  a field of the JSON, and nothing the text shows is missing from it;
- `-o FILE` writes a config that checks again to the same verdict (`same_verdict`: the
  same resolved configuration, capacity, warnings and written config; an adjusted config
  to accept where its fix is in, else to adjust with no new adjustment), on every shipped
  example of every engine;
- input errors (a missing file, broken YAML, an unknown key, a bad flag value, no model)
  are the report with verdict `error` and an `input_errors` entry each, exit 2.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.service import ServiceSettings, create_app
from tests.arbiter.shipped_examples import (
    CASES_ALL,
    EXAMPLES,
    LLAMA_31,
    ROOT,
    SLOW,
    example_files,
)
from tests.arbiter.test_front_doors import GENERATORS

SCHEMA = json.loads((ROOT / "docs/schema/verdict.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# what must differ between the two doors, and why
DIFFERING = {
    "source": "the file's name on the command line, `<request>` for the service",
    "assumptions": "the command line names its options (`--gpus`), the service the"
    " request's fields (`gpus`); compared after that one renaming",
    "input_errors[].file, input_errors[].line": "a file has a name and lines, a request's"
    " mapping neither",
    "message": "it may name the source (the file, `<request>`); compared with it blanked",
}
_FLAG = re.compile(r"--(model|gpus|device|profile|dialect)\b")
STATUS = {0: (200,), 1: (409,), 2: (400, 404, 422)}


@pytest.fixture(scope="module")
def service():
    with TestClient(create_app(ServiceSettings(workers=1))) as client:
        yield client


def valid(body: dict[str, Any]) -> dict[str, Any]:
    VALIDATOR.validate(body)
    return body


def cli(file: str, args: list[str], *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["check", file, *args, *extra])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def request_of(config: Any, args: list[str]) -> dict[str, Any]:
    """The `/v1/check` body saying what the options say."""
    opts = dict(zip(args[::2], args[1::2], strict=True))
    body: dict[str, Any] = {"dialect": opts["--dialect"], "config": config}
    for flag, field in (("--model", "model"), ("--device", "device"), ("--profile", "profile")):
        if flag in opts:
            body[field] = opts[flag]
    if "--gpus" in opts:
        body["gpus"] = int(opts["--gpus"])
    return body


def comparable(body: dict[str, Any], *, from_cli: bool) -> dict[str, Any]:
    """`body` without what `DIFFERING` lists (the assumptions in the request's words)."""
    out = json.loads(json.dumps(body))
    if out["message"]:  # a file's name, or the name a dialect gives a mapping (`<vllm>`)
        if out["source"]:
            out["message"] = out["message"].replace(out["source"], "<source>")
        out["message"] = re.sub(r"^<\w+>(?=[:,])", "<source>", out["message"])
    out["source"] = None
    if from_cli:
        assumed = out["assumptions"]
        assumed["summary"] = _FLAG.sub(r"\1", assumed["summary"])
        for item in assumed["items"]:
            item["source"] = _FLAG.sub(r"\1", item["source"])
    for entry in out["input_errors"]:
        entry["file"] = entry["line"] = None
    return out


def _cases(*, files_only: bool = False) -> list[Any]:
    """The shipped examples as test cases; `files_only`: without the prebuilt engine's
    folder and the config checked against it (their config is the engine's own)."""
    return [
        pytest.param(file, args, id=file, marks=[pytest.mark.slow] if file in SLOW else [])
        for file, args in CASES_ALL
        if not (files_only and ((EXAMPLES / file).is_dir() or "--engine" in args))
    ]


def test_the_table_holds_every_shipped_example():
    assert {file for file, _ in CASES_ALL} == example_files()


@pytest.mark.parametrize(("file", "args"), _cases())
def test_the_command_line_and_the_service_answer_the_same_report(service, monkeypatch, file, args):
    monkeypatch.chdir(ROOT)  # an example may name a draft's folder from the repository root
    path = EXAMPLES / file
    code, stdout, _ = cli(str(path), args, "--format", "json")
    body = valid(json.loads(stdout))
    assert body["verdict"] == {0: body["verdict"], 1: "reject", 2: "error"}[code]
    if code == 0:
        assert body["verdict"] in ("accept", "adjust")
    if path.is_dir() or "--engine" in args:
        return  # a prebuilt engine's folder: the service takes config mappings only
    config = (
        json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    )
    response = service.post("/v1/check", json=request_of(config, args))
    assert response.status_code in STATUS[code], response.text[:500]
    answer = valid(response.json())
    assert comparable(answer, from_cli=False) == comparable(body, from_cli=True)


def _text_lines(body: dict[str, Any]) -> set[str]:
    """The report lines the text output prints under the config, from the JSON alone: the
    headline, what the engine changes and warns, in its words, and the facts."""
    lines = {body["headline"], f"profile: {body['profile']}"}
    for change in body["engine_changes"]:
        lines.add(f"adjusted {change['text']}" if change["kind"] == "rewrites" else change["text"])
    lines |= {w["text"] for w in body["warnings"]}
    if body["not_arbitrated"]:
        lines.add("not arbitrated (written back as given): " + ", ".join(body["not_arbitrated"]))
    if body["capacity"] is not None:
        lines.add(f"capacity: {body['capacity']['text']}")
    lines.add(f"checked against: {body['assumptions']['summary']}")
    if body["mismatch"]:
        lines.add(f"note: {body['mismatch']}")
    return lines


def _py(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The option changes with their values as Python prints them (`True`, not `true`)."""
    return [{**c, "old": str(c["old"]), "new": str(c["new"])} for c in body["changes"]]


@pytest.mark.parametrize(("file", "args"), _cases())
def test_the_json_carries_every_line_the_text_shows(monkeypatch, file, args):
    monkeypatch.chdir(ROOT)
    path = str(EXAMPLES / file)
    code, text, stderr = cli(path, args)
    _, stdout, _ = cli(path, args, "--json")
    body = json.loads(stdout)
    if code == 0:
        shown = {line[2:] for line in text.splitlines() if line.startswith("# ")}
        expected = _text_lines(body)
        assert shown == expected, shown ^ expected
        engine = [c for c in body["engine_changes"] if c["kind"] == "derives"]
        assert all(c["text"] in shown for c in engine)
    elif code == 1:  # a reject: its rules and its reasons are the JSON's too
        for conflict in body["conflicts"]:
            assert all(rule in stderr for rule in conflict["rules"]), conflict
    else:
        assert body["input_errors"]
        for entry in body["input_errors"]:
            assert entry["path"] is None or entry["path"] in stderr, entry


def _resolved(body: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The configuration a report resolves: each option off its default, with its default
    and its value (not `decided_by`: a written value is "set by" its key the second time)."""
    return {c["path"]: (c["old"], c["new"]) for c in body["changes"]}


def same_verdict(before: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """What "checks again to the same verdict" means for a config `-o` wrote
    (`docs/check-assumptions.md`), as the list of what breaks it (empty: it holds): the
    same resolved configuration and capacity, the same written config, the same warnings;
    accept stays accept; adjust becomes accept where its adjustments are now written in
    the file, or stays adjust with none but the first check's adjustments (what the engine
    derives at start-up from what it is given); nothing dropped that was not dropped."""
    broken = []
    if again["verdict"] not in {"accept": ("accept",), "adjust": ("adjust", "accept")}.get(
        before["verdict"], ()
    ):
        broken.append(f"verdict {before['verdict']} -> {again['verdict']}")
    if _resolved(again) != _resolved(before):
        broken.append("resolved configuration")
    for key in ("capacity", "warnings"):
        if again[key] != before[key]:
            broken.append(key)
    if again["written"]["config"] != before["written"]["config"]:
        broken.append("written config")
    first = [c["text"] for c in before["engine_changes"]]
    if any(c["text"] not in first for c in again["engine_changes"]):
        broken.append("a new engine change")
    if not {d["name"] for d in again["dropped"]} <= {d["name"] for d in before["dropped"]}:
        broken.append("a new drop")
    return broken


@pytest.mark.parametrize(("file", "args"), _cases(files_only=True))
def test_the_written_config_checks_again_to_the_same_verdict(monkeypatch, tmp_path, file, args):
    monkeypatch.chdir(ROOT)
    path = EXAMPLES / file
    fixed = tmp_path / f"fixed{path.suffix}"
    code, _, _ = cli(str(path), args, "-o", str(fixed))
    before = json.loads(cli(str(path), args, "--json")[1])
    if code != 0:
        assert not fixed.exists()  # nothing written for a reject or bad input
        return
    again_code, stdout, _ = cli(str(fixed), args, "--json")
    again = valid(json.loads(stdout))
    assert again_code == 0
    assert same_verdict(before, again) == [], (before["verdict"], again["verdict"])
    twice = tmp_path / f"twice{path.suffix}"
    cli(str(fixed), args, "-o", str(twice))
    assert twice.read_text() == fixed.read_text()  # a fixed point


# shipped examples whose config `-o` writes, with their verdict: every engine, both verdicts
WRITTEN = {
    "trtllm/streamingllm.yaml": "adjust",
    "trtllm/long_context_l4.yaml": "accept",
    "mlc/eagle_hybrid.json": "adjust",
    "mlc/interactive_l4.json": "accept",
    "vllm/llama-3.1-8b-h100.yaml": "accept",
    "sglang/eagle_chain_h100.yaml": "adjust",
    "sglang/attn_dp_4xh100.yaml": "adjust",  # adjusted again: SGLang derives its chunk
}


def test_every_engine_has_a_shipped_example_that_writes_a_config():
    """The re-check above is tried on every engine of the registry, on accepted and on
    adjusted configs alike."""
    from arbiter.dialects import DIALECTS  # the one list of engines

    cases = dict(CASES_ALL)
    engines = set()
    for file, verdict in WRITTEN.items():
        args = cases[file]
        body = json.loads(cli(str(EXAMPLES / file), args, "--json")[1])
        assert body["verdict"] == verdict, file
        engines.add(args[args.index("--dialect") + 1])
    assert engines == set(DIALECTS)


def test_same_verdict_refuses_what_differs():
    """The comparison itself can fail: each difference it guards is named."""
    body = {
        "verdict": "adjust",
        "changes": [{"path": "a", "old": 1, "new": 2, "decided_by": "x"}],
        "capacity": None,
        "warnings": [],
        "written": {"config": {"k": 1}},
        "engine_changes": [{"text": "k: 2 -> 1"}],
        "dropped": [],
    }
    assert same_verdict(body, {**body, "verdict": "accept", "engine_changes": []}) == []
    moved = {**body, "changes": [{"path": "a", "old": 1, "new": 3, "decided_by": "x"}]}
    assert same_verdict(body, moved) == ["resolved configuration"]
    assert same_verdict(body, {**body, "verdict": "reject"}) == ["verdict adjust -> reject"]
    new_change = {**body, "engine_changes": [{"text": "other"}]}
    assert same_verdict(body, new_change) == ["a new engine change"]
    accepted = {**body, "verdict": "accept"}
    assert same_verdict(accepted, body) == ["verdict accept -> adjust"]


@pytest.mark.parametrize("dialect", sorted(GENERATORS))
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_configs_get_the_same_report_at_both_doors(service, tmp_path, dialect, data):
    config = data.draw(GENERATORS[dialect], label="config")
    gpus = data.draw(st.sampled_from([None, 1, 2]), label="gpus")
    args = ["--dialect", dialect, "--model", LLAMA_31, "--device", "H100"]
    if gpus is not None:
        args += ["--gpus", str(gpus)]
    path = tmp_path / ("config.json" if dialect == "mlc" else "config.yaml")
    path.write_text(json.dumps(config) if dialect == "mlc" else yaml.safe_dump(config))
    code, stdout, _ = cli(str(path), args, "--json")
    body = valid(json.loads(stdout))
    response = service.post("/v1/check", json=request_of(config, args))
    assert response.status_code in STATUS[code], response.text[:500]
    answer = valid(response.json())
    assert comparable(answer, from_cli=False) == comparable(body, from_cli=True)


# ----------------------------------------------------------------- input errors as JSON
def _error(code: int, stdout: str) -> dict[str, Any]:
    assert code == 2
    body = valid(json.loads(stdout))
    assert body["verdict"] == "error" and body["error"] and body["input_errors"]
    return body


def test_every_kind_of_input_error_is_the_report_in_json(tmp_path):
    vllm = ["--dialect", "vllm", "--model", LLAMA_31]
    missing = _error(*cli(str(tmp_path / "nope.yaml"), vllm, "--json")[:2])
    assert "nope.yaml" in json.dumps(missing["input_errors"])
    broken = tmp_path / "broken.yaml"
    broken.write_text("max-num-seqs: [1\n")
    _error(*cli(str(broken), vllm, "--json")[:2])
    typo = tmp_path / "typo.yaml"
    typo.write_text("max-num-seqs: 8\nmax-num-seq: 8\n")
    (entry,) = _error(*cli(str(typo), vllm, "--format", "json")[:2])["input_errors"]
    assert (entry["path"], entry["line"], entry["file"]) == ("max-num-seq", 2, str(typo))
    assert "max-num-seqs" in entry["suggestions"]
    bad_flag = _error(*cli(str(typo), [*vllm, "--gpus", "0"], "--json")[:2])
    assert bad_flag["input_errors"][0]["path"] == "--gpus"
    assert bad_flag["input_errors"][0]["value"] == "0"
    unknown = _error(*cli(str(typo), [*vllm, "--gpu", "2"], "-f", "json")[:2])
    assert "--gpus" in unknown["input_errors"][0]["suggestions"]
    no_model = tmp_path / "nomodel.yaml"
    no_model.write_text("max-num-seqs: 8\n")
    (entry,) = _error(*cli(str(no_model), ["--dialect", "vllm"], "--json")[:2])["input_errors"]
    assert entry["path"] == "model" and "--model" in entry["reason"]


def test_the_service_gives_the_same_error_entries(service, tmp_path):
    no_model = tmp_path / "nomodel.yaml"
    no_model.write_text("max-num-seqs: 8\n")
    cli_body = _error(*cli(str(no_model), ["--dialect", "vllm"], "--json")[:2])
    response = service.post("/v1/check", json={"dialect": "vllm", "config": {"max-num-seqs": 8}})
    assert response.status_code == 422
    answer = valid(response.json())
    assert comparable(answer, from_cli=False) == comparable(cli_body, from_cli=True)
    typos = {"max-num-seq": 8, "swap-space": 4, "max-num-seqs": "x"}
    response = service.post(
        "/v1/check", json={"dialect": "vllm", "config": typos, "model": "llama-3.1-8b"}
    )
    assert response.status_code == 422
    entries = {e["path"]: e for e in valid(response.json())["input_errors"]}
    assert set(entries) == set(typos)  # one entry a problem, each with its own path
    assert "max-num-seqs" in entries["max-num-seq"]["suggestions"]
    assert entries["max-num-seqs"]["value"] == "x"
    empty = service.post("/v1/check", json={"dialect": "vllm", "config": {}})
    assert (
        empty.status_code == 422
        and "no settings" in valid(empty.json())["input_errors"][0]["reason"]
    )


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"dialect": "tgi", "config": {"x": 1}}, "dialect"),
        ({"dialect": "vllm", "config": {"max-num-seqs": 8}, "gpus": 0}, "gpus"),
        ({"dialect": "vllm"}, "config"),
        ({"dialect": "vllm", "config": {"a": 1}, "modle": "x"}, "modle"),
    ],
)
def test_a_body_the_request_model_refuses_is_the_report_too(service, body, path):
    response = service.post("/v1/check", json=body)
    assert response.status_code == 422
    data = valid(response.json())
    assert data["verdict"] == "error" and data["error"] == "invalid_request"
    assert response.headers["x-arbiter-error"] == "invalid_request"
    assert [e["path"] for e in data["input_errors"]] == [path]


def test_the_openapi_answer_of_check_is_the_verdict_report(service):
    spec = service.get("/openapi.json").json()
    post = spec["paths"]["/v1/check"]["post"]
    for status in ("200", "409", "422"):
        ref = post["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/VerdictReport"), (status, ref)


def test_the_schema_file_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$id"].endswith(f":{SCHEMA['properties']['version']['default']}")
