"""Greedy tokens of the whole engine (LLM -> arbiter -> Runtime) against Hugging Face
``transformers.generate`` (eager attention, float32) on seeded random tiny models, across
block sizes, block reuse, chunked context, both capacity policies with a pool small
enough to force preemption, and host offload."""

from __future__ import annotations

import itertools

import pytest
import torch

from engine import LLM, SamplingParams
from engine.model.testing import make_tiny_model_dir

transformers = pytest.importorskip("transformers")

MAX_NEW = 10
POOL_TOKENS = 64  # the longest request holds 43 tokens; eight of them cannot all fit

pytestmark = pytest.mark.usefixtures("one_thread")


def _prompts() -> list[list[int]]:
    """Eight prompts of 2 to 33 tokens; several share a 12- or 20-token prefix."""
    gen = torch.Generator().manual_seed(0)
    base = torch.randint(3, 160, (20,), generator=gen).tolist()
    shapes = [(12, 3), (12, 9), (5, 20), (20, 1), (1, 2), (16, 8), (9, 9), (3, 30)]
    return [base[:n] + torch.randint(3, 160, (k,), generator=gen).tolist() for n, k in shapes]


PROMPTS = _prompts()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model folders and the transformers reference continuation of every prompt."""
    out = {}
    for arch in ("llama", "mistral"):
        path = make_tiny_model_dir(tmp_path_factory.mktemp(arch), arch, seed=1)
        hf = transformers.AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.float32, attn_implementation="eager"
        ).eval()
        if arch == "mistral":
            assert hf.config.sliding_window < max(len(p) for p in PROMPTS)
        hf.generation_config.eos_token_id = None  # compare full-length continuations
        refs = []
        with torch.no_grad():
            for prompt in PROMPTS:
                ids = hf.generate(
                    torch.tensor([prompt]), max_new_tokens=MAX_NEW, do_sample=False, pad_token_id=0
                )
                refs.append(ids[0, len(prompt) :].tolist())
        out[arch] = (path, refs)
    return out


COMBOS = list(
    itertools.product(
        [4, 16],  # tokens_per_block
        [True, False],  # block reuse
        [True, False],  # chunked context
        ["GUARANTEED_NO_EVICT", "MAX_UTILIZATION"],
        [False, True],  # host offload
    )
)


def _id(combo) -> str:
    tpb, reuse, chunked, policy, host = combo
    return (
        f"tpb{tpb}-{'reuse' if reuse else 'noreuse'}-{'chunk' if chunked else 'whole'}"
        f"-{policy[:3].lower()}-{'host' if host else 'nohost'}"
    )


@pytest.mark.parametrize("arch", ["llama", "mistral"])
@pytest.mark.parametrize("combo", COMBOS, ids=[_id(c) for c in COMBOS])
def test_greedy_tokens_match_transformers(models, arch, combo):
    tpb, reuse, chunked, policy, host = combo
    path, refs = models[arch]
    llm = LLM(
        path,
        device="cpu",
        kv_cache_config={
            "tokens_per_block": tpb,
            "max_tokens": POOL_TOKENS,
            "enable_block_reuse": reuse,
            "host_cache_size": (1 << 20) if host else 0,
        },
        scheduler_config={"capacity_scheduler_policy": policy},
        enable_chunked_prefill=chunked,
        max_num_tokens=32 if chunked else 64,
    )
    assert llm.config.kv_cache_config.enable_block_reuse is reuse
    outs = llm.generate(PROMPTS, SamplingParams(max_tokens=MAX_NEW, ignore_eos=True))
    for out, ref in zip(outs, refs, strict=True):
        assert out.token_ids == ref
        assert out.finish_reason == "length"

    runtime = llm.runtime
    stats = runtime.kv.stats()
    runtime.kv.check_valid()
    assert stats.blocks_in_use == 0 and not runtime.has_unfinished
    preemptions = runtime.scheduler.num_preemptions
    if policy == "MAX_UTILIZATION":
        assert preemptions > 0, "the pool was meant to force preemption"
    else:
        assert preemptions == 0
    hits = stats.counters.cached_hit_tokens
    prompt_tokens = sum(len(p) for p in PROMPTS)
    assert (hits > 0) is reuse
    # Every admitted token is either computed or reused; recomputes admit tokens again.
    admitted = runtime.num_prefill_tokens + hits
    if preemptions:
        assert admitted > prompt_tokens
    else:
        assert admitted == prompt_tokens
    if host and reuse:
        assert stats.counters.offloads > 0
    if not host:
        assert stats.counters.offloads == 0
