"""The adapter that asks arbiter for its verdict: through `check_trtllm` once the dialect
has it (a stand-in here), and through today's dialect path meanwhile."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from arbiter.dialects import DialectError, trtllm
from constraints.profiles import PROFILES

from . import adapter
from .cases import FIXTURE_DIR, validate

BASE = {
    "id": "x-adapter",
    "provenance": {"repo": "NVIDIA/TensorRT-LLM", "path": "a.yaml", "ref": "abc123"},
    "engine": "trtllm",
    "profile": "trtllm-1.2",
    "backend": "pytorch",
    "model": None,
    "device": None,
    "gpus": 1,
    "config": {"max_batch_size": 8},
    "verdict": "accept",
    "why": "a stand-in case for the adapter",
}


def case(**change):
    return validate({**BASE, **change}, "inline")


@pytest.fixture
def stand_in(monkeypatch):
    """A `check_trtllm` that records its call; `trtllm-1.2` exists as a profile."""
    calls = []

    def check_trtllm(config, *, serve_args=None, model=None, device=None, gpus=1, profile=None):
        calls.append(dict(config=config, serve_args=serve_args, model=model, device=device,
                          gpus=gpus, profile=profile))  # fmt: skip
        return SimpleNamespace(verdict="adjust", reasons=("overlap scheduler off",))

    monkeypatch.setattr(trtllm, "check_trtllm", check_trtllm, raising=False)
    return calls


def test_check_trtllm_gets_the_whole_case_and_gives_the_verdict(stand_in):
    model = "llama-3.3-70b-fp8"
    out = adapter.our_verdict(
        case(model=model, device="H200", gpus=2, serve_args="--tp_size 2", config={"a": 1})
    )
    assert out == adapter.Outcome("adjust", ("overlap scheduler off",), "check_trtllm")
    assert stand_in == [
        dict(
            config={"a": 1},
            serve_args="--tp_size 2",
            model=FIXTURE_DIR / f"{model}.json",
            device="H200",
            gpus=2,
            profile="trtllm-1.2",
        )  # fmt: skip
    ]


def test_bad_input_raised_by_check_trtllm_is_a_reject(monkeypatch, stand_in):
    def refuse(config, **kwargs):
        raise DialectError("unknown argument", key="invalid_arg")

    monkeypatch.setattr(trtllm, "check_trtllm", refuse)
    out = adapter.our_verdict(case())
    assert out.verdict == "reject" and "invalid_arg" in out.reasons[0]


def test_facts_arbiter_lacks_are_an_error_not_a_reject(monkeypatch, stand_in):
    import constraints.profiles as profiles

    # a stand-in registry without the line (the shared one keeps its order)
    without = {name: p for name, p in PROFILES.items() if name != "trtllm-1.0"}
    monkeypatch.setattr(profiles, "PROFILES", without)
    assert adapter.our_verdict(case(device="NoSuchGPU")).verdict == "error"
    assert adapter.our_verdict(case(profile="trtllm-1.0")).verdict == "error"
    assert stand_in == []


def test_a_prebuilt_engine_is_passed_as_its_config_when_check_trtllm_takes_one(monkeypatch):
    seen = {}

    def check_trtllm(config, *, engine=None, **kwargs):
        seen.update(engine)  # the engine's config.json, as a mapping
        return SimpleNamespace(verdict="accept", reasons=())

    monkeypatch.setattr(trtllm, "check_trtllm", check_trtllm, raising=False)
    engine = {"build_config": {"max_batch_size": 8}, "pretrained_config": {"dtype": "float16"}}
    out = adapter.our_verdict(
        case(profile="trtllm-tensorrt", backend="tensorrt", prebuilt_engine=engine)
    )
    assert out.verdict == "accept" and seen == engine


def test_without_check_trtllm_unknown_keys_and_serve_flags_are_refused(monkeypatch):
    monkeypatch.delattr(trtllm, "check_trtllm", raising=False)
    out = adapter.our_verdict(case(config={"invalid_arg": 1}))
    assert out.verdict == "reject" and out.via == "trtllm.read+arbitrate"
    assert "invalid_arg" in out.reasons[0]
    out = adapter.our_verdict(case(serve_args="--tp 8"))
    assert out == adapter.Outcome("reject", ("--tp: no such trtllm-serve option",), out.via)


def test_without_check_trtllm_an_unknown_device_is_an_error(monkeypatch):
    monkeypatch.delattr(trtllm, "check_trtllm", raising=False)
    out = adapter.our_verdict(case(device="NoSuchGPU"))
    assert out.verdict == "error" and "NoSuchGPU" in out.reasons[0]


def test_an_mlc_fallback_is_an_adjust():
    mlc_case = validate(
        {
            **BASE,
            "id": "x-mlc",
            "engine": "mlc",
            "profile": "mlc",
            "backend": "",
            "config": {
                "model": "m",
                "mode": "local",
                "speculative_mode": "small_draft",
                "prefill_mode": "hybrid",
            },
            "verdict": "adjust",
        },
        "inline",
    )
    out = adapter.our_verdict(mlc_case)
    assert out.verdict == "adjust" and out.via == "mlc.read+arbitrate"
    assert any("prefill_mode" in r for r in out.reasons)


def test_a_release_line_arbiter_lacks_stands_in_by_todays_profile(monkeypatch):
    import constraints.profiles as profiles

    assert adapter.profile_today("mlc") == "mlc"
    # stand-in registries, never the shared one: deleting and restoring a key of PROFILES
    # moves it to the end, and every later reader (the engine pages) sees another order
    without = {name: p for name, p in PROFILES.items() if name != "trtllm-1.0"}
    monkeypatch.setattr(profiles, "PROFILES", without)
    assert adapter.profile_today("trtllm-1.0") == "trtllm-1.2"
    monkeypatch.setattr(profiles, "PROFILES", {**without, "trtllm-1.0": PROFILES["trtllm-1.2"]})
    assert adapter.profile_today("trtllm-1.0") == "trtllm-1.0"


def test_the_stand_in_test_leaves_the_profile_order_alone():
    # the order the packs declare them in: packs by name, each pack's lines as its file
    engines = [p.engine for p in PROFILES.values()]
    assert engines == sorted(engines)
    names = list(PROFILES)
    assert names.index("trtllm-1.2") < names.index("trtllm-1.0") < names.index("trtllm-0.10")


def test_an_agreeing_refusal_of_an_unknown_key_is_counted_as_an_accident():
    from arbiter.dialects.trtllm import check_trtllm

    from .report import by_accident

    hook = case(
        config={"skip_tokenizer_init": True, "post_processor_hook": "my_pkg.Hook"},
        verdict="reject",
        reject="a post-processor hook needs the tokenizer",
    )
    verdict = check_trtllm(dict(hook.config), profile="trtllm-1.2")
    ours = adapter.Outcome(verdict.verdict, tuple(verdict.reasons), "check_trtllm")
    assert ours.verdict == "reject"
    assert by_accident(hook, ours)  # refused for the key 1.2 lacks, not for the pair
    renamed = case(config={"bogus": 1}, verdict="reject", reject="extra=forbid: bogus")
    assert not by_accident(renamed, ours)  # the engine refuses the key too
