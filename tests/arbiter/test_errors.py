"""Errors are data with their own answer: every public error of `arbiter` lives in
`arbiter.errors` and carries its exit code and HTTP status; `arbiter.application.outcome`
is the one mapping both front ends use; internal faults are InternalError (exit 3, 500)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import arbiter
from arbiter import errors, func, setup
from arbiter.application import outcome
from arbiter.cli import app
from arbiter.service import jobs
from constraints.errors import DomainError, UnknownPath, UnknownSection
from constraints.profiles import UnknownProfile

PUBLIC = {  # name -> where users import it from besides arbiter.errors
    "ArbiterError": "arbiter",
    "InternalError": "arbiter",
    "SolverModelInvalid": "arbiter",
    "InvalidClaim": "arbiter",
    "ConflictError": "arbiter",
    "SolveTimeout": "arbiter.solve",
    "MemoryConflictError": "arbiter.capacity",
    "ConfigArbitrateError": "arbiter.compat",
    "SweepError": "arbiter.sweep",
    "DialectError": "arbiter.dialects",
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_error_lives_in_errors_and_keeps_its_old_import_path(name):
    import importlib

    cls = getattr(errors, name)
    assert cls.__module__ == "arbiter.errors"
    assert getattr(importlib.import_module(PUBLIC[name]), name) is cls
    assert issubclass(cls, errors.ArbiterError)


@pytest.mark.parametrize(
    ("exc", "exit_code", "status", "code"),
    [
        (errors.InvalidClaim("bad", claim="c"), 2, 422, "invalid_claim"),
        (errors.DialectError("bad", key="k"), 2, 422, "invalid_config"),
        (errors.ConflictError([errors.Conflict(("a", "b"))]), 1, 409, "conflict"),
        (errors.SolveTimeout(1.5), 2, 408, "time_limit"),
        (errors.SweepError("models", "is missing"), 2, 422, "invalid_request"),
        (errors.InternalError("internal error: x"), 3, 500, "internal"),
        (errors.SolverModelInvalid("overflow"), 3, 500, "internal"),
        (UnknownPath("a.b", ("a.c",)), 2, 404, "not_found"),
        (UnknownSection("nope", ("kv_cache_config",)), 2, 404, "not_found"),
        (UnknownProfile("profile", "nope", ("trtllm-1.2",)), 2, 400, "invalid_input"),
        (DomainError("a.b", 3, "{1, 2}"), 2, 400, "invalid_input"),
        (RecursionError(), 2, 422, "invalid_request"),
        (KeyError("surprise"), 3, 500, "internal"),
    ],
)
def test_one_mapping_gives_exit_code_status_and_payload(exc, exit_code, status, code):
    answer = outcome(exc)
    assert (answer.exit_code, answer.http_status, answer.code) == (exit_code, status, code)
    assert answer.payload["error"] == code and answer.payload["message"]
    json.dumps(answer.payload)  # always JSON
    assert jobs.error_payload(exc) == (status, answer.payload)  # the service's answer
    if hasattr(type(exc), "exit_code"):
        assert errors.exit_code(exc) == exit_code  # type: ignore[arg-type]


def test_payloads_name_the_culprit():
    claim = outcome(errors.InvalidClaim("no", claim="c", path="p.q", value={1}, allowed="0..1"))
    assert claim.payload["claim"] == "c" and claim.payload["path"] == "p.q"
    assert claim.payload["value"] == "{1}"  # a value JSON cannot hold is shown, not dropped
    missing = outcome(UnknownPath("kv_cache_config.enable_blok_reuse", ("x.y",))).payload
    assert missing["path"] == "kv_cache_config.enable_blok_reuse" and missing["suggestions"]
    assert outcome(errors.SolveTimeout(2.0)).payload["value"] == 2.0
    conflict = outcome(errors.ConflictError([errors.Conflict(("a", "b"), ("r",))])).payload
    assert conflict["conflicts"][0]["claims"] == ["a", "b"] and conflict["report"] is None


def _corrupt_verification(monkeypatch):
    """Make the solver's answer violate a claim before the check in Python re-reads it,
    as a solver fault would: the real `verify` then finds it."""
    from arbiter.explain import resolved

    real = resolved.verify

    def verify(claims, rules, values):
        flipped = dict(values)
        flipped["kv_cache_config.enable_block_reuse"] = not flipped[
            "kv_cache_config.enable_block_reuse"
        ]
        return real(claims, rules, flipped)

    monkeypatch.setattr(resolved, "verify", verify)


CLAIMS = [
    setup("gpu", {"device.sm": 90}),
    func("reuse", {"kv_cache_config.enable_block_reuse": True}),
]


def test_a_solved_config_that_violates_a_claim_is_an_internal_error(monkeypatch, tmp_path):
    _corrupt_verification(monkeypatch)
    with pytest.raises(errors.InternalError, match="violates claim 'reuse'"):
        arbiter.arbitrate(CLAIMS)
    # the command line exits 3 (not 2, bad input), the service answers 500 (not 422)
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - {kind: setup, name: gpu, fixes: {device.sm: 90}}\n"
        "  - {kind: func, name: reuse, requires: {kv_cache_config.enable_block_reuse: true}}\n"
    )
    result = CliRunner().invoke(app, ["solve", str(claims)])
    assert result.exit_code == 3, result.output
    assert "internal error: solved config violates claim 'reuse'" in result.output
    body = [
        {"kind": "setup", "name": "gpu", "fixes": {"device.sm": 90}},
        {"kind": "func", "name": "reuse", "requires": {"kv_cache_config.enable_block_reuse": True}},
    ]
    status, text = jobs.run("solve", body, {"time_limit_s": 5.0})
    assert status == 500 and json.loads(text)["error"] == "internal"
    assert "violates claim 'reuse'" in json.loads(text)["message"]
    monkeypatch.undo()  # the same request, answered by a sound solver
    assert jobs.run("solve", body, {"time_limit_s": 5.0})[0] == 200
