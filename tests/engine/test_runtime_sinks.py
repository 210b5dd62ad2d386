"""StreamingLLM through the front door: ``streamingllm=True`` with a window and sink
tokens. The logits the runtime computes at every step match the sink-aware dense oracle
(K cached unrotated, every visible key rotated at its position within the cache), with
and without a sink bubble."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.model.testing import make_tiny_model_dir
from tests.engine.test_model_sinks import streaming_oracle

pytest.importorskip("transformers")

WINDOW = 8


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("stream"), "llama", seed=4)


@pytest.mark.parametrize(("sinks", "tpb"), [(2, 4), (4, 4), (3, 2)])
def test_streaming_logits_match_the_dense_oracle(path, sinks, tpb):
    llm = LLM(
        path,
        streamingllm=True,
        kv_cache_config={
            "max_attention_window": WINDOW,
            "sink_token_length": sinks,
            "tokens_per_block": tpb,
            "max_tokens": 256,
        },
    )
    config = llm.config
    # StreamingLLM switches paged context FMHA and block reuse off (rules, not errors).
    assert config.plugin_config.use_paged_context_fmha is False
    assert config.kv_cache_config.enable_block_reuse is False
    bubble = llm.runtime.kv.layout.bubble
    assert bubble == (tpb - sinks % tpb) % tpb

    seen: list[torch.Tensor] = []
    forward = llm.model.forward

    def recording(*args, **kwargs):
        logits = forward(*args, **kwargs)
        seen.append(logits.detach().clone())
        return logits

    llm.model.forward = recording
    prompt = torch.randint(0, 160, (14,), generator=torch.Generator().manual_seed(2)).tolist()
    out = llm.generate([prompt], SamplingParams(max_tokens=12, ignore_eos=True))[0]
    assert len(out.token_ids) == 12 and out.finish_reason == "length"

    tokens = prompt + out.token_ids
    oracle = streaming_oracle(llm.model, tokens[:-1], WINDOW, sinks)
    ours = torch.cat(seen)  # one row per step: the last prompt token, then each decode
    torch.testing.assert_close(ours, oracle[len(prompt) - 1 :], atol=1e-4, rtol=0)
    assert out.token_ids == oracle[len(prompt) - 1 :].argmax(-1).tolist()
    # Blocks that left the window went back to the pool while the request ran.
    assert llm.runtime.kv.stats().counters.window_releases > 0
    llm.runtime.kv.check_valid()
