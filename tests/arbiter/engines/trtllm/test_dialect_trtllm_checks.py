"""The TensorRT-LLM engine checks no option models (arbiter/engines/trtllm/checks.py):
each refuses its infeasible example and lets its feasible one through, only on the release
lines and backends it holds for; and the rewrites the PyTorch executor makes are adjusts."""

from __future__ import annotations

import pytest

from arbiter.engines.trtllm import checks as trtllm_checks
from arbiter.engines.trtllm import native as trtllm

DRAFT = "/path/to/draft"
CONNECTOR = {
    "connector_module": "my_pkg.kv_connector",
    "connector_scheduler_class": "Scheduler",
    "connector_worker_class": "Worker",
}
# check id -> (feasible, infeasible) LLM arguments
EXAMPLES = {
    "spec.draft-model-required": (
        {
            "speculative_config": {
                "decoding_type": "Eagle3",
                "max_draft_len": 3,
                "speculative_model": DRAFT,
            }
        },
        {"speculative_config": {"decoding_type": "Draft_Target", "max_draft_len": 3}},
    ),
    "spec.eagle-static-xor-dynamic-tree": (
        {
            "speculative_config": {
                "decoding_type": "Eagle3",
                "max_draft_len": 2,
                "speculative_model": DRAFT,
                "eagle_choices": [[0], [1], [0, 0]],
            }
        },
        {
            "speculative_config": {
                "decoding_type": "Eagle3",
                "max_draft_len": 2,
                "speculative_model": DRAFT,
                "eagle_choices": [[0], [1], [0, 0]],
                "use_dynamic_tree": True,
                "dynamic_tree_max_topK": 2,
            }
        },
    ),
    "parallel.cp-x-moe-ep": (
        {"tensor_parallel_size": 2, "context_parallel_size": 2},
        {"tensor_parallel_size": 2, "context_parallel_size": 2, "moe_expert_parallel_size": 2},
    ),
    "kv-connector.no-evict-policy": (
        {"kv_connector_config": CONNECTOR},
        {
            "kv_connector_config": CONNECTOR,
            "scheduler_config": {"capacity_scheduler_policy": "MAX_UTILIZATION"},
        },
    ),
    "kv-connector.no-vswa": (
        {
            "kv_connector_config": CONNECTOR,
            "kv_cache_config": {"max_attention_window": [4096, 4096]},
        },
        {
            "kv_connector_config": CONNECTOR,
            "kv_cache_config": {"max_attention_window": [4096, 32768]},
        },
    ),
    "spec.no-guided-decoding": (
        {"guided_decoding_backend": "xgrammar"},
        {
            "guided_decoding_backend": "xgrammar",
            "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 1},
        },
    ),
}
# the release line a check's examples are judged on (1.2 unless named)
RELEASE = {"spec.no-guided-decoding": "1.0"}


def test_every_check_has_examples_and_a_source():
    assert {c.id for c in trtllm_checks.CHECKS} == set(EXAMPLES)
    assert all("NVIDIA/TensorRT-LLM" in c.source for c in trtllm_checks.CHECKS)


@pytest.mark.parametrize("check_id", list(EXAMPLES))
def test_each_check_refuses_its_infeasible_example_only(check_id):
    feasible, infeasible = EXAMPLES[check_id]
    release = RELEASE.get(check_id, "1.2")
    assert not [r for r in trtllm_checks.refusals(feasible, release, "pytorch") if check_id in r]
    refused = trtllm_checks.refusals(infeasible, release, "pytorch")
    assert any(check_id in r for r in refused), refused


@pytest.mark.parametrize("check_id", list(EXAMPLES))
def test_check_trtllm_rejects_the_infeasible_example_naming_the_check(check_id):
    feasible, infeasible = EXAMPLES[check_id]
    profile = f"trtllm-{RELEASE.get(check_id, '1.2')}"
    assert trtllm.check_trtllm(feasible, gpus=4, profile=profile).verdict in ("accept", "adjust")
    verdict = trtllm.check_trtllm(infeasible, gpus=4, profile=profile)
    assert verdict.verdict == "reject"
    assert any(check_id in r for r in verdict.reasons), verdict.reasons


def test_checks_hold_only_where_their_scope_says():
    _, no_draft = EXAMPLES["spec.draft-model-required"]
    assert trtllm_checks.refusals(no_draft, "1.0", "pytorch") == []  # validator from 1.2
    _, policy = EXAMPLES["kv-connector.no-evict-policy"]
    assert trtllm_checks.refusals(policy, "1.2", "tensorrt") == []  # the PyTorch executor's
    _, cp_ep = EXAMPLES["parallel.cp-x-moe-ep"]
    assert trtllm_checks.refusals(cp_ep, "1.0", "tensorrt")  # the Mapping: both backends
    _, guided = EXAMPLES["spec.no-guided-decoding"]
    assert trtllm_checks.refusals(guided, "1.2", "pytorch") == []  # read for 1.0 only
    assert trtllm_checks.refusals(guided, "1.0", "tensorrt") == []  # the PyTorch executor's


def test_the_executor_rewrites_are_adjusts():
    encoder = trtllm.check_trtllm({"mm_encoder_only": True})
    assert encoder.verdict == "adjust"
    assert any("disable_overlap_scheduler: False -> True" in c for c in encoder.changes)
    assert (
        trtllm.check_trtllm({"mm_encoder_only": True, "disable_overlap_scheduler": True}).verdict
        == "accept"
    )
    vanilla = trtllm.check_trtllm(
        {
            "attn_backend": "VANILLA",
            "max_num_tokens": 4096,
            "kv_cache_config": {"tokens_per_block": 32},
        }
    )
    assert vanilla.verdict == "adjust"
    assert any(
        "tokens_per_block [32] overridden by max_num_tokens [4096]" in c for c in vanilla.changes
    )
    assert vanilla.config["kv_cache_config"]["tokens_per_block"] == 32  # carried as given


def test_a_config_without_a_backend_runs_on_the_profiles():
    verdict = trtllm.check_trtllm(
        {"build_config": {"max_batch_size": 8}}, profile="trtllm-tensorrt"
    )
    assert verdict.verdict in ("accept", "adjust"), verdict.reasons
    pytorch = trtllm.check_trtllm({"build_config": {"max_batch_size": 8}})
    assert pytorch.verdict == "reject" and "build_config" in pytorch.unknown_keys


def test_a_prebuilt_engine_is_taken_as_its_config_mapping():
    engine = {
        "pretrained_config": {
            "architecture": "LlamaForCausalLM",
            "dtype": "bfloat16",
            "num_hidden_layers": 22,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "vocab_size": 32000,
            "max_position_embeddings": 2048,
            "mapping": {"world_size": 1, "tp_size": 1, "pp_size": 1},
            "quantization": {"quant_algo": None, "kv_cache_quant_algo": None},
        },
        "build_config": {
            "max_batch_size": 8,
            "max_num_tokens": 256,
            "max_input_len": 1024,
            "max_seq_len": 2048,
            "max_beam_width": 1,
        },
    }
    below = trtllm.check_trtllm(
        {"max_batch_size": 4, "max_num_tokens": 16}, engine=engine, profile="trtllm-tensorrt"
    )
    assert below.verdict == "accept", (below.reasons, below.changes)
    above = trtllm.check_trtllm({"max_batch_size": 16}, engine=engine, profile="trtllm-tensorrt")
    assert above.verdict == "adjust"
    assert any("clamped to build_config.max_batch_size [8]" in c for c in above.changes)
