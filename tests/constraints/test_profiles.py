"""Profiles: one engine release line each, with its defaults and the rules in its scope."""

from __future__ import annotations

import pytest

from arbiter import InvalidClaim, arbitrate, func
from constraints.profiles import ALIASES, DEFAULT_PROFILE, MODES, PROFILES, get_profile
from constraints.rules import all_rules, rules_for
from constraints.schema import lookup

PAGED = "plugin_config.use_paged_context_fmha"
CHUNKED = {"scheduler_config.enable_chunked_context": True}
TPB = "kv_cache_config.tokens_per_block"


def test_profiles_are_consistent_with_the_rules():
    for name in PROFILES:
        r = arbitrate([], profile=name)
        assert r.changes == (), name  # each profile's defaults break no rule in its scope
        assert r.stats["profile"] == name


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_defaults_are_valid_options(name):
    profile = PROFILES[name]
    assert profile.engine in ("trtllm", "vllm", "sglang", "mlc")
    for path, value in profile.defaults.items():
        assert lookup(path).check(value) == value, (name, path)
    if profile.engine == "trtllm":  # the backend option follows the release line
        assert profile.defaults["runtime_config.backend"] == profile.backend
        assert profile.release


def test_release_lines_and_the_default():
    assert DEFAULT_PROFILE == "trtllm-1.2"
    p = get_profile(None)
    assert (p.engine, p.backend, p.release) == ("trtllm", "pytorch", "1.2")
    assert (PROFILES["trtllm-1.0"].backend, PROFILES["trtllm-1.0"].release) == ("pytorch", "1.0")
    assert PROFILES["trtllm-tensorrt"].backend == "tensorrt"
    assert PROFILES["trtllm-0.10"].backend == "tensorrt"
    assert (PROFILES["mlc"].engine, PROFILES["mlc"].backend) == ("mlc", "")
    assert arbitrate([]).value("runtime_config.backend") == "pytorch"


def test_old_names_are_aliases():
    assert ALIASES["trtllm-current"] == "trtllm-1.2"
    assert get_profile("trtllm-current") is PROFILES["trtllm-1.2"]
    assert arbitrate([], profile="trtllm-current").stats["profile"] == "trtllm-1.2"
    with pytest.raises(InvalidClaim, match="trtllm-tensorrt"):
        arbitrate([], profile="trtllm-0.9")


def test_trtllm_010_defaults_of_the_arbitrator_era():
    r = arbitrate([], profile="trtllm-0.10")
    assert r.value(PAGED) is False
    assert r.value("plugin_config.use_fp8_context_fmha") is False
    assert r.value(TPB) == 64
    assert r.value("build_config.max_num_tokens") == 2048
    assert r.value("kv_cache_config.enable_block_reuse") is False
    trt = arbitrate([], profile="trtllm-tensorrt")
    assert trt.value(PAGED) is True and trt.value(TPB) == 32
    assert trt.value("build_config.max_num_tokens") == 8192


def test_mlc_prefill_chunk_is_8192():
    assert PROFILES["mlc"].defaults["build_config.max_num_tokens"] == 8192
    assert PROFILES["mlc"].defaults[TPB] == 16


def test_chunked_context_costs_a_change_only_under_the_old_defaults():
    # chunked context needs paged context FMHA, off by default on 0.10 TensorRT engines
    old = arbitrate([func("chunked", CHUNKED)], profile="trtllm-0.10")
    new = arbitrate([func("chunked", CHUNKED)], profile="trtllm-tensorrt")
    torch = arbitrate([func("chunked", CHUNKED)])
    assert {c.path for c in old.changes} == {PAGED, "scheduler_config.enable_chunked_context"}
    assert {c.path for c in new.changes} == {"scheduler_config.enable_chunked_context"}
    assert {c.path for c in torch.changes} == {"scheduler_config.enable_chunked_context"}
    assert old.provenance(PAGED).rules == ("scheduler.chunked-context-needs-paged-context-fmha",)


def test_explicit_defaults_override_the_profile():
    r = arbitrate([], profile="trtllm-0.10", defaults={TPB: 128})
    assert r.value(TPB) == 128 and r.changes == ()


def test_each_profile_compiles_its_own_rules():
    ids = {name: {r.id for r in rules_for(p)} for name, p in PROFILES.items()}
    assert "speculative.eagle-limits" in ids["trtllm-tensorrt"]
    assert "speculative.eagle-limits" not in ids["trtllm-1.2"]
    assert "runtime.flashinfer-no-block-reuse" in ids["trtllm-1.2"]
    assert "runtime.flashinfer-no-block-reuse" not in ids["trtllm-tensorrt"]
    assert "kv.beam-search-no-block-reuse" in ids["trtllm-0.10"]
    assert "kv.beam-search-no-block-reuse" not in ids["trtllm-tensorrt"]
    assert "runtime.spec-without-overlap-scheduler" in ids["trtllm-1.0"]
    assert "runtime.spec-without-overlap-scheduler" not in ids["trtllm-1.2"]
    assert all(not i.startswith(("plugin.", "pairs.")) for i in ids["mlc"])
    trtllm = [name for name, p in PROFILES.items() if p.engine == "trtllm"]
    assert all(".v29." not in i and not i.startswith("vllm.") for n in trtllm for i in ids[n])
    assert "pairs.v29.encoder-decoder-x-lora" in ids["vllm-0.33"]
    assert "vllm.scheduler.budget-holds-seqs" in ids["vllm-0.33"]
    assert not any(i.startswith(("plugin.", "build.", "kv.")) for i in ids["vllm-0.33"])


def test_profile_and_mode_catalogues():
    assert get_profile("mlc").memory_terms == "mlc"
    assert set(MODES) == {"local", "interactive", "server"}
    assert len(all_rules()) >= 80


def _packs(tmp_path, monkeypatch, files: dict[str, str]):
    from constraints import profiles

    for engine, text in files.items():
        (tmp_path / "engines" / engine).mkdir(parents=True)
        (tmp_path / "engines" / engine / "profiles.yaml").write_text(text)
    monkeypatch.setattr(profiles, "_pack_roots", lambda: [tmp_path / "engines"])
    return profiles._read_packs


GOOD = "default: demo-1\nprofiles:\n  - {name: demo-1, version: '1.0', description: Demo}\n"


def test_the_profiles_are_the_packs_files_and_no_list_here():
    import ast
    from pathlib import Path

    from constraints import profiles

    files = profiles._pack_files()
    assert [f.parent.name for f in files] == sorted(profiles.ENGINES)
    declared = {p.engine for p in PROFILES.values()}
    assert declared == set(profiles.ENGINES)
    # the module names no engine: every engine name literal lives in its pack's file
    tree = ast.parse(Path(profiles.__file__).read_text())
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not names & set(profiles.ENGINES), names & set(profiles.ENGINES)


def test_a_packs_profile_file_is_read_with_its_folder_as_the_engine(tmp_path, monkeypatch):
    read = _packs(tmp_path, monkeypatch, {"demo": GOOD + "aliases: {demo-old: demo-1}\n"})
    found, aliases, default = read()
    assert list(found) == ["demo-1"] and found["demo-1"].engine == "demo"
    assert aliases == {"demo-old": "demo-1"} and default == "demo-1"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("profiles:\n  - {name: x, version: '1', description: d, colour: red}\n", "colour"),
        ("profiles:\n  - {version: '1', description: d}\n", "profiles.0.name: Field required"),
        ("profiles: {}\n", "profiles: Input should be a valid list"),
        ("profiles:\n  - {name: x, version: 1.2, description: d}\n", "profiles.0.version"),
        (GOOD + "aliases: {old: nowhere}\n", "'nowhere'"),
        ("profiles:\n  - {name: x, version: '1', description: d, defaults: [1]}\n", "defaults"),
        ("profiles:\n  - {name: x, version: '1', description: d}\n", "default profile"),
    ],
)
def test_a_bad_profile_file_is_an_error_naming_the_file_and_key(tmp_path, monkeypatch, text, says):
    from constraints.errors import SchemaError

    read = _packs(tmp_path, monkeypatch, {"demo": text})
    with pytest.raises(SchemaError, match=says) as err:
        read()
    if "alias" not in text and "default profile" not in says:
        assert "demo/profiles.yaml" in str(err.value)
