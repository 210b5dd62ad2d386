"""The decode batch's kept K/V copies (``engine.kernels.decode_mirror``) in whole runs where
the batch changes mid-run: admissions, finishes, preemption with recompute, mixed steps
(prompt chunks beside decode rows) and beams. Greedy tokens equal ``transformers``' and
the run's with the copies off (every decode read from the pool); beams equal the run's
with the copies off."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.kernels.decode_mirror import DecodeMirror
from engine.model.testing import make_tiny_model_dir

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("mirror"), "llama", seed=3)


def _prompts() -> list[list[int]]:
    gen = torch.Generator().manual_seed(11)
    return [torch.randint(3, 160, (n,), generator=gen).tolist() for n in (3, 17, 6, 29, 2, 11)]


PROMPTS = _prompts()
MAX_TOKENS = [12, 3, 9, 5, 14, 7]  # requests finish at different steps


def _llm(path, mirror: bool, **kwargs) -> LLM:
    llm = LLM(path, device="cpu", **kwargs)
    if not mirror:  # no room for a copy: every decode call takes the pool's gather path
        object.__setattr__(llm.model.backend, "mirror", DecodeMirror(max_bytes=0))
    return llm


def _greedy(llm: LLM) -> list[list[int]]:
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in MAX_TOKENS]
    return [out.token_ids for out in llm.generate(PROMPTS, params)]


@pytest.mark.parametrize("policy", ["GUARANTEED_NO_EVICT", "MAX_UTILIZATION"])
def test_greedy_tokens_with_admissions_finishes_and_preemption(tiny, policy):
    kwargs = dict(
        kv_cache_config={"tokens_per_block": 4, "max_tokens": 48, "enable_block_reuse": False},
        scheduler_config={"capacity_scheduler_policy": policy},
        enable_chunked_prefill=True,
        max_num_tokens=16,
        max_batch_size=3,
    )
    llm = _llm(tiny, True, **kwargs)
    got = _greedy(llm)
    mirror = llm.model.backend.mirror
    # Rows carried over a changed batch, in decode and mixed steps alike.
    assert mirror.remaps > 0 and mirror.extends > 0
    runtime = llm.runtime
    runtime.kv.check_valid()
    assert runtime.kv.stats().blocks_in_use == 0
    if policy == "MAX_UTILIZATION":
        assert runtime.scheduler.num_preemptions > 0, "the pool was meant to force preemption"
    plain = _llm(tiny, False, **kwargs)
    assert _greedy(plain) == got
    assert plain.model.backend.mirror.remaps == 0
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        tiny, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    hf.generation_config.eos_token_id = None
    with torch.no_grad():
        for prompt, n, tokens in zip(PROMPTS, MAX_TOKENS, got, strict=True):
            ids = hf.generate(
                torch.tensor([prompt]), max_new_tokens=n, do_sample=False, pad_token_id=0
            )
            assert ids[0, len(prompt) :].tolist() == tokens


def test_beams_with_the_copies_equal_beams_without(tiny):
    kwargs = dict(
        max_beam_width=3,
        kv_cache_config={"tokens_per_block": 4, "max_tokens": 96},
        scheduler_config={"capacity_scheduler_policy": "MAX_UTILIZATION"},
    )
    params = SamplingParams(max_tokens=8, beam_width=3, ignore_eos=True)
    # Five requests of three beams in a pool too small for them: groups are preempted and
    # rejoin the decode batch later, so its kept copies are remapped.
    prompts = [PROMPTS[i] for i in (0, 1, 2, 4, 5)]
    runs = []
    for mirror in (True, False):
        llm = _llm(tiny, mirror, **kwargs)
        outs = llm.generate(prompts, params)
        llm.runtime.kv.check_valid()
        runs.append((llm, outs))
    (llm, outs), (_, plain) = runs
    assert llm.model.backend.mirror.remaps > 0
    assert llm.runtime.scheduler.num_preemptions > 0
    assert llm.runtime.kv.stats().counters.cow_copies > 0
    for out, ref in zip(outs, plain, strict=True):
        assert [b.token_ids for b in out.beams] == [b.token_ids for b in ref.beams]
        got = [b.cumulative_logprob for b in out.beams]
        assert got == pytest.approx([b.cumulative_logprob for b in ref.beams], abs=1e-5)
