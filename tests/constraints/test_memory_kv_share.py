"""The memory rule and the capacity report count the same KV per rank: with more
tensor-parallel ranks than KV heads each rank keeps one whole head (the heads are
replicated), so a rank holds 1 / kv_heads of the KV, not 1 / tp (facts/memory.py
`kv_heads_per_rank`, read by both)."""

from __future__ import annotations

import pytest

from arbiter import ConflictError, arbitrate, func, setup
from constraints.facts.memory import kv_heads_per_rank, kv_rank_share, kv_splits
from constraints.rules import bind_rule, every_rule, get_rule
from constraints.shared.rules.memory import capacity
from constraints.specs import DeviceSpec, read_model

# ChatGLM3-6B's attention shape (THUDM/chatglm3-6b config.json: 28 layers, 32 heads,
# multi_query_group_num 2, kv_channels 128, hidden 4096, ffn 13696, vocab 65024) in the
# Llama keys our reader takes: two KV heads, so tp 4 and 8 replicate them
TWO_KV_HEADS = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 28,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_size": 4096,
    "intermediate_size": 13696,
    "vocab_size": 65024,
    "max_position_embeddings": 32768,
    "torch_dtype": "float16",
}
TP, SEQ = "parallel_config.tensor_parallel_size", "build_config.max_seq_len"
ONE_SEQUENCE = get_rule("memory.fits-one-sequence")
VLLM_RULES = [
    r for r in every_rule() if r.kind == "hard" and r.scope.applies("vllm") and r.pack != "vllm"
]


def test_a_rank_keeps_at_least_one_whole_kv_head():
    assert [kv_heads_per_rank(2, tp) for tp in (1, 2, 4, 8)] == [2, 1, 1, 1]
    assert [kv_heads_per_rank(8, tp) for tp in (1, 2, 3, 4, 8, 16)] == [8, 4, 3, 2, 1, 1]
    splits = kv_splits(8, range(1, 65))
    assert [(s.tp_sizes[:3], s.heads_together, s.heads_per_rank) for s in splits] == [
        ((1, 2, 4), 8, 0),  # even: the ranks keep the 8 heads once
        ((3, 5, 6), 14, 0),  # uneven: at most 7 ranks x 2 heads together
        ((9, 10, 11), 0, 1),  # above the heads: one head per rank, whatever tp is
    ]
    assert sorted(t for s in splits for t in s.tp_sizes) == list(range(1, 65))


def base_values(tp: int) -> dict:
    """A solved configuration of the two-KV-head model on eight L4s at `tp`."""
    claims = [
        setup("model", read_model(TWO_KV_HEADS).facts()),
        setup("device", DeviceSpec.named("L4", 8).facts()),
        func(
            "layout",
            {
                TP: tp,
                SEQ: 1024,
                "kv_cache_config.free_gpu_memory_fraction": 0.9,
                "kv_cache_config.max_attention_window": None,
                "quant_config.kv_cache_quant_algo": None,
                "kv_cache_config.dtype": "auto",
                "build_config.max_batch_size": 8,
                "build_config.max_num_tokens": 2048,
            },
        ),
    ]
    return dict(arbitrate(claims, rules=VLLM_RULES).values)


def rule_accepts(values: dict, seq: int) -> bool:
    trial = {**values, SEQ: seq}
    return bind_rule(ONE_SEQUENCE, trial).expr.evaluate(trial)


def longest_accepted(values: dict) -> int:
    lo, hi = 1024, 1 << 22  # the rule accepts lo; find its largest max_seq_len
    assert rule_accepts(values, lo)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if rule_accepts(values, mid) else (lo, mid - 1)
    return lo


@pytest.mark.parametrize("tp", [4, 8])
def test_rule_and_capacity_agree_when_tp_exceeds_the_kv_heads(tp):
    values = base_values(tp)
    assert kv_rank_share(values) == 1 / 2  # one of the two heads, not 1 / tp
    cap = capacity(values)
    # the pool's bytes per token: 28 layers x 2 (K, V) x 1 head x 128 x 2 bytes
    assert cap.kv_bytes_per_token == 28 * 2 * 128 * 2
    longest = longest_accepted(values)
    # what the capacity says one sequence may hold: the free memory over a token's KV
    room = (cap.budget - cap.weights - cap.activations) / cap.kv_bytes_per_token
    assert longest <= room  # the rule is never looser than the capacity
    assert longest >= 0.995 * room  # and counts the same KV (rounding up in KiB aside)
    # the capacity's pool is whole blocks: it holds the rule's longest sequence up to the
    # part of one block that the rounding down to blocks leaves out
    held = capacity({**values, SEQ: longest}).clamped_to
    assert held == 0 or longest - held < cap.tokens_per_block
    assert capacity({**values, SEQ: longest - cap.tokens_per_block}).clamped_to == 0
    assert capacity({**values, SEQ: int(room) + 16}).clamped_to > 0


def test_more_ranks_than_kv_heads_free_only_weight_memory():
    four, eight = longest_accepted(base_values(4)), longest_accepted(base_values(8))
    # tp 8 keeps the same head per rank as tp 4: only the weights shrink, so the longest
    # sequence grows by their share, far from the 2x a 1 / tp split of the KV would give
    assert four < eight < 1.2 * four


def test_a_solve_refuses_what_the_capacity_says_does_not_fit():
    values = base_values(8)
    cap = capacity(values)
    room = int((cap.budget - cap.weights - cap.activations) / cap.kv_bytes_per_token)
    facts = {k: v for k, v in values.items() if k.startswith(("model.", "device."))}
    keep = (
        TP,
        "kv_cache_config.free_gpu_memory_fraction",
        "kv_cache_config.max_attention_window",
        "quant_config.kv_cache_quant_algo",
        "kv_cache_config.dtype",
        "build_config.max_batch_size",
        "build_config.max_num_tokens",
        "build_config.max_beam_width",
        "build_config.dtype",
        "quant_config.quant_algo",
        "parallel_config.pipeline_parallel_size",
    )
    layout = {k: values[k] for k in keep}
    ok = arbitrate(
        [setup("machine", facts), func("layout", {**layout, SEQ: room - 1024})], rules=VLLM_RULES
    )
    assert capacity(ok.values).clamped_to == 0
    with pytest.raises(ConflictError) as err:
        arbitrate(
            [setup("machine", facts), func("layout", {**layout, SEQ: room + 1024})],
            rules=VLLM_RULES,
        )
    assert "memory.fits-one-sequence" in err.value.conflicts[0].rules
