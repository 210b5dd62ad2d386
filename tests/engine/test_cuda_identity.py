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


@pytest.mark.parametrize("tokens_per_block", [16, 32])
def test_cuda_graphs_on_equal_off_equal_transformers(model, tokens_per_block):
    """Decode steps replayed from CUDA graphs (engine.cuda_graphs) give transformers'
    tokens, as the eager path does. Uneven output lengths walk the batch down the ladder
    (4, then 2 and 1 sequences), so several rungs are captured and replayed."""
    path, expected = model
    lengths = (12, 5, 9, 2)
    want = [e[:m] for e, m in zip(expected, lengths, strict=True)]
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in lengths]
    got = {}
    for eager in (False, True):
        llm = LLM(
            path,
            device="cuda",
            dtype="float32",
            max_batch_size=8,
            enforce_eager=eager,
            kv_cache_config={"tokens_per_block": tokens_per_block, "max_tokens": 2048},
        )
        got[eager] = [o.token_ids for o in llm.generate(PROMPTS, params)]
        llm.runtime.kv.check_valid()
        graphs = llm.runtime.graphs
        if eager:
            assert graphs is None and llm.runtime.graphs_off == "enforce_eager"
        else:
            assert graphs is not None, llm.runtime.graphs_off
            # token 2 of 4 and tokens 3-5 of 3 sequences (rung 4), tokens 6-9 of 2 (rung 2),
            # tokens 10-12 of 1 (rung 1)
            assert graphs.replays == 11
            assert set(graphs._graphs) == {1, 2, 4}
            assert all(g.graph is not None for g in graphs._graphs.values())
    assert got[False] == want
    assert got[True] == want


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny"), "llama", seed=2)


@pytest.mark.parametrize("eager", [True, False])
def test_decode_steps_make_no_host_sync(tiny_llama, eager):
    """A pure-decode forward, eager or replayed from a graph, never waits on the device
    (torch's sync debug mode raises if it does): the only sync of a decode step is
    reading the sampled tokens back."""
    llm = LLM(
        tiny_llama,
        device="cuda",
        dtype="float32",
        enforce_eager=eager,
        kv_cache_config={"tokens_per_block": 16, "max_tokens": 2048},
    )
    model, checked = llm.model, []
    forward = model.forward

    def strict(call, *args, **kw):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return call(*args, **kw)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    def strict_forward(ids, positions, kv, meta, **kw):
        if meta.is_prefill:
            return forward(ids, positions, kv, meta, **kw)
        checked.append(ids.shape[0])
        return strict(forward, ids, positions, kv, meta, **kw)

    model.forward = strict_forward
    graphs = llm.runtime.graphs
    if graphs is not None:
        replay = graphs.replay
        graphs.replay = lambda entry, n: strict(replay, entry, n)
    outs = llm.generate(PROMPTS, SamplingParams(max_tokens=6, ignore_eos=True))
    assert all(len(o.token_ids) == 6 for o in outs)
    assert checked  # decode forwards ran under the check (eagerly, or while captured)
    if not eager:
        assert graphs is not None and graphs.replays == 5


@pytest.mark.parametrize("steps", [4, 16])
def test_decode_windows_equal_single_steps_equal_transformers(model, steps):
    """Multi-step decode windows (num_scheduler_steps) replay the captured graphs with
    the device's argmax as the next input: transformers' tokens, rows ending inside a
    window (uneven lengths) included."""
    path, expected = model
    lengths = (12, 5, 9, 2)
    want = [e[:m] for e, m in zip(expected, lengths, strict=True)]
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in lengths]
    llm = LLM(
        path,
        device="cuda",
        dtype="float32",
        max_batch_size=8,
        num_scheduler_steps=steps,
        kv_cache_config={"tokens_per_block": 16, "max_tokens": 2048},
    )
    assert [o.token_ids for o in llm.generate(PROMPTS, params)] == want
    runtime = llm.runtime
    runtime.kv.check_valid()
    assert runtime.graphs is not None and runtime.windows > 0
    # windows of 4: [4, 4, 4, 1], then chained [4, 0, 4, 0] and [3, 0, 0, 0] queued on
    # the device behind the one before; of 16: one window, nothing left to chain
    assert runtime.chained == {4: 2, 16: 0}[steps]
    assert runtime.kv.num_free_blocks == runtime.kv.spec.num_blocks


def test_a_decode_window_makes_one_host_sync(tiny_llama):
    """Inside a window nothing waits on the device until its picks are read back."""
    llm = LLM(
        tiny_llama,
        device="cuda",
        dtype="float32",
        num_scheduler_steps=4,
        kv_cache_config={"tokens_per_block": 16, "max_tokens": 2048},
    )
    graphs = llm.runtime.graphs
    assert graphs is not None
    replay, checked = graphs.replay, []

    def strict(entry, n):
        torch.cuda.set_sync_debug_mode("error")
        try:
            checked.append(n)
            return replay(entry, n)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    graphs.replay = strict
    outs = llm.generate(PROMPTS, SamplingParams(max_tokens=9, ignore_eos=True))
    assert all(len(o.token_ids) == 9 for o in outs)
    assert llm.runtime.windows == 2 and len(checked) == 8  # tokens 2-9 in two windows
