"""MLC dialect: EngineConfig JSON <-> claims, modes and rule M11."""

from __future__ import annotations

import json

import pytest

from arbiter import FuncClaim, PerfClaim, arbitrate
from arbiter.dialects import DialectError, machine_claims
from arbiter.engines.mlc import native as mlc


def solve(config, device="H100-80GB"):
    parsed = mlc.read(config)
    claims = [*parsed.claims, *machine_claims(device=device)]
    r = arbitrate(claims, profile=parsed.profile, mode=parsed.mode)
    return r, mlc.write(r, parsed.mode, parsed.native.passthrough)


def test_fields_map_to_options_and_defaults_are_soft():
    parsed = mlc.read(
        {
            "mode": "server",
            "max_num_sequence": 32,
            "kv_cache_page_size": 16,
            "prefill_mode": "hybrid",
        }
    )
    claims = {c.name: c for c in parsed.claims}
    assert parsed.profile == "mlc" and parsed.mode == "server"
    assert isinstance(claims["mlc.max_num_sequence"], FuncClaim)
    assert isinstance(claims["mlc.default.kv_cache_page_size"], PerfClaim)
    assert isinstance(claims["mlc.default.prefill_mode"], PerfClaim)


def test_speculative_hybrid_prefill_falls_back_to_chunked():
    r, out = solve(
        {
            "mode": "local",
            "speculative_mode": "eagle",
            "spec_draft_length": 4,
            "prefill_mode": "hybrid",
        }
    )
    assert out["prefill_mode"] == "chunked" and out["speculative_mode"] == "eagle"
    reason = r.dropped[0].reason
    assert r.dropped_names == ("mlc.default.prefill_mode",)
    assert reason.rules == ("mlc.speculative-needs-chunked-prefill",)


def test_modes_infer_what_is_unset():
    _, server = solve({"mode": "server"})
    assert server["max_num_sequence"] == 128 and server["prefill_chunk_size"] == 8192
    assert server["max_total_sequence_length"] > 400_000
    _, local = solve({"mode": "local"})
    assert local["max_num_sequence"] == 4 and local["max_total_sequence_length"] == 8192
    _, interactive = solve({"mode": "interactive", "max_single_sequence_length": 4096})
    assert interactive["max_num_sequence"] == 1
    assert interactive["max_total_sequence_length"] == 4096


def test_write_keeps_passthrough_fields(tmp_path):
    path = tmp_path / "engine.json"
    path.write_text(
        json.dumps({"model": "dist/x", "model_lib": None, "mode": "server", "verbose": True})
    )
    _, out = solve(path)
    assert out["model"] == "dist/x" and out["verbose"] is True and out["mode"] == "server"
    assert out["prefix_cache_mode"] == "radix"


def test_bad_fields_name_the_key_and_file(tmp_path):
    path = tmp_path / "engine.json"
    path.write_text(json.dumps({"mode": "server", "max_num_sequences": 4}))
    with pytest.raises(DialectError) as err:
        mlc.read(path)
    assert err.value.key == "max_num_sequences" and str(path) in str(err.value)
    assert "max_num_sequence" in err.value.suggestions
    with pytest.raises(DialectError, match="mode"):
        mlc.read({"mode": "batch"})
    with pytest.raises(DialectError, match="speculative_mode"):
        mlc.read({"speculative_mode": "ngram"})
