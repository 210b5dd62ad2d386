"""The LLM front door: text in and out, streaming, seeded sampling, stop tokens,
cancellation and typed errors."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, InvalidLlmArg, InvalidSamplingParams, RequestRejected, SamplingParams
from engine.model.testing import make_tiny_model_dir
from engine.sampling import filter_logits

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers

    path = make_tiny_model_dir(tmp_path_factory.mktemp("llm"), "qwen2", seed=3)
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(160)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path / "tokenizer.json"))
    return path


@pytest.fixture(scope="module")
def llm(path):
    return LLM(path, kv_cache_config={"tokens_per_block": 4, "max_tokens": 256})


def test_strings_in_text_out(llm):
    out = llm.generate("w5 w6 w7 w8", SamplingParams(max_tokens=5, ignore_eos=True))[0]
    assert out.prompt_token_ids == [5, 6, 7, 8]
    assert out.text == " ".join(f"w{t}" for t in out.token_ids)
    same = llm.generate([[5, 6, 7, 8]], SamplingParams(max_tokens=5, ignore_eos=True))[0]
    assert same.token_ids == out.token_ids


def test_stream_deltas_add_up_to_the_generated_output(llm):
    prompts = [[1, 2, 3, 4, 5], [9, 8], [40] * 7]
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    whole = llm.generate(prompts, params)
    got: dict[int, list[int]] = {0: [], 1: [], 2: []}
    text: dict[int, str] = {0: "", 1: "", 2: ""}
    finished = []
    for delta in llm.generate_stream(prompts, params):
        assert len(delta.token_ids) <= 1  # one token per step per request
        got[delta.index] += delta.token_ids
        text[delta.index] += delta.text
        if delta.finished:
            finished.append((delta.index, delta.finish_reason))
    assert [got[i] for i in range(3)] == [o.token_ids for o in whole]
    assert [text[i] for i in range(3)] == [o.text for o in whole]
    assert sorted(finished) == [(0, "length"), (1, "length"), (2, "length")]


def test_closing_a_stream_cancels_its_requests(llm):
    stream = llm.generate_stream([[1, 2, 3], [4, 5, 6]], SamplingParams(max_tokens=50))
    next(stream)
    stream.close()
    assert not llm.runtime.has_unfinished
    assert llm.runtime.kv.stats().blocks_in_use == 0
    llm.runtime.kv.check_valid()


def test_runtime_abort_frees_blocks_at_once(llm):
    runtime = llm.runtime
    req = runtime.add_request([3, 4, 5, 6, 7], SamplingParams(max_tokens=20, ignore_eos=True))
    runtime.step()
    # last_output: what the step ran (the benchmarks' step profile reads it)
    assert runtime.last_output is not None
    assert [(e.num_new_tokens, e.is_prefill) for e in runtime.last_output.scheduled] == [(5, True)]
    runtime.step()
    assert [(e.num_new_tokens, e.is_prefill) for e in runtime.last_output.scheduled] == [(1, False)]
    assert runtime.kv.stats().blocks_in_use > 0
    runtime.abort(req.request_id)
    assert req.finish_reason == "aborted" and len(req.token_ids) == 2
    assert runtime.kv.stats().blocks_in_use == 0 and not runtime.has_unfinished
    runtime.release(req.request_id)


def test_seeded_sampling_is_per_request(llm):
    params = SamplingParams(max_tokens=8, temperature=1.0, top_k=50, top_p=0.95, seed=11)
    alone = llm.generate([[1, 2, 3]], params)[0].token_ids
    other = SamplingParams(max_tokens=8, temperature=1.0, seed=12)
    batched = llm.generate([[7, 7, 7, 7], [1, 2, 3]], [other, params])
    assert batched[1].token_ids == alone
    reseeded = SamplingParams(max_tokens=8, temperature=1.0, top_k=50, top_p=0.95, seed=99)
    assert llm.generate([[1, 2, 3]], reseeded)[0].token_ids != alone
    top1 = SamplingParams(max_tokens=8, temperature=0.7, top_k=1, seed=1)
    greedy = SamplingParams(max_tokens=8)
    assert (
        llm.generate([[1, 2, 3]], top1)[0].token_ids
        == llm.generate([[1, 2, 3]], greedy)[0].token_ids
    )


def test_filters_keep_the_head_of_the_distribution():
    logits = torch.tensor([0.0, 3.0, 1.0, 2.0])
    assert torch.isinf(filter_logits(logits, 2, 1.0)).tolist() == [True, False, True, False]
    # softmax = [.03, .64, .09, .24]: 0.64 < 0.7, so the top-p set is {1, 3}.
    assert torch.isinf(filter_logits(logits, 0, 0.7)).tolist() == [True, False, True, False]
    assert torch.isinf(filter_logits(logits, 0, 0.5)).tolist() == [True, False, True, True]


def test_stop_tokens_end_a_request(llm):
    plain = llm.generate([[10, 11, 12]], SamplingParams(max_tokens=8, ignore_eos=True))[0]
    stop = plain.token_ids[2]
    first = plain.token_ids.index(stop)
    out = llm.generate(
        [[10, 11, 12]], SamplingParams(max_tokens=8, ignore_eos=True, stop_token_ids=[stop])
    )[0]
    assert out.token_ids == plain.token_ids[: first + 1]
    assert out.finish_reason == "stop"
    assert llm.runtime.kv.stats().blocks_in_use == 0


def test_the_models_eos_stops_unless_ignored(path):
    llm = LLM(path, kv_cache_config={"tokens_per_block": 4, "max_tokens": 256})
    plain = llm.generate([[10, 11, 12]], SamplingParams(max_tokens=6, ignore_eos=True))[0]
    llm.runtime.eos_token_ids = (plain.token_ids[1],)
    out = llm.generate([[10, 11, 12]], SamplingParams(max_tokens=6))[0]
    assert out.finish_reason == "stop" and out.token_ids[-1] == plain.token_ids[1]
    ignored = llm.generate([[10, 11, 12]], SamplingParams(max_tokens=6, ignore_eos=True))[0]
    assert ignored.token_ids == plain.token_ids


def test_typed_errors(path, tmp_path, llm):
    with pytest.raises(InvalidLlmArg) as info:
        LLM(tmp_path)
    assert info.value.argument == "model"
    with pytest.raises(InvalidSamplingParams) as info:
        SamplingParams(top_p=0.0)
    assert info.value.field == "top_p"
    with pytest.raises(InvalidLlmArg, match="one per prompt"):
        llm.generate([[1], [2]], [SamplingParams()])
    short = LLM(path, max_input_len=8, kv_cache_config={"tokens_per_block": 4, "max_tokens": 64})
    with pytest.raises(RequestRejected) as info:
        short.generate([[1, 2], list(range(20))], SamplingParams(max_tokens=2))
    assert info.value.limit == "build_config.max_input_len"
    assert not short.runtime.has_unfinished  # the first prompt was withdrawn too
