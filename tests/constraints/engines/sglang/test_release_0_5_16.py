"""SGLang 0.5.16 against its own code: every rule sourced to 0.5.23 is checked against
0.5.16 (held there too, or scoped to 0.5.23 on), 0.5.16's own forms are in its profile
only, and the dialect reads 0.5.16's merger, attention-DP switch and quantization methods
as 0.5.16's code does (the values and verdicts below are those the 0.5.16 wheel gave in
benchmarks/oracle_sglang.py)."""

from __future__ import annotations

import pytest

from arbiter.engines.sglang.native import check_sglang
from arbiter.engines.sglang.serve import SglangArgsError, read_arguments
from constraints.engines.sglang.rules import release_0_5_16
from constraints.engines.sglang.rules._releases import BOTH, ONLY_0_5_16, ONLY_0_5_23
from constraints.profiles import get_profile
from constraints.rules import pack_rules

RULES = {r.id: r for r in pack_rules("sglang")}
P16, P23 = get_profile("sglang-0.5.16"), get_profile("sglang-0.5.23")


def test_every_rule_sourced_to_0_5_23_is_checked_against_0_5_16():
    sourced = {i for i, r in RULES.items() if r.source.version == "0.5.23"}
    assert sourced == set(BOTH) | set(ONLY_0_5_23)
    assert not set(BOTH) & set(ONLY_0_5_23)
    assert all(BOTH.values()) and all(ONLY_0_5_23.values())


@pytest.mark.parametrize("rule_id", sorted(BOTH))
def test_a_rule_both_releases_hold_is_in_both_profiles(rule_id):
    assert P16.admits(RULES[rule_id]) and P23.admits(RULES[rule_id])


@pytest.mark.parametrize("rule_id", sorted(ONLY_0_5_23))
def test_a_rule_0_5_16_does_not_hold_is_out_of_its_profile(rule_id):
    assert P23.admits(RULES[rule_id]) and not P16.admits(RULES[rule_id])
    # where 0.5.16 has its own form, the reason names it and it is in 0.5.16's profile
    named = [i for i in RULES if i.endswith("-0.5.16") and i in ONLY_0_5_23[rule_id]]
    for other in named:
        assert P16.admits(RULES[other]) and not P23.admits(RULES[other])


@pytest.mark.parametrize("rule", release_0_5_16.RULES, ids=lambda r: r.id)
def test_0_5_16_forms_are_sourced_to_0_5_16(rule):
    assert rule.source.version == "0.5.16" and rule.source.ref == "v0.5.16"
    assert P16.admits(RULES[rule.id]) and not P23.admits(RULES[rule.id])
    assert any(rule.id in why for why in ONLY_0_5_23.values()) or rule.id in ONLY_0_5_16


def test_the_0_5_16_merger_refuses_keys_by_the_field_they_write():
    """0.5.16's ConfigArgumentMerger refuses a YAML key that is the dest of a deprecated
    alias (`cuda-graph-bs-decode`), while the alias itself (`cuda-graph-bs`) passes."""
    args = read_arguments({"cuda-graph-bs": [1, 2, 4]}, None, line="sglang-0.5.16")
    assert [int(b) for b in args.values["cuda_graph_bs_decode"]] == [1, 2, 4]
    with pytest.raises(SglangArgsError) as err:
        read_arguments({"cuda-graph-bs-decode": [1, 2, 4]}, None, line="sglang-0.5.16")
    (problem,) = err.value.problems
    assert problem.key == "cuda-graph-bs-decode"
    assert "DeprecatedAliasStoreAction" in str(problem) and "cuda-graph-bs" in str(problem)
    with pytest.raises(SglangArgsError) as err:
        read_arguments({"disable-cuda-graph": True}, None, line="sglang-0.5.16")
    assert "DeprecatedStoreTrueAction" in str(err.value)


def test_dp_attention_with_one_dp_group_is_turned_off_and_still_pads():
    """0.5.16 resets --enable-dp-attention with dp_size 1 (_data_parallelism_defaults), after
    its memory step read the switch: an H100's fraction 0.826 (0.5.16's own), not 0.83."""
    verdict = check_sglang({"enable-dp-attention": True}, device="H100", profile="sglang-0.5.16")
    assert verdict.verdict == "adjust"
    assert any(c.startswith("enable-dp-attention: True -> False") for c in verdict.changes)
    assert verdict.resolution is not None
    fraction = verdict.resolution.values["kv_cache_config.free_gpu_memory_fraction"]
    assert fraction == 0.826
    plain = check_sglang({"tp-size": 1}, device="H100", profile="sglang-0.5.16")
    assert plain.resolution is not None
    assert plain.resolution.values["kv_cache_config.free_gpu_memory_fraction"] == 0.83


def test_plain_gptq_exists_on_cuda_in_0_5_16_only():
    old = check_sglang({"quantization": "gptq"}, device="H100", profile="sglang-0.5.16")
    new = check_sglang({"quantization": "gptq"}, device="H100", profile="sglang-0.5.23")
    assert old.verdict == "accept"
    assert new.verdict == "reject" and any("gptq_marlin" in r for r in new.reasons)


@pytest.mark.parametrize(
    ("config", "device", "rule_id"),
    [
        ({"attention-backend": "trtllm_mha"}, "H100", "trtllm-mha-needs-hopper-or-blackwell"),
        ({"enable-lora": True, "max-lora-rank": 8, "lora-target-modules": ["q_proj"],
          "speculative-algorithm": "EAGLE", "speculative-draft-model-path": "x"},
         "H100", "lora-speculative"),
        ({"pp-size": 2, "speculative-algorithm": "EAGLE", "speculative-draft-model-path": "x",
          "disaggregation-mode": "prefill"}, "H100", "pp-no-speculative"),
    ],
)  # fmt: skip
def test_0_5_16_refuses_what_0_5_23_runs(config, device, rule_id):
    """SGLang 0.5.16 refuses each (trtllm_mha prefill off SM100; LoRA beside EAGLE; PP with
    speculative decoding), 0.5.23 runs it."""
    old = check_sglang(config, device=device, gpus=8, profile="sglang-0.5.16")
    new = check_sglang(config, device=device, gpus=8, profile="sglang-0.5.23")
    assert old.verdict == "reject", old.reasons
    assert any(rule_id in r for r in old.rules), old.rules
    assert new.verdict in ("accept", "adjust"), new.reasons


def test_0_5_16_pages_trtllm_mha_at_most_64():
    """0.5.16's _mla_backend_page_constraints takes trtllm_mha pages of 16-64 tokens only."""
    config = {"attention-backend": "trtllm_mha", "page-size": 128}
    old = check_sglang(config, device="B200", profile="sglang-0.5.16")
    new = check_sglang(config, device="B200", profile="sglang-0.5.23")
    assert old.resolution is not None and new.resolution is not None
    assert old.resolution.values["kv_cache_config.tokens_per_block"] == 64
    assert new.resolution.values["kv_cache_config.tokens_per_block"] == 128


def test_a_value_one_release_lacks_is_refused_there_naming_the_release_that_has_it():
    """0.5.16's cutlass_mla backend and fp4_e2m1 KV dtype: 0.5.23's reading names 0.5.16
    and its profile; 0.5.16 reads cutlass_mla, and refuses fp4_e2m1 as its model runner
    does (deprecated)."""
    for key, value in (("attention-backend", "cutlass_mla"), ("kv-cache-dtype", "fp4_e2m1")):
        with pytest.raises(SglangArgsError) as err:
            read_arguments({key: value}, None, line="sglang-0.5.23")
        (problem,) = err.value.problems
        assert problem.key == key
        assert "SGLang 0.5.16: --profile sglang-0.5.16" in str(problem)
        assert read_arguments({key: value}, None, line="sglang-0.5.16").values
    for rule_id in ("sglang.cutlass-mla-until-0.5.16", "sglang.fp4-e2m1-kv-until-0.5.16"):
        assert P23.admits(RULES[rule_id]) and not P16.admits(RULES[rule_id])
        assert "0.5.16" in RULES[rule_id].text
    deprecated = RULES["sglang.fp4-e2m1-kv-deprecated-0.5.16"]
    assert P16.admits(deprecated) and not P23.admits(deprecated)
