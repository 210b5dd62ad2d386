"""A mixed step's decode rows through the Triton decode kernel equal the dense oracle.

On CUDA a step that mixes prompt chunks and decode tokens attends its decode rows with the
Triton decode kernel over the block table (``AttentionBackend._triton_rows``), both where
the step is cut into runs (``engine.kernels.segments``) and where it is split into its
prompt part and its decode part (windows, sinks, an fp8 pool). Without a GPU, Triton's
interpreter runs the kernel on CPU tensors (``TRITON_INTERPRET=1``, set by the conftest
when Triton is importable), with the CUDA-only check of ``triton_paged.supports`` lifted
for decode.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

from engine.kernels import FP8_DTYPE, AttentionBackend, fp8_scale_for, triton_paged
from engine.kernels.select import TRITON
from tests.engine.test_kernels_oracle import build_case, dense_reference

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1" and triton_paged.triton_available()
ON_GPU = torch.cuda.is_available() and triton_paged.triton_available()
DEVICE = "cuda" if ON_GPU else "cpu"
pytestmark = pytest.mark.skipif(
    not (ON_GPU or INTERPRET),
    reason="the Triton kernels need CUDA (or TRITON_INTERPRET=1 with Triton installed)",
)


@pytest.fixture
def decode_calls(monkeypatch):
    """Rows each Triton decode call attended; on a CPU, ``supports`` lets decode run."""
    calls: list[int] = []
    real = triton_paged.paged_decode

    def spy(query, *args, **kwargs):
        calls.append(query.shape[0])
        return real(query, *args, **kwargs)

    monkeypatch.setattr(triton_paged, "paged_decode", spy)
    if not ON_GPU:
        monkeypatch.setattr(triton_paged, "supports", lambda kv, q, prefill: not prefill)
    return calls


def _on_device(case):
    m = case.meta
    meta = replace(
        m,
        slot_mapping=m.slot_mapping.to(DEVICE),
        block_tables=m.block_tables.to(DEVICE),
        context_lens=m.context_lens.to(DEVICE),
        query_start_loc=m.query_start_loc.to(DEVICE),
        plan_cache={},
    )
    return meta, case.pool.to(DEVICE)


def _step_kv(case):
    """This step's own K/V rows in packed order (the last ``q_len`` keys of each sequence)."""
    ks = [k[pos] for k, pos in zip(case.keys, case.q_positions, strict=True)]
    vs = [v[pos] for v, pos in zip(case.values, case.q_positions, strict=True)]
    return torch.cat(ks), torch.cat(vs)


# fresh prompt, continued chunk, then four decodes (one of them a 1-token context)
CTX, Q_LENS = [12, 30, 1, 9, 40, 5], [12, 10, 1, 1, 1, 1]


def test_decode_run_of_a_cut_step(decode_calls):
    case = build_case(
        torch.Generator().manual_seed(5), CTX, Q_LENS, tokens_per_block=4,
        num_kv_heads=2, group=3, head_dim=16, dtype=torch.float32, fill=float("nan"),
    )  # fmt: skip
    meta, pool = _on_device(case)
    key, value = (t.to(DEVICE, torch.float32) for t in _step_kv(case))
    backend = AttentionBackend(decode=TRITON)
    out = backend.attention(case.query.to(DEVICE, torch.float32), pool, meta, key=key, value=value)
    assert [s.kind for s in meta.plan_cache["segments"]] == ["fresh", "chunk", "decode"]
    assert decode_calls == [4]
    ref = dense_reference(case)
    torch.testing.assert_close(out.double().cpu(), ref, atol=2e-5, rtol=0)


@pytest.mark.parametrize(("window", "sinks", "use_sq"), [(6, 0, False), (8, 2, True)])
def test_decode_part_of_a_split_step_with_a_window(decode_calls, window, sinks, use_sq):
    case = build_case(
        torch.Generator().manual_seed(window), CTX, Q_LENS, tokens_per_block=4,
        num_kv_heads=2, group=2, head_dim=16, dtype=torch.float32, fill=float("nan"),
        sliding_window=window, sink_tokens=sinks,
    )  # fmt: skip
    meta, pool = _on_device(case)
    backend = AttentionBackend(decode=TRITON)
    query = case.query.to(DEVICE, torch.float32)
    sink_query = case.sink_query.to(DEVICE, torch.float32) if use_sq else None
    out = backend.attention(query, pool, meta, sliding_window=window, sink_query=sink_query)
    assert decode_calls == [4]
    ref = dense_reference(case, window=window, sinks=sinks, use_sink_query=use_sq)
    torch.testing.assert_close(out.double().cpu(), ref, atol=2e-5, rtol=0)


def test_fp8_pool_decode_part(decode_calls):
    scale = fp8_scale_for(4.0)
    case = build_case(
        torch.Generator().manual_seed(3), CTX, Q_LENS, tokens_per_block=4,
        num_kv_heads=1, group=4, head_dim=16, dtype=torch.float32, cache_dtype=FP8_DTYPE,
        k_scale=scale, v_scale=scale,
    )  # fmt: skip
    meta, pool = _on_device(case)
    query = case.query.to(DEVICE, torch.float32)
    triton_out = AttentionBackend(decode=TRITON).attention(
        query, pool, meta, k_scale=scale, v_scale=scale
    )
    assert decode_calls == [4]
    meta.plan_cache.clear()
    reference = AttentionBackend().attention(query, pool, meta, k_scale=scale, v_scale=scale)
    # the same fp8 keys and values read by both: equal to float32 rounding
    torch.testing.assert_close(triton_out, reference, atol=2e-5, rtol=0)


def test_a_sink_bubble_keeps_the_reference(decode_calls):
    """The Triton kernels take cache index as key position: a step with a sink bubble
    stays on the reference."""
    case = build_case(
        torch.Generator().manual_seed(9), [12, 9], [12, 1], tokens_per_block=4,
        num_kv_heads=1, group=2, head_dim=16, dtype=torch.float32,
    )  # fmt: skip
    meta, pool = _on_device(case)
    meta = replace(meta, sink_bubble=2, sink_tokens=1, sliding_window=8)
    backend = AttentionBackend(decode=TRITON)
    assert not backend._triton_rows(case.query.to(DEVICE), pool, meta)


def test_a_stream_with_mixed_steps_gives_the_reference_tokens(decode_calls, monkeypatch, tmp_path):
    """Two at a time, so later prompts join the running decodes in mixed steps: greedy
    tokens with the Triton decode kernel (decode steps and mixed steps' decode rows)
    equal the reference backend's."""
    from engine import LLM, SamplingParams
    from engine.model.testing import make_tiny_model_dir

    path = make_tiny_model_dir(tmp_path / "llama", seed=4)
    prompts = [[5, 6, 7], list(range(3, 40)), [40] * 20, list(range(60, 90))]
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in (2, 7, 4, 5)]
    kw = dict(
        device=DEVICE, dtype="float32", max_batch_size=2,
        kv_cache_config={"tokens_per_block": 16, "max_tokens": 1024},
    )  # fmt: skip
    ref_llm = LLM(path, **kw)
    ref_llm.model.backend = AttentionBackend()
    ref = [o.token_ids for o in ref_llm.generate(prompts, params)]
    mixed: list[int] = []
    real = AttentionBackend._triton_decode

    def spy(self, query, *args, **kwargs):
        mixed.append(query.shape[0])
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(AttentionBackend, "_triton_decode", spy)
    llm = LLM(path, **kw)
    llm.model.backend = AttentionBackend(decode=TRITON)
    got = [o.token_ids for o in llm.generate(prompts, params)]
    llm.runtime.kv.check_valid()
    assert got == ref
    assert mixed, "no mixed step attended its decode rows through the Triton kernel"
    assert len(decode_calls) > len(mixed)  # pure decode steps took the kernel too
