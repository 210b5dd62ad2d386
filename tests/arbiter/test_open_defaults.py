"""What an engine runs for a field left open is one mechanism: every pack's `defaults.py`
declares its rows (`OPEN_DEFAULTS`, `open_defaults`) as `EngineDefault`s, and
`open_default_claims` alone turns rows into claims (setup, or func where a conflict may
name the default). No pack keeps a second table."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from arbiter.claims import FuncClaim, SetupClaim
from arbiter.dialects import DIALECTS
from arbiter.dialects.open_defaults import EngineDefault, open_default_claims
from arbiter.dialects.protocol import Machine

ROOT = Path(__file__).resolve().parents[2]
PACKS = ROOT / "arbiter" / "engines"


def row(path, value, claim="c", blame=False, source="s", field="f"):
    return EngineDefault(field, path, value, source, claim, blame)


def test_rows_of_one_claim_become_one_claim_of_its_kind():
    claims = open_default_claims(
        [
            row("build_config.max_batch_size", 1, "facts", source="one"),
            row("quant_config.quant_algo", None, "facts", source="two"),
            row("moe_config.backend", "CUTLASS", "named", blame=True),
            row(
                "build_config.max_batch_size", 2, "facts", source="one"
            ),  # a later row of the same path wins
        ]
    )
    assert [type(c) for c in claims] == [SetupClaim, FuncClaim]
    facts, named = claims
    assert facts.name == "facts" and facts.fixes == {
        "build_config.max_batch_size": 2,
        "quant_config.quant_algo": None,
    }
    assert facts.source == "one; two"
    assert named.name == "named" and named.requires == {"moe_config.backend": "CUTLASS"}


def test_no_rows_no_claims():
    assert open_default_claims([]) == []


@pytest.mark.parametrize("engine", list(DIALECTS))
def test_every_pack_declares_its_rows_in_the_common_form(engine):
    module = importlib.import_module(f"arbiter.engines.{engine}.defaults")
    assert callable(module.open_defaults)
    assert module.OPEN_DEFAULTS
    for entry in module.OPEN_DEFAULTS:
        assert isinstance(entry, EngineDefault)
        assert entry.path and entry.source and entry.claim


def _claim(reading, name):
    return next(c for c in reading.claims if c.name == name)


def test_trtllm_open_fields_come_from_its_table():
    from arbiter.engines.trtllm import defaults

    reading = DIALECTS["trtllm"].read({"max_batch_size": 8}, machine=Machine())
    facts = _claim(reading, defaults.LEFT_OPEN)
    assert isinstance(facts, SetupClaim)
    table = {r.path: r.value for r in defaults.OPEN_DEFAULTS if not r.blame}
    assert facts.fixes == table
    backend = _claim(reading, "engine default moe_config.backend")
    assert isinstance(backend, FuncClaim)  # blamable: a conflict names it
    assert backend.requires == {"moe_config.backend": "AUTO"}  # 1.2's default
    # a field the input sets is no open field
    given = DIALECTS["trtllm"].read({"moe_config": {"backend": "CUTLASS"}}, machine=Machine())
    assert not any(c.name == "engine default moe_config.backend" for c in given.claims)


def test_sglang_open_fields_come_from_its_table():
    from arbiter.engines.sglang import defaults

    reading = DIALECTS["sglang"].read({"model-path": "m", "tp-size": 2}, machine=Machine())
    unset = _claim(reading, "sglang.unset")
    assert isinstance(unset, FuncClaim)
    table = {r.path: r.value for r in defaults.OPEN_DEFAULTS}
    assert set(unset.requires) <= set(table)
    assert all(unset.requires[p] == table[p] for p in unset.requires)
    assert "parallel_config.tensor_parallel_size" not in unset.requires  # tp-size given
    assert unset.requires["parallel_config.pipeline_parallel_size"] == 1


def test_vllm_open_fields_come_from_its_table():
    from arbiter.engines.vllm import defaults

    reading = DIALECTS["vllm"].read({"model": "m"}, machine=Machine())
    facts = _claim(reading, defaults.LEFT_OPEN)
    assert isinstance(facts, SetupClaim)
    for entry in defaults.OPEN_DEFAULTS:
        assert facts.fixes[entry.path] == entry.value, entry
    spec = DIALECTS["vllm"].read(
        {"model": "m", "speculative-config": {"method": "ngram", "num_speculative_tokens": 2}},
        machine=Machine(),
    )
    assert "vllm_config.speculative_method" not in _claim(spec, defaults.LEFT_OPEN).fixes


# names the old per-engine tables had; a claim built outside the shared mechanism for
# "what the engine runs for a field left open" would carry one of these phrases
OLD_TABLES = {"PINNED", "LEFT_TO_ENGINE", "MLC_DEFAULTS", "UNSET"}
OPEN_PHRASES = ("defaults of the fields", "left to the engine", "engine default ")


def _modules():
    return sorted(p for p in PACKS.rglob("*.py"))


def test_no_pack_keeps_a_second_table():
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Name):
                    assert target.id not in OLD_TABLES, f"{path}: {target.id}"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("setup", "func") or not node.args:
                continue
            first = node.args[0]
            text = first.value if isinstance(first, ast.Constant) else ""
            if isinstance(first, ast.JoinedStr):
                text = "".join(v.value for v in first.values if isinstance(v, ast.Constant))
            assert not any(p in str(text) for p in OPEN_PHRASES), (
                f"{path}:{node.lineno}: an open-field claim outside open_default_claims"
            )
