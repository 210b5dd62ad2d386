"""vLLM 0.33's rule pack: sources and scopes, what the vllm-0.33 profile compiles, and the
rules whose expression is built from the model's facts."""

from __future__ import annotations

import pytest

from constraints import EngineConfig, violations
from constraints.profiles import PROFILES, get_profile
from constraints.rules import every_rule, get_rule, rules_for
from constraints.rules.base import Scope, bind_rule

VLLM = get_profile("vllm-0.33")
PACK = [r for r in every_rule() if r.pack == "vllm"]


# each scope with the release(s) its source was read from
SCOPES = {
    Scope("vllm", since="0.33"): "0.33.0",
    Scope("vllm", since="0.24"): "0.24.0, 0.33.0",
    Scope("vllm", since="0.24", until="0.24"): "0.24.0",
}


# rules that apply shared arithmetic (constraints.shared.rules) to vLLM's own options: in
# the pack since they read `vllm_config`, with the ids and the engine-wide scope they had
# in the shared pack
ON_SHARED_ARITHMETIC = {
    "machine.vllm-dp-replicas-fit-devices",
    "experts.vllm-expert-ranks-are-tensor-times-data-ranks",
}


def test_every_rule_of_the_pack_is_sourced_and_scoped_to_its_releases():
    assert len(PACK) >= 18
    moved = [r for r in PACK if r.id in ON_SHARED_ARITHMETIC]
    assert {r.id for r in moved} == ON_SHARED_ARITHMETIC
    for rule in moved:
        assert rule.scope == Scope("vllm"), rule.id
        assert rule.source.engine == "vLLM" and rule.source.file.startswith("vllm/"), rule.id
    for rule in (r for r in PACK if r.id not in ON_SHARED_ARITHMETIC):
        assert rule.id.startswith("vllm."), rule.id
        assert rule.scope in SCOPES, rule.id
        assert rule.source.engine == "vLLM", rule.id
        assert rule.source.version == SCOPES[rule.scope], rule.id
        assert rule.source.file.startswith("vllm/") and rule.source.ref, rule.id


def test_the_pack_is_compiled_for_vllm_only():
    pack = {r.id for r in PACK if VLLM.admits(r)}
    assert pack <= {r.id for r in rules_for(VLLM)}
    old = {r.id for r in rules_for(get_profile("vllm-0.24"))}
    assert {r.id for r in PACK if r.scope.until == "0.24"} <= old
    assert not {r.id for r in PACK if r.scope.until == "0.24"} & {r.id for r in rules_for(VLLM)}
    for name, profile in PROFILES.items():
        if profile.engine != "vllm":
            assert not pack & {r.id for r in rules_for(profile)}, name


def test_rules_every_engine_shares_are_no_tensorrt_llm_rules():
    """What the vllm profile compiles beyond vLLM's own scope: only rules that state a
    fact of every engine (memory, the GPUs there are, heads split over TP ranks)."""
    shared = {r.id for r in rules_for(VLLM) if r.scope.engine == "any"}
    assert shared == {
        "memory.weights-fit",
        "machine.parallel-fits-devices",
        "parallel.heads-divisible-by-tp",
    }
    assert all(r.scope.engine in ("any", "vllm") for r in rules_for(VLLM))
    assert not any(
        r.id.startswith(("plugin.", "build.", "kv.", "runtime.")) for r in rules_for(VLLM)
    )


def test_lora_with_speculation_is_no_conflict_in_033():
    ids = {r.id for r in rules_for(VLLM)}
    assert "pairs.v29.speculative-x-lora" not in ids
    assert "vllm.lora.budget-holds-speculative-tokens" in ids


def _config(**values):
    return EngineConfig.from_flat(values)


LLAMA = {"model.num_attention_heads": 32, "model.num_kv_heads": 8}


@pytest.mark.parametrize(
    "tp, dcp, ok",
    [
        (16, 2, True),  # tp above the 8 KV heads, dcp <= 16 // 8, 4 query heads per KV head
        (32, 4, True),
        (8, 2, False),  # tp must exceed the KV heads
        (16, 4, False),  # dcp above tp // kv_heads = 2
        (64, 8, False),  # 4 query heads per KV head are not divisible by 8
        (4, 1, True),  # no decode context parallelism
    ],
)
def test_decode_context_parallelism_against_the_kv_heads(tp, dcp, ok):
    rule = get_rule("vllm.parallel.dcp-within-kv-heads")
    facts = {**LLAMA, "model.kv_replicated": False}
    bound = bind_rule(rule, facts)
    config = _config(
        **facts,
        **{
            "parallel_config.tensor_parallel_size": tp,
            "vllm_config.decode_context_parallel_size": dcp,
        },
    )
    assert (violations(config, [bound]) == []) is ok


def test_mla_models_have_no_kv_head_limit_on_dcp():
    rule = bind_rule(
        get_rule("vllm.parallel.dcp-within-kv-heads"), {**LLAMA, "model.kv_replicated": True}
    )
    config = _config(
        **{
            "model.kv_replicated": True,
            "parallel_config.tensor_parallel_size": 8,
            "vllm_config.decode_context_parallel_size": 8,
        }
    )
    assert violations(config, [rule]) == []


def test_dcp_must_divide_tp_unless_prefill_context_parallelism_is_on():
    rule = get_rule("vllm.parallel.dcp-divides-tp")
    bad = {"parallel_config.tensor_parallel_size": 4, "vllm_config.decode_context_parallel_size": 3}
    assert violations(_config(**bad), [rule]) == [rule]
    assert (
        violations(_config(**bad, **{"vllm_config.prefill_context_parallel_size": 2}), [rule]) == []
    )


def test_cuda_graph_rules_are_adjustments_not_refusals():
    for rule_id in ("vllm.cudagraph.ceiling-within-budget", "vllm.cudagraph.none-when-eager"):
        assert get_rule(rule_id).kind == "default"
