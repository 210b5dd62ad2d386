"""StreamingLLM sinks: the paged model against a dense oracle that caches K unrotated and
rotates every visible key at its position within the cache for each query."""

from __future__ import annotations

import pytest
import torch

from engine.model import load_model
from engine.model.rope import rotate
from engine.model.testing import make_tiny_model_dir
from tests.engine.test_kernels_oracle import dense_attention
from tests.engine.test_model import PagedRunner

pytest.importorskip("transformers")

WINDOW, SINKS = 8, 2


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = make_tiny_model_dir(tmp_path_factory.mktemp("sinks"), "llama", seed=4)
    return load_model(path, torch.float32)


@torch.no_grad()
def streaming_oracle(model, tokens, window, sinks, cache_positions=True):
    """Logits at every position. The cache of query ``i`` holds the sinks and the last
    ``window - sinks`` tokens, laid out at positions ``0..window-1`` (``cache_positions``);
    with ``cache_positions=False`` every token keeps its position in the text instead."""
    rotary = model.rotary
    x = model.model.embed_tokens(torch.tensor(tokens))
    n = len(tokens)
    for layer in model.model.layers:
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        q = attn.q_proj(h).view(n, attn.num_heads, attn.head_dim)
        k = attn.k_proj(h).view(n, attn.num_kv_heads, attn.head_dim)
        v = attn.v_proj(h).view(n, attn.num_kv_heads, attn.head_dim)
        rows = []
        for i in range(n):
            visible = [j for j in range(i + 1) if j < sinks or i - j < window - sinks]
            shift = max(0, i - (window - 1)) if cache_positions else 0
            k_pos = torch.tensor([j if j < sinks else j - shift for j in visible])
            q_pos = torch.tensor([i - shift])
            kr = rotate(k[visible], *rotary.cos_sin(k_pos, torch.float32))
            qr = rotate(q[i : i + 1], *rotary.cos_sin(q_pos, torch.float32))
            # The query is the newest entry of its cache: it sees every visible key.
            rows.append(dense_attention(qr, kr, v[visible], torch.tensor([len(visible) - 1])))
        x = x + attn.o_proj(torch.cat(rows).reshape(n, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return model.lm_head(model.model.norm(x))


def _paged(model, tokens, prompt_len, window, sinks, tokens_per_block):
    runner = PagedRunner(model, tokens_per_block, num_blocks=32, seed=9)
    seq = runner.add()
    out = [runner.step({seq: tokens[:prompt_len]}, window, sinks, all_logits=True)]
    for t in tokens[prompt_len:]:
        out.append(runner.step({seq: [t]}, window, sinks))
    return torch.cat(out)


@pytest.mark.parametrize("tokens_per_block", [1, 4])
def test_sinks_match_dense_streaming_oracle(model, tokens_per_block):
    tokens = torch.randint(0, 160, (26,), generator=torch.Generator().manual_seed(1)).tolist()
    ours = _paged(model, tokens, 20, WINDOW, SINKS, tokens_per_block)
    oracle = streaming_oracle(model, tokens, WINDOW, SINKS)
    torch.testing.assert_close(ours, oracle, atol=1e-4, rtol=0)
    assert torch.equal(ours.argmax(-1), oracle.argmax(-1))
    # The definition matters: text positions, or no sinks at all, give other logits.
    text_positions = streaming_oracle(model, tokens, WINDOW, SINKS, cache_positions=False)
    assert (ours - text_positions).abs().max() > 1e-2
    no_sinks = _paged(model, tokens, 20, WINDOW, 0, tokens_per_block)
    assert (ours - no_sinks).abs().max() > 1e-2


def test_sinks_inside_a_window_wider_than_the_sequence_change_nothing(model):
    tokens = list(range(10, 30))
    full = _paged(model, tokens, 15, None, 0, 4)
    torch.testing.assert_close(_paged(model, tokens, 15, 64, 3, 4), full, atol=1e-5, rtol=0)
