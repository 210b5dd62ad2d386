"""Tensor parallelism on torch.distributed (gloo on CPU): tokens equal tp=1 and
transformers, sharding is GQA-aware, bad sizes are refused before any rank starts, and a
rank that dies stops the whole group with a typed error."""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from arbiter import ConflictError
from engine import LLM, SamplingParams
from engine.model import ModelArgs
from engine.model.testing import make_tiny_model_dir
from engine.parallel import PipelineParallelUnsupported, RankFailed
from engine.parallel.errors import ShardError
from engine.parallel.shard import check_shardable, shard_plan

transformers = pytest.importorskip("transformers")

# Hq 8, Hkv 2: tp=2 splits both, tp=4 replicates each KV head over two ranks.
SHAPE = dict(num_attention_heads=8, num_key_value_heads=2, hidden_size=64, intermediate_size=128)
PROMPTS = [[5, 6, 7, 8, 9], [40] * 13, list(range(3, 30))]
KV = {"tokens_per_block": 4, "max_tokens": 512}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("tp"), "qwen2", seed=5, **SHAPE)


@pytest.fixture(scope="module")
def reference(path):
    """Greedy continuations from transformers, one prompt at a time."""
    hf = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    out = []
    for prompt in PROMPTS:
        ids = hf.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False, pad_token_id=0)
        out.append(ids[0, len(prompt) :].tolist())
    return out


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie is gone for our purposes; /proc says so.
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split()[2] != "Z":
                alive.append(pid)
    return alive


def test_shard_plan_is_gqa_aware():
    args = ModelArgs.from_hf(
        {"model_type": "llama", **SHAPE, "vocab_size": 16, "num_hidden_layers": 1}
    )
    two = [shard_plan(args, r, 2) for r in range(2)]
    assert [p.q_heads for p in two] == [(0, 4), (4, 8)]
    assert [p.kv_heads for p in two] == [(0, 1), (1, 2)]
    four = [shard_plan(args, r, 4) for r in range(4)]
    # Query heads 0-3 read KV head 0, heads 4-7 read KV head 1.
    assert [p.kv_heads for p in four] == [(0, 1), (0, 1), (1, 2), (1, 2)]
    assert [p.intermediate for p in four] == [(0, 32), (32, 64), (64, 96), (96, 128)]
    with pytest.raises(ShardError) as err:
        check_shardable(args, 3)
    assert err.value.dimension == "num_attention_heads"
    assert "num_attention_heads=8 cannot be split over 3 ranks" in str(err.value)


@pytest.mark.parametrize("tp", [2, 4])
def test_greedy_tokens_equal_tp1_and_transformers(path, reference, tp):
    params = SamplingParams(max_tokens=8, ignore_eos=True)
    single = LLM(path, device="cpu", kv_cache_config=KV, enable_chunked_prefill=True)
    expected = [o.token_ids for o in single.generate(PROMPTS, params)]
    assert expected == reference
    llm = LLM(
        path,
        device="cpu",
        tensor_parallel_size=tp,
        kv_cache_config=KV,
        enable_chunked_prefill=True,
    )
    try:
        assert llm.config.parallel_config.tensor_parallel_size == tp
        pids = llm.model.pids
        assert len(pids) == tp
        # Each rank holds its own KV heads: 2 / tp, at least one (replicated).
        assert llm.runtime.kv.spec.num_kv_heads == max(1, 2 // tp)
        got = [o.token_ids for o in llm.generate(PROMPTS, params)]
        assert got == expected
        # Streaming and cancellation go through the ranks too.
        stream = llm.generate_stream(PROMPTS[:2], SamplingParams(max_tokens=30))
        first = next(stream)
        assert len(first.token_ids) == 1
        stream.close()
        assert not llm.runtime.has_unfinished
        llm.runtime.kv.check_valid()
    finally:
        llm.close()
    deadline = time.monotonic() + 10
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(pids) == []


def _mixed_prompts() -> list[list[int]]:
    gen = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 100, (n,), generator=gen).tolist() for n in (5, 13, 27, 9, 21, 3)]
    shared = prompts[2][:16]  # two prompts that share four blocks with the third
    return [*prompts, shared + [7, 8], shared + [9]]


def _outcome(llm: LLM, prompts, params) -> list:
    return [[b.token_ids for b in o.beams] or o.token_ids for o in llm.generate(prompts, params)]


@pytest.mark.parametrize(
    "kv",
    [
        {"enable_block_reuse": True, "host_cache_size": 64 * 1024},
        {"max_attention_window": 12},
    ],
    ids=["reuse-and-offload", "sliding-window"],
)
def test_every_kv_move_is_replayed_on_every_rank(path, kv):
    """Beams of two (copy-on-write), a pool small enough to preempt, and either prefix
    reuse with host offload and onboarding or a sliding window that releases blocks: at
    tp=2 the ranks replay each of these on their own pools, and the beams and tokens are
    those of tp=1, with the same KV events."""
    prompts = _mixed_prompts()
    params = [
        SamplingParams(max_tokens=10, ignore_eos=True, beam_width=2 if i % 3 == 0 else 1)
        for i in range(len(prompts))
    ]
    config = dict(
        device="cpu",
        kv_cache_config={"tokens_per_block": 4, "max_tokens": 96, **kv},
        max_beam_width=2,
        scheduler_config={"capacity_scheduler_policy": "MAX_UTILIZATION"},
    )
    single = LLM(path, **config)
    expected = _outcome(single, prompts, params)
    events = single.runtime.kv.stats().counters
    assert single.runtime.scheduler.num_preemptions > 0 and events.cow_copies > 0
    if "host_cache_size" in kv:
        assert events.offloads > 0 and events.onboards > 0 and events.hit_blocks > 0
    else:
        assert events.window_releases > 0
    llm = LLM(path, tensor_parallel_size=2, **config)
    try:
        assert _outcome(llm, prompts, params) == expected
        assert llm.runtime.kv.stats().counters == events
        assert llm.runtime.scheduler.num_preemptions == single.runtime.scheduler.num_preemptions
        llm.runtime.kv.check_valid()
    finally:
        llm.close()


def test_heads_that_do_not_divide_are_refused_by_the_arbiter(path):
    with pytest.raises(ConflictError) as err:
        LLM(path, device="cpu", tensor_parallel_size=3, kv_cache_config=KV)
    assert "parallel.heads-divisible-by-tp" in str(err.value)


def test_more_ranks_than_available_is_a_typed_error(tmp_path):
    wide = make_tiny_model_dir(
        tmp_path / "wide", "llama", seed=1, num_attention_heads=16, num_key_value_heads=16
    )
    # the device count is a fact of the machine: the arbiter refuses before any rank starts
    with pytest.raises(ConflictError) as err:
        LLM(wide, device="cpu", tensor_parallel_size=16, kv_cache_config=KV)
    assert "machine.parallel-fits-devices" in err.value.conflicts[0].rules


def test_pipeline_parallelism_is_refused_with_the_reason(path):
    with pytest.raises(PipelineParallelUnsupported) as err:
        LLM(path, device="cpu", pipeline_parallel_size=2, kv_cache_config=KV)
    assert "pipeline_parallel_size=2" in str(err.value)


def test_a_rank_dying_mid_run_stops_every_rank(path):
    llm = LLM(path, device="cpu", tensor_parallel_size=2, kv_cache_config=KV)
    pids = llm.model.pids
    stream = llm.generate_stream([[5, 6, 7]], SamplingParams(max_tokens=100, ignore_eos=True))
    next(stream)
    os.kill(pids[1], signal.SIGKILL)
    with pytest.raises(RankFailed) as err:
        for _ in stream:
            pass
    assert err.value.rank == 1
    assert err.value.exitcode == -signal.SIGKILL
    assert "rank 1" in str(err.value)
    assert _alive(pids) == []
    with pytest.raises(RankFailed):  # the group stays stopped
        llm.generate([[1, 2, 3]], SamplingParams(max_tokens=2))
