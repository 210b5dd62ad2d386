"""Our paged decoder against transformers (eager attention, float32) on tiny random models."""

from __future__ import annotations

import pytest
import torch

from engine.kernels import AttentionMetadata
from engine.model import LlamaForCausalLM, load_model
from engine.model.testing import make_tiny_model_dir

transformers = pytest.importorskip("transformers")

ARCHES = ["llama", "mistral", "qwen2"]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {arch: make_tiny_model_dir(root / arch, arch, seed=11) for arch in ARCHES}


def _hf(path):
    return transformers.AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager", dtype=torch.float32
    ).eval()


def _hf_logits(hf, tokens):
    with torch.no_grad():
        return hf(torch.tensor([tokens])).logits[0]


class PagedRunner:
    """A minimal step loop over a paged pool: random block order, one table per sequence."""

    def __init__(self, model: LlamaForCausalLM, tokens_per_block: int, num_blocks: int, seed=0):
        a = model.args
        self.model, self.bs = model, tokens_per_block
        shape = (2, num_blocks, tokens_per_block, a.num_key_value_heads, a.head_dim)
        # NaN-filled: any read of a slot that was never written would poison the logits.
        self.pool = [torch.full(shape, float("nan")) for _ in range(a.num_hidden_layers)]
        gen = torch.Generator().manual_seed(seed)
        self.free = torch.randperm(num_blocks, generator=gen).tolist()
        self.tables: list[list[int]] = []
        self.lens: list[int] = []

    def add(self) -> int:
        self.tables.append([])
        self.lens.append(0)
        return len(self.tables) - 1

    def step(self, chunks: dict[int, list[int]], window=None, sinks=0, all_logits=False):
        """Feed ``chunks[seq]`` new tokens for each listed sequence in one packed batch."""
        seqs = sorted(chunks)
        for s in seqs:
            self.lens[s] += len(chunks[s])
            while len(self.tables[s]) * self.bs < self.lens[s]:
                self.tables[s].append(self.free.pop())
        meta = AttentionMetadata.from_lists(
            block_tables=[self.tables[s] for s in seqs],
            context_lens=[self.lens[s] for s in seqs],
            query_lens=[len(chunks[s]) for s in seqs],
            tokens_per_block=self.bs,
            sliding_window=window,
            sink_tokens=sinks,
        )
        ids = torch.tensor([t for s in seqs for t in chunks[s]])
        return self.model(ids, meta.query_positions(), self.pool, meta, all_logits=all_logits)


@pytest.mark.parametrize("arch", ARCHES)
def test_prefill_then_greedy_decode_matches_transformers(model_dirs, arch):
    ours = load_model(model_dirs[arch], torch.float32)
    hf = _hf(model_dirs[arch])
    gen = torch.Generator().manual_seed(5)
    prompt = torch.randint(0, ours.args.vocab_size, (23,), generator=gen).tolist()
    if arch == "mistral":
        assert ours.args.sliding_window is not None
        assert ours.args.sliding_window < len(prompt)  # the window really cuts the prompt
    runner = PagedRunner(ours, tokens_per_block=4, num_blocks=16, seed=1)
    seq = runner.add()
    logits = [runner.step({seq: prompt})[0]]
    tokens = list(prompt)
    for _ in range(6):
        tokens.append(int(logits[-1].argmax()))
        logits.append(runner.step({seq: [tokens[-1]]})[0])
    ref = _hf_logits(hf, tokens)[len(prompt) - 1 :]
    ours_all = torch.stack(logits)
    assert torch.equal(ours_all.argmax(-1), ref.argmax(-1))
    torch.testing.assert_close(ours_all, ref, atol=1e-4, rtol=0)


@pytest.mark.parametrize("arch", ["llama", "mistral"])
def test_packed_batch_with_chunked_prefill_matches_transformers(model_dirs, arch):
    """Two prompts in one batch, one of them in chunks over its cached prefix, then joint
    decode steps: every sequence's logits equal its own transformers run."""
    ours = load_model(model_dirs[arch], torch.float32)
    hf = _hf(model_dirs[arch])
    gen = torch.Generator().manual_seed(8)
    prompts = [torch.randint(0, 160, (n,), generator=gen).tolist() for n in (19, 30)]
    runner = PagedRunner(ours, tokens_per_block=2, num_blocks=40, seed=3)
    a, b = runner.add(), runner.add()
    # Step 1: all of prompt a and the first 12 tokens of b; step 2: b's next 10 tokens;
    # step 3: b's last 8 tokens together with a's first decode token.
    out1 = runner.step({a: prompts[0], b: prompts[1][:12]})
    first_a = int(out1[0].argmax())
    runner.step({b: prompts[1][12:22]})
    out3 = runner.step({a: [first_a], b: prompts[1][22:]})
    seqs = {a: prompts[0] + [first_a], b: list(prompts[1])}
    got = {a: [out1[0], out3[0]], b: [out3[1]]}
    for _ in range(3):
        nxt = {s: int(got[s][-1].argmax()) for s in (a, b)}
        for s in (a, b):
            seqs[s].append(nxt[s])
        out = runner.step({s: [nxt[s]] for s in (a, b)})
        got[a].append(out[0])
        got[b].append(out[1])
    for s, prompt_len in ((a, len(prompts[0])), (b, len(prompts[1]))):
        ref = _hf_logits(hf, seqs[s])[prompt_len - 1 :]
        mine = torch.stack(got[s])
        assert torch.equal(mine.argmax(-1), ref.argmax(-1))
        torch.testing.assert_close(mine, ref, atol=1e-4, rtol=0)


def test_all_position_logits_match_transformers(model_dirs):
    ours = load_model(model_dirs["qwen2"], torch.float32)
    hf = _hf(model_dirs["qwen2"])
    prompt = list(range(3, 40, 2))
    runner = PagedRunner(ours, tokens_per_block=8, num_blocks=4)
    logits = runner.step({runner.add(): prompt}, all_logits=True)
    assert logits.shape == (len(prompt), ours.args.vocab_size)
    torch.testing.assert_close(logits, _hf_logits(hf, prompt), atol=1e-4, rtol=0)


def test_runtime_window_and_dropped_blocks_match_mistral(model_dirs):
    """A runtime window equal to the model's, with blocks that left the window released
    (-1 in the table, their memory poisoned), still matches transformers."""
    ours = load_model(model_dirs["mistral"], torch.float32)
    hf = _hf(model_dirs["mistral"])
    w = ours.args.sliding_window
    prompt = list(range(1, 27))
    runner = PagedRunner(ours, tokens_per_block=4, num_blocks=16, seed=2)
    seq = runner.add()
    logits = [runner.step({seq: prompt}, window=w)[0]]
    tokens = list(prompt)
    for _ in range(5):
        tokens.append(int(logits[-1].argmax()))
        # Blocks wholly before the next query's window are released and poisoned.
        first_needed = (len(tokens) - 1 - (w - 1)) // runner.bs
        for i in range(first_needed):
            if runner.tables[seq][i] >= 0:
                for layer in runner.pool:
                    layer[:, runner.tables[seq][i]] = float("nan")
                runner.tables[seq][i] = -1
        logits.append(runner.step({seq: [tokens[-1]]}, window=w)[0])
    assert runner.tables[seq][0] == -1
    ref = _hf_logits(hf, tokens)[len(prompt) - 1 :]
    torch.testing.assert_close(torch.stack(logits), ref, atol=1e-4, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_load_and_run(model_dirs, dtype):
    ours = load_model(model_dirs["llama"], dtype)
    assert ours.model.layers[0].self_attn.q_proj.weight.dtype == dtype
    ref32 = load_model(model_dirs["llama"], torch.float32)
    prompt = list(range(5, 25))
    r = PagedRunner(ours, 4, 8)
    r.pool = [p.to(dtype) for p in r.pool]
    out = r.step({r.add(): prompt})
    r32 = PagedRunner(ref32, 4, 8)
    ref = r32.step({r32.add(): prompt})
    assert out.dtype == dtype
    assert (out.float() - ref).abs().max() < (0.05 if dtype == torch.float16 else 0.3)


def test_fp8_pool_with_calibrated_per_layer_scales(model_dirs):
    """An fp8 KV pool (scales from each layer's K/V amax) stays close to the fp32 pool."""
    from engine.kernels import FP8_DTYPE, fp8_scale_for

    ours = load_model(model_dirs["llama"], torch.float32)
    prompt = list(range(3, 40))
    exact = PagedRunner(ours, 4, 16)
    ref = exact.step({exact.add(): prompt}, all_logits=True)
    amax = [(p[0].nan_to_num().abs().max(), p[1].nan_to_num().abs().max()) for p in exact.pool]
    ours.set_kv_scales([(fp8_scale_for(k), fp8_scale_for(v)) for k, v in amax])
    quant = PagedRunner(ours, 4, 16)
    quant.pool = [p.to(FP8_DTYPE) for p in quant.pool]  # NaN poison survives in e4m3fn
    out = quant.step({quant.add(): prompt}, all_logits=True)
    err = (out - ref).abs().max().item()
    assert 0 < err < 0.5  # logits have a spread of about 0.8 here
    assert (out.argmax(-1) == ref.argmax(-1)).float().mean() >= 0.9
    with pytest.raises(ValueError, match="scale pairs"):
        ours.set_kv_scales([(1.0, 1.0)])
