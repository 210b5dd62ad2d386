"""The runtime sizes memory from the same facts as `arbiter check`: the same reader of
config.json, the same weights, the same KV bytes per block and the same pool."""

from __future__ import annotations

import pytest

from arbiter.application.check import check_file
from engine import LLM
from engine.model.testing import make_tiny_model_dir

ARGS = {"kv_cache_config": {"max_tokens": 512, "tokens_per_block": 16}, "max_batch_size": 4}


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2"])
def test_runtime_and_check_size_the_pool_from_the_same_facts(tmp_path, arch):
    path = make_tiny_model_dir(tmp_path, arch, seed=3)
    llm = LLM(path, device="cpu", **ARGS)
    checked, _, _ = check_file(dict(ARGS), "trtllm", model=path / "config.json", device="cpu")
    facts = sorted(p for p in checked.values if p.startswith("model."))
    assert facts and all(llm.resolution.values[p] == checked.values[p] for p in facts)
    cap = checked.capacity
    # the weights counted are the weights loaded (intermediate_size included)
    loaded = sum(p.numel() * p.element_size() for p in llm.model.parameters())
    assert cap.weights == loaded == llm.resolution.capacity.weights
    pool = llm.runtime.pool
    assert pool.block_bytes == cap.kv_bytes_per_token * cap.tokens_per_block
    assert pool.num_blocks * cap.tokens_per_block == cap.kv_tokens == 512
