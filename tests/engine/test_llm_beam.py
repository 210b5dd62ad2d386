"""Beam search against transformers' ``num_beams`` search on a tiny random Llama.

What is compared: with no end-of-sequence token and ``length_penalty=0.0`` every
hypothesis has ``max_tokens`` new tokens and transformers ranks the final beams by their
summed log-probabilities (``sequences_scores``). Our ``beams`` must list the same token
sequences in the same order, with the same cumulative log-probabilities, and
``token_ids`` must be the best beam.
"""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.model.testing import make_tiny_model_dir

transformers = pytest.importorskip("transformers")

MAX_NEW = 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = make_tiny_model_dir(tmp_path_factory.mktemp("beam"), "llama", seed=1)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    hf.generation_config.eos_token_id = None
    return path, hf


def _hf_beams(hf, prompt, width):
    with torch.no_grad():
        out = hf.generate(
            torch.tensor([prompt]),
            max_new_tokens=MAX_NEW,
            num_beams=width,
            num_return_sequences=width,
            do_sample=False,
            length_penalty=0.0,
            pad_token_id=0,
            output_scores=True,
            return_dict_in_generate=True,
        )
    return out.sequences[:, len(prompt) :].tolist(), out.sequences_scores.tolist()


PROMPTS = [list(range(10, 25)), [7, 99, 3, 150, 42], [120] * 3 + list(range(40, 60))]


@pytest.mark.parametrize("width", [2, 4])
def test_beams_match_transformers_beam_search(tiny, width):
    path, hf = tiny
    llm = LLM(path, max_beam_width=4, kv_cache_config={"tokens_per_block": 4, "max_tokens": 512})
    # Beam search with block reuse: only the 0.9-0.12 LLM API forbade it
    # (kv.beam-search-no-block-reuse); on the runtime's line reuse stays on beside beams.
    assert llm.resolution.value("kv_cache_config.enable_block_reuse") is True
    params = SamplingParams(max_tokens=MAX_NEW, beam_width=width, ignore_eos=True)
    outs = llm.generate(PROMPTS, params)
    greedy = llm.generate(PROMPTS, SamplingParams(max_tokens=MAX_NEW, ignore_eos=True))
    differs = False
    for prompt, out, plain in zip(PROMPTS, outs, greedy, strict=True):
        tokens, scores = _hf_beams(hf, prompt, width)
        assert [b.token_ids for b in out.beams] == tokens
        got = [b.cumulative_logprob for b in out.beams]
        assert got == pytest.approx(scores, abs=1e-4)
        assert out.token_ids == tokens[0]
        assert out.finish_reason == "length"
        differs |= plain.token_ids != out.token_ids
    # Beams really were forked in the KV cache (copy-on-write of shared blocks).
    assert llm.runtime.kv.stats().counters.cow_copies > 0
    assert llm.runtime.kv.stats().blocks_in_use == 0
    llm.runtime.kv.check_valid()
    if width == 4:
        assert differs, "beam search should beat greedy on at least one prompt"


def test_beam_width_above_the_built_limit_is_rejected(tiny):
    from engine import RequestRejected

    path, _ = tiny
    llm = LLM(path, max_beam_width=2, kv_cache_config={"tokens_per_block": 4, "max_tokens": 128})
    with pytest.raises(RequestRejected) as info:
        llm.generate([[1, 2, 3]], SamplingParams(max_tokens=2, beam_width=3))
    assert info.value.limit == "build_config.max_beam_width"
    assert "max_beam_width" in str(info.value)
    assert not llm.runtime.has_unfinished


def test_beam_groups_survive_preemption_and_stop_tokens(tiny):
    path, _ = tiny
    llm = LLM(
        path,
        max_beam_width=3,
        kv_cache_config={"tokens_per_block": 4, "max_tokens": 72},
        scheduler_config={"capacity_scheduler_policy": "MAX_UTILIZATION"},
    )
    prompts = [list(range(10, 10 + n)) for n in (5, 9, 13, 3, 7)]
    scheduler = llm.runtime.scheduler
    schedule, forked_groups_preempted = scheduler.schedule, []

    def spy():
        out = schedule()
        groups = [seq.group_id for seq in out.preempted]
        forked_groups_preempted.extend(g for g in set(groups) if groups.count(g) > 1)
        return out

    scheduler.schedule = spy
    params = SamplingParams(max_tokens=8, beam_width=3, ignore_eos=True)
    outs = llm.generate(prompts, params)
    assert forked_groups_preempted, "no group was preempted after forking its beams"
    # A group comes back with all its beams: the same search as a run that never preempts.
    # Room for every beam of every prompt at once (5 x 3 x 6 blocks), so nothing is preempted;
    # a pool sized from the host's memory would hold ~400k blocks and cost seconds to build.
    roomy = LLM(path, max_beam_width=3, kv_cache_config={"tokens_per_block": 4, "max_tokens": 1024})
    calm_schedule, calm_preempted = roomy.runtime.scheduler.schedule, []

    def calm_spy():
        out = calm_schedule()
        calm_preempted.extend(out.preempted)
        return out

    roomy.runtime.scheduler.schedule = calm_spy
    calm_outs = roomy.generate(prompts, params)
    assert not calm_preempted
    for out, calm in zip(outs, calm_outs, strict=True):
        assert [b.token_ids for b in out.beams] == [b.token_ids for b in calm.beams]
        got = [b.cumulative_logprob for b in out.beams]
        assert got == pytest.approx([b.cumulative_logprob for b in calm.beams], abs=1e-4)
        assert [len(b.token_ids) for b in out.beams] == [8, 8, 8]
        assert got == sorted(got, reverse=True)
    assert llm.runtime.kv.stats().blocks_in_use == 0
    llm.runtime.kv.check_valid()

    stops = {142, 152}
    params = SamplingParams(max_tokens=8, beam_width=3, stop_token_ids=sorted(stops))
    stopped = 0
    for out in llm.generate(prompts[:3], params):
        stopped += sum(b.token_ids[-1] in stops for b in out.beams)
        for beam in out.beams:
            # A hypothesis ends at its first stop token or at max_tokens.
            assert not stops.intersection(beam.token_ids[:-1])
            assert beam.token_ids[-1] in stops or len(beam.token_ids) == 8
        assert out.token_ids == out.beams[0].token_ids
        ends_in_stop = out.token_ids[-1] in stops
        assert out.finish_reason == ("stop" if ends_in_stop else "length")
    assert stopped > 0, "no hypothesis met a stop token; the check above would be vacuous"
