"""Greedy tokens on CUDA equal transformers on CUDA (float32), through the backend the
solved config selects there (the Triton paged kernels when Triton is installed).

Skipped without a GPU; ``benchmarks/gpu_checks.sh`` runs it on one."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.model.testing import make_tiny_model_dir

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

PROMPTS = [[5, 6, 7, 8, 9], [40] * 37, list(range(3, 70)), [11, 12]]


@pytest.fixture(scope="module", params=["llama", "mistral", "qwen2"])
def model(request, tmp_path_factory):
    path = make_tiny_model_dir(tmp_path_factory.mktemp(request.param), request.param, seed=2)
    hf = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    hf = hf.to("cuda").eval()
    expected = []
    for prompt in PROMPTS:
        out = hf.generate(
            torch.tensor([prompt], device="cuda"),
            max_new_tokens=12,
            do_sample=False,
            pad_token_id=0,
        )
        expected.append(out[0, len(prompt) :].tolist())
    return path, expected


@pytest.mark.parametrize("tokens_per_block", [16, 32])
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("reuse", [False, True])
def test_tokens_equal_transformers_on_cuda(model, tokens_per_block, chunked, reuse):
    path, expected = model
    llm = LLM(
        path,
        device="cuda",
        dtype="float32",
        enable_chunked_prefill=chunked,
        max_num_tokens=64 if chunked else 256,
        kv_cache_config={
            "tokens_per_block": tokens_per_block,
            "max_tokens": 2048,
            "enable_block_reuse": reuse,
        },
    )
    outs = llm.generate(PROMPTS, SamplingParams(max_tokens=12, ignore_eos=True))
    assert [o.token_ids for o in outs] == expected
    llm.runtime.kv.check_valid()


def test_tensor_parallel_on_nccl_equals_one_gpu(model):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    path, expected = model
    llm = LLM(path, device="cuda", dtype="float32", tensor_parallel_size=2)
    try:
        outs = llm.generate(PROMPTS, SamplingParams(max_tokens=12, ignore_eos=True))
        assert [o.token_ids for o in outs] == expected
    finally:
        llm.close()
