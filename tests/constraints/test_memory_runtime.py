"""The runtime sizes memory from the same facts as `arbiter check`: the same reader of
config.json, the same weights, the same KV bytes per block and the same pool, on dense,
GQA, sliding-window and mixed sliding/full models (run by `engine.LLM`) and on MoE, MLA
and hybrid shapes (sized by the runtime's `size_pool` on the configuration `arbiter check`
solved)."""

from __future__ import annotations

import pytest
import torch

from arbiter.application.check import check_file
from constraints.facts import memory
from engine import LLM, size_pool
from engine.model.testing import make_tiny_model_dir
from engine.pool import PoolLayoutMismatch

CPU = torch.device("cpu")

# (name, arch, config overrides, llm_args)
RUNNABLE = [
    ("llama-mha", "llama", {"num_key_value_heads": 4}, {}),
    ("llama-gqa", "llama", {}, {}),
    ("mistral-sliding", "mistral", {"sliding_window": 16}, {}),
    (
        "qwen2-mixed-windows",
        "qwen2",
        {"use_sliding_window": True, "sliding_window": 32, "max_window_layers": 1},
        {},
    ),
    ("llama-fp16-odd-cap", "llama", {"torch_dtype": "float16"}, {"max_tokens": 100}),
    ("llama-small-blocks", "llama", {"num_hidden_layers": 3}, {"tokens_per_block": 4}),
]


def _args(kv: dict) -> dict:
    return {
        "kv_cache_config": {"max_tokens": 512, "tokens_per_block": 16, **kv},
        "max_batch_size": 4,
    }


@pytest.mark.parametrize(
    ("name", "arch", "overrides", "kv"), RUNNABLE, ids=[r[0] for r in RUNNABLE]
)
def test_llm_and_check_size_the_pool_alike(tmp_path, name, arch, overrides, kv):
    path = make_tiny_model_dir(tmp_path, arch, seed=3, **overrides)
    args = _args(kv)
    llm = LLM(path, device="cpu", **args)
    checked, _, _ = check_file(dict(args), "trtllm", model=path / "config.json", device="cpu")
    facts = sorted(p for p in checked.values if p.startswith("model."))
    assert facts and all(llm.resolution.values[p] == checked.values[p] for p in facts)
    cap = checked.capacity
    # the weights counted are the weights loaded (intermediate_size included)
    loaded = sum(p.numel() * p.element_size() for p in llm.model.parameters())
    assert cap.weights == loaded == llm.resolution.capacity.weights
    pool = llm.runtime.pool
    storage = llm.runtime.kv.spec.bytes_per_block
    assert pool.block_bytes == storage == cap.kv_bytes_per_token * cap.tokens_per_block
    assert pool.num_blocks == cap.kv_blocks
    assert (
        pool.num_blocks * cap.tokens_per_block
        == cap.kv_tokens
        >= args["kv_cache_config"]["max_tokens"]
    )


MIXTRAL_SHAPED = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "vocab_size": 160,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
}
DEEPSEEK_SHAPED = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "first_k_dense_replace": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "vocab_size": 160,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
}
GEMMA2_SHAPED = {
    "architectures": ["Gemma2ForCausalLM"],
    "model_type": "gemma2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "sliding_window": 32,
    "vocab_size": 160,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize(
    ("config", "tp", "kv"),
    [
        (MIXTRAL_SHAPED, 1, {}),
        (MIXTRAL_SHAPED, 2, {"dtype": "fp8"}),
        (DEEPSEEK_SHAPED, 1, {}),
        (DEEPSEEK_SHAPED, 2, {}),  # MLA: every rank keeps the whole latent
        (GEMMA2_SHAPED, 1, {"max_tokens": 1000}),
    ],
    ids=["mixtral", "mixtral-tp2-fp8", "deepseek-mla", "deepseek-mla-tp2", "gemma2-odd-cap"],
)
def test_runtime_pool_sizing_matches_check_on_moe_mla_and_hybrid_shapes(config, tp, kv):
    args = {**_args(kv), "tensor_parallel_size": tp}
    checked, _, _ = check_file(dict(args), "trtllm", model=dict(config), device=f"{tp}xH100")
    cap = checked.capacity
    size = size_pool(checked.config, None, CPU, free=1 << 40)
    assert size.block_bytes == memory.block_bytes(checked.values)
    assert size.block_bytes == pytest.approx(cap.kv_bytes_per_token * cap.tokens_per_block)
    assert (size.num_blocks, size.source) == (cap.kv_blocks, "max_tokens")


def test_the_runtime_refuses_storage_that_differs_from_what_was_counted(tmp_path):
    path = make_tiny_model_dir(tmp_path, "llama", seed=1)
    llm = LLM(path, device="cpu", **_args({}))
    wider = type(llm.model.args)(**{**vars(llm.model.args), "num_key_value_heads": 4})
    with pytest.raises(PoolLayoutMismatch, match="internal error"):
        size_pool(llm.config, wider, CPU, free=1 << 30)


def test_more_ranks_than_kv_heads_replicate_heads_in_both():
    """TP 4 over 2 KV heads: every rank keeps one whole KV head (TensorRT-LLM, vLLM and
    the runtime replicate), so a rank's block is half the model's, not a quarter."""
    from engine.model import ModelArgs
    from engine.parallel.shard import local_args, shard_plan

    drop = ("num_local_experts", "num_experts_per_tok")
    cfg = {k: v for k, v in MIXTRAL_SHAPED.items() if k not in drop}
    cfg.update(architectures=["LlamaForCausalLM"], model_type="llama")
    checked, _, _ = check_file(
        {**_args({}), "tensor_parallel_size": 4}, "trtllm", model=dict(cfg), device="4xH100"
    )
    args = ModelArgs.from_hf(cfg)
    rank = local_args(args, shard_plan(args, 0, 4))
    assert rank.num_key_value_heads == 1
    size = size_pool(checked.config, rank, CPU, free=1 << 40)  # storage checked inside
    whole = 2 * 3 * 2 * 16 * 16 * 2  # K and V, layers, KV heads, head dim, tokens, bf16
    assert size.block_bytes == whole // 2
    cap = checked.capacity
    assert size.block_bytes == cap.kv_bytes_per_token * cap.tokens_per_block
