"""The CUDA-graph decode path on a CPU: the capture-ready static-shape step, run without a
graph, gives the normal path's logits, tokens and pool; padding rows store nothing and
change no real row; steps that do not fit fall back to the eager forward; on a CPU the
runtime builds no graphs at all. The same static step through the Triton store and decode
kernels (the ones captured on a GPU) runs here under Triton's interpreter.

The captured version is checked on a GPU by ``tests/engine/test_cuda_identity.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from engine import LLM, InvalidLlmArg, SamplingParams
from engine.cuda_graphs import DecodeGraphs, batch_ladder, graphs_off_reason
from engine.kernels import triton_available

pytest.importorskip("transformers")

PROMPTS = [[5, 6, 7, 8, 9], [40] * 37, list(range(3, 70))]
KV = {"tokens_per_block": 16, "max_tokens": 2048}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    from engine.model.testing import make_tiny_model_dir

    return make_tiny_model_dir(tmp_path_factory.mktemp("llama"), "llama", seed=2)


def _llm(path: Path, **kw) -> LLM:
    return LLM(path, device="cpu", dtype="float32", kv_cache_config=KV, **kw)


def _static(llm: LLM, max_batch_size: int, max_seq_len: int = 256) -> DecodeGraphs:
    rt = llm.runtime
    graphs = rt.new_graphs(capture=False, max_batch_size=max_batch_size, max_seq_len=max_seq_len)
    rt.graphs = graphs
    return graphs


def _tokens(llm: LLM, max_tokens: int = 10) -> list[list[int]]:
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    return [o.token_ids for o in llm.generate(PROMPTS, params)]


def test_batch_ladder():
    assert batch_ladder(1) == (1,)
    assert batch_ladder(8) == (1, 2, 4, 8)
    assert batch_ladder(5) == (1, 2, 4, 5)
    assert batch_ladder(128)[-3:] == (32, 64, 128)
    with pytest.raises(ValueError, match="max_batch_size"):
        batch_ladder(0)


def test_cpu_runtime_builds_no_graphs(model_dir):
    llm = _llm(model_dir)
    assert llm.runtime.graphs is None
    assert llm.runtime.graphs_off == "not a CUDA device"
    assert graphs_off_reason(llm.model, llm.runtime.kv.storage.kv, 0) == "not a CUDA device"
    assert _llm(model_dir, enforce_eager=True).runtime.graphs_off == "enforce_eager"


def test_enforce_eager_must_be_a_bool(model_dir):
    with pytest.raises(InvalidLlmArg) as info:
        _llm(model_dir, enforce_eager="yes")
    assert info.value.argument == "enforce_eager"
    assert "enforce_eager='yes'" in str(info.value)


def test_static_decode_gives_the_normal_tokens(model_dir):
    expected = _tokens(_llm(model_dir))
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=8)  # 3 sequences run in the rung of 4
    assert _tokens(llm) == expected
    assert graphs.replays >= 9  # every decode step after the prompts
    llm.runtime.kv.check_valid()


def test_capture_all_builds_every_rung_up_front_and_replays_are_counted_per_rung(model_dir):
    expected = _tokens(_llm(model_dir))
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=8)
    assert graphs.built == ()
    assert graphs.capture_all() == (1, 2, 4, 8)
    assert graphs.built == (1, 2, 4, 8)
    assert graphs.capture_all() == ()  # nothing left to build
    # Building the rungs ran forwards on padding rows only: the tokens are unchanged.
    assert _tokens(llm) == expected
    assert graphs.replayed == {4: graphs.replays}  # 3 sequences: the rung of 4 only
    assert graphs.replays >= 9
    llm.runtime.kv.check_valid()
    # Requests finishing at different steps move the batch down the ladder.
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=8)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 6, 10)]
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == [expected[0][:3], expected[1][:6], expected[2]]
    assert graphs.replayed == {4: 2, 2: 3, 1: 4}
    assert sum(graphs.replayed.values()) == graphs.replays


def test_padding_rows_store_nothing_and_leave_real_rows_alone(model_dir):
    """Each static step (3 real rows, 5 padding rows) against the eager forward of the
    3 real rows alone: the same logits, and the same pool afterwards."""
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=8)
    graphs.sizes = (8,)  # every step runs padded to 8 rows
    kv = llm.runtime.kv.storage.kv
    replay = graphs.replay
    checked = []

    def checked_replay(entry, n):
        before = [t.clone() for t in kv]
        static = replay(entry, n).clone()
        after_static = [t.clone() for t in kv]
        for t, saved in zip(kv, before, strict=True):
            t.copy_(saved)
        meta = type(entry.meta)(
            slot_mapping=entry.meta.slot_mapping[:n].clone(),
            block_tables=entry.meta.block_tables[:n].clone(),
            context_lens=entry.meta.context_lens[:n].clone(),
            query_start_loc=torch.arange(n + 1),
            is_prefill=False,
            max_query_len=1,
        )
        eager = llm.model(entry.ids[:n].clone(), entry.positions[:n].clone(), kv, meta)
        torch.testing.assert_close(static, eager, rtol=1e-5, atol=1e-5)
        assert bool((static.argmax(-1) == eager.argmax(-1)).all())
        slots = entry.meta.slot_mapping[:n].tolist()
        for t, want, old in zip(kv, after_static, before, strict=True):
            # The static step wrote the real rows' slots and nothing else ...
            rows = want.flatten(1, 2) != old.flatten(1, 2)  # [2, slots, heads, dim]
            written = rows.flatten(2).any(-1).any(0).nonzero().flatten().tolist()
            assert set(written) <= set(slots) and written
            # ... with the eager step's values there (up to the batch's GEMM rounding).
            torch.testing.assert_close(want, t, rtol=1e-5, atol=1e-5, equal_nan=True)
        checked.append(n)
        return static

    graphs.replay = checked_replay
    _tokens(llm, max_tokens=6)
    assert checked and set(checked) == {3}


def test_steps_that_do_not_fit_run_eagerly(model_dir):
    expected = _tokens(_llm(model_dir), max_tokens=10)
    # Two rungs hold at most 2 sequences: 3-sequence steps run eagerly, and so do the
    # prompt steps.
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=2)
    assert _tokens(llm, max_tokens=10) == expected
    assert graphs.replays == 0
    # Uneven lengths: once one request is done the two left fit the rung of 2.
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=2)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (3, 10, 10)]
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == [expected[0][:3], expected[1], expected[2]]
    assert graphs.replays == 7  # tokens 4..10 of the two longer requests
    # Block tables wider than the static buffer (3 blocks for 48 tokens): the 67-token
    # prompt's steps run eagerly; once it is done the other two (up to 47 tokens) fit.
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=4, max_seq_len=48)
    params = [SamplingParams(max_tokens=m, ignore_eos=True) for m in (10, 10, 3)]
    outs = llm.generate(PROMPTS, params)
    assert [o.token_ids for o in outs] == [expected[0], expected[1], expected[2][:3]]
    assert graphs.max_blocks == 3
    assert graphs.replays == 7
    llm.runtime.kv.check_valid()


def test_fits_is_about_shapes_only(model_dir):
    llm = _llm(model_dir)
    graphs = _static(llm, max_batch_size=4)
    rt = llm.runtime
    for prompt in PROMPTS:
        rt.add_request(prompt, SamplingParams(max_tokens=4, ignore_eos=True))
    out = rt.scheduler.schedule()  # the prompts
    seqs = [e.seq for e in out.scheduled]
    assert not graphs.fits(seqs, [e.num_new_tokens for e in out.scheduled])
    assert graphs.fits(seqs, [1] * len(seqs))
    assert not graphs.fits(seqs * 2, [1] * 6)
    assert not graphs.fits([], [])
    with pytest.raises(ValueError, match="exceed the largest captured batch 4"):
        graphs.prepare(seqs * 2)


TRITON_SCRIPT = """
import sys
from engine import LLM, SamplingParams
from engine.kernels import select, triton_paged
path = sys.argv[1]
prompts = [[5, 6, 7], [40] * 12, list(range(3, 24))]
params = SamplingParams(max_tokens=3, ignore_eos=True)
kw = dict(device="cpu", dtype="float32",
          kv_cache_config={"tokens_per_block": 16, "max_tokens": 2048})
plain = LLM(path, **kw)
ref = [o.token_ids for o in plain.generate(prompts, params)]
longer = SamplingParams(max_tokens=7, ignore_eos=True)
ref7 = [o.token_ids for o in plain.generate(prompts, longer)]
# The Triton kernels on CPU tensors: only Triton's interpreter runs them.
triton_paged.supports = lambda kv, q, prefill: not prefill
triton_paged.supports_store = lambda kv, key: True
llm = LLM(path, **kw)
llm.model.backend = select.AttentionBackend(decode=select.TRITON)
rt = llm.runtime
rt.graphs = rt.new_graphs(capture=False, max_batch_size=8, max_seq_len=256)
got = [o.token_ids for o in llm.generate(prompts, params)]
rt.kv.check_valid()
assert got == ref, (got, ref)
assert rt.graphs.replays == 2, rt.graphs.replays
# The two decode tokens as one multi-step window (num_scheduler_steps) instead
rt.graphs = rt.new_graphs(capture=False, window_steps=4, max_batch_size=8, max_seq_len=256)
rt.num_scheduler_steps = 4
got = [o.token_ids for o in llm.generate(prompts, params)]
rt.kv.check_valid()
assert got == ref, (got, ref)
assert rt.windows == 1 and rt.graphs.replays == 2, (rt.windows, rt.graphs.replays)
# With the fused kernels: the static step's decode kernel rotates, stores and attends
from engine.kernels import fused
from engine.model import llama
llama.fused_supported = lambda x: True
fused.store_fusable = lambda qkv, kv: kv.dtype == qkv.dtype
seen = []
one_kernel = triton_paged.paged_decode_rope_store
def counted(*a, **k):
    seen.append(a[0].shape[0])
    return one_kernel(*a, **k)
triton_paged.paged_decode_rope_store = counted
llm.model.fused_ops = True
rt.graphs = rt.new_graphs(capture=False, max_batch_size=8, max_seq_len=256)
rt.num_scheduler_steps = 1
got = [o.token_ids for o in llm.generate(prompts, params)]
rt.kv.check_valid()
assert got == ref, (got, ref)
assert seen and set(seen) == {4}, seen  # 3 rows in the rung of 4, one a padding row
assert triton_paged.rope_store_failure() is None
# and in chained windows of 2 (6 decode tokens: 3 windows, 2 of them chained)
rt.graphs = rt.new_graphs(capture=False, window_steps=2, max_batch_size=8, max_seq_len=256)
rt.num_scheduler_steps = 2
windows, chained = rt.windows, rt.chained
got = [o.token_ids for o in llm.generate(prompts, longer)]
rt.kv.check_valid()
assert got == ref7, (got, ref7)
assert (rt.windows - windows, rt.chained - chained) == (3, 2), (rt.windows, rt.chained)
print("ok", got)
"""


@pytest.mark.slow  # ~12 s on CPU; on a GPU, gpu_checks' CUDA identity tests replay real graphs
@pytest.mark.skipif(not triton_available(), reason="needs Triton (its interpreter)")
def test_static_decode_through_the_triton_kernels_interpreted(model_dir):
    """The Triton KV store (skipping the padding rows' slot -1) and decode kernel (a
    padding row of length 0) in the static step, as a GPU captures them, give the
    reference tokens: 3 sequences in the rung of 4, in single steps, in a multi-step
    decode window, and with the fused kernels (the decode kernel with RoPE and the
    store in front) in single steps and in chained windows."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, "-c", TRITON_SCRIPT, str(model_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok")
