"""vLLM release lines: `--profile vllm-0.24` reads vLLM 0.24.0's own field list (the
release AIConfigurator 0.12's perf database and Dynamo 1.3 target), and a flag that only
another release has is named with the release that has it."""

from __future__ import annotations

import pytest

from arbiter import check
from arbiter.dialects.protocol import Machine
from arbiter.dialects.surface import load_surface
from arbiter.errors import DialectError
from constraints.profiles import get_profile

MODEL = "tests/fixtures/models/llama-3.1-8b.json"


@pytest.fixture(scope="module")
def machine():
    return Machine.read(MODEL, "H100", 1)


def test_the_field_lists_are_the_wheels():
    old, new = load_surface("vllm-0.24"), load_surface("vllm-0.33")
    assert (old.release, new.release) == ("0.24", "0.33")
    # fields vLLM 0.33 removed, and ones it added (both from the wheels' parsers)
    assert old.resolve("max-num-partial-prefills") and not new.resolve("max-num-partial-prefills")
    assert new.resolve("max-num-active-seqs") and not old.resolve("max-num-active-seqs")
    assert get_profile("vllm-0.24").engine == "vllm"


def test_a_flag_of_0_24_is_read_on_its_line(machine):
    # 1 is the only value 0.24.0 takes (EngineArgs._check_feature_supported refuses others)
    config = {"max-num-seqs": 256, "max-num-partial-prefills": 1}
    verdict = check("vllm", config, machine=machine, profile="vllm-0.24")
    assert verdict.verdict in ("accept", "adjust"), verdict.reasons
    assert verdict.profile == "vllm-0.24"
    assert "max-num-partial-prefills" in (verdict.config or {})


def test_a_flag_another_release_has_is_named_with_that_release(machine):
    with pytest.raises(DialectError) as caught:
        check("vllm", {"max-num-partial-prefills": 2}, machine=machine, profile="vllm-0.33")
    text = str(caught.value)
    assert "not a field of vLLM 0.33" in text and "--profile vllm-0.24" in text
    with pytest.raises(DialectError) as caught:
        check("vllm", {"max-num-active-seqs": 8}, machine=machine, profile="vllm-0.24")
    text = str(caught.value)
    assert "vllm serve 0.24" in text and "--profile vllm-0.33" in text


def test_a_key_no_release_has_keeps_its_suggestions(machine):
    with pytest.raises(DialectError) as caught:
        check("vllm", {"max-num-seqz": 8}, machine=machine, profile="vllm-0.24")
    assert "max_num_seqs" in str(caught.value) or "max-num-seqs" in str(caught.value)
