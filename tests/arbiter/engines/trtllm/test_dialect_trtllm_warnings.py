"""The TensorRT engine builder's warnings are warnings: the config runs as written, the
verdict does not change, and no rule of any profile holds them any more."""

from __future__ import annotations

from arbiter.engines.trtllm.native import check_trtllm
from constraints.profiles import PROFILES
from constraints.rules import rules_for

FORMER_RULES = {"build.seq-len-within-model-positions", "build.token-budget-at-most-16k"}
TENSORRT = {"backend": "tensorrt"}


def test_no_profile_compiles_the_former_default_rules():
    for profile in PROFILES.values():
        ids = {r.id for r in rules_for(profile, "hard")} | {
            r.id for r in rules_for(profile, "default")
        }
        assert not ids & FORMER_RULES, profile.name


def test_token_budget_above_16k_is_built_as_given_with_a_warning():
    verdict = check_trtllm({**TENSORRT, "max_num_tokens": 32768})
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert verdict.resolution.value("build_config.max_num_tokens") == 32768
    assert any("max_num_tokens [32768] is above 16384" in w for w in verdict.warnings)
    quiet = check_trtllm({**TENSORRT, "max_num_tokens": 16384})
    assert not any("above 16384" in w for w in quiet.warnings)


def test_seq_len_above_the_model_positions_warns_and_is_kept():
    # the default model facts know 8192 positions
    verdict = check_trtllm({**TENSORRT, "max_seq_len": 16384, "max_num_tokens": 16384})
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert verdict.resolution.value("build_config.max_seq_len") == 16384
    assert any("max_position_embeddings [8192]" in w for w in verdict.warnings)
    within = check_trtllm({**TENSORRT, "max_seq_len": 8192})
    assert not any("max_position_embeddings" in w for w in within.warnings)


def test_the_pytorch_backend_has_no_builder_warnings():
    verdict = check_trtllm({"max_num_tokens": 32768, "max_seq_len": 16384})
    assert verdict.verdict == "accept", (verdict.reasons, verdict.changes)
    assert not any("builder" in w for w in verdict.warnings)
