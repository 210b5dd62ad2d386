"""The CPU decode-attention kernel (``engine.kernels.cpu_decode``): its output against a
float64 softmax over each row's own keys for the shapes it takes (query heads per KV head
1-8, head sizes 16-256, rows of 1 key to the copy's whole capacity, strided query rows,
scores far apart), what it refuses, and its build: the cache, the switch, and a failed
build that leaves the engine on torch's kernel with the same tokens."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from engine.kernels import cpu_decode
from engine.model.testing import make_tiny_model_dir

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def found():
    kernel = cpu_decode.kernel()
    if kernel is None:
        pytest.skip(f"no CPU decode kernel here: {cpu_decode.unavailable_reason()}")
    return kernel


def _reference(q, kt, v, lens, scale):
    """float64 attention of each row over its own first ``lens[b]`` keys."""
    b, hkv, g, d = q.shape
    out = torch.empty(b, hkv, g, d, dtype=torch.float64)
    for row in range(b):
        n = int(lens[row])
        keys = kt[row, :, :, :n].double()  # [Hkv, D, n]
        scores = torch.einsum("hgd,hdn->hgn", q[row].double(), keys) * scale
        out[row] = torch.einsum("hgn,hnd->hgd", scores.softmax(-1), v[row, :, :n].double())
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("group", "dim", "lens", "cap"),
    [
        (1, 16, [1, 2, 15], 16),
        (2, 32, [16, 17, 31, 33], 48),
        (3, 64, [5, 64, 100], 112),
        (4, 128, [200, 7], 208),
        (8, 16, [9, 48], 48),
        (2, 256, [40, 1, 47], 48),
        (2, 32, [900, 1000, 5, 700, 64], 1008),  # enough work to share out over threads
    ],
)
def test_output_equals_the_float64_softmax_over_each_rows_own_keys(
    found, group, dim, lens, cap, threads
):
    """(With two threads the (slot, KV head) pairs are shared out when the work is large
    enough: the larger cases here.)"""
    gen = torch.Generator().manual_seed(group * 1000 + dim)
    b, hkv = len(lens), 2
    kt = torch.randn(b + 1, hkv, dim, cap, generator=gen)  # more slots than rows
    v = torch.randn(b + 1, hkv, cap, dim, generator=gen)
    # The query rows strided, as the model's q/k/v slices are.
    wide = torch.randn(b, hkv * group * dim + 24, generator=gen)
    q = wide[:, : hkv * group * dim].view(b, hkv, group, dim)
    lens_t = torch.tensor(lens, dtype=torch.int64)
    scale = dim**-0.5
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = found.attend(q, kt, v, lens_t, scale)
    finally:
        torch.set_num_threads(before)
    want = _reference(q, kt, v, lens_t, scale)
    assert got.shape == (b, hkv, group, dim) and got.dtype == torch.float32
    assert float((got.double() - want).abs().max()) < 2e-6


def test_keys_past_a_rows_length_are_never_read(found):
    """Keys past each row's length hold NaN: the output has none."""
    kt = torch.randn(2, 1, 16, 32)
    v = torch.randn(2, 1, 32, 16)
    kt[0, :, :, 5:] = float("nan")
    v[0, :, 5:] = float("nan")
    q = torch.randn(2, 1, 2, 16)
    lens = torch.tensor([5, 32])
    got = found.attend(q, kt, v, lens, 0.25)
    assert not bool(got.isnan().any())
    want = _reference(q, kt.nan_to_num(0.0), v.nan_to_num(0.0), lens, 0.25)
    assert float((got.double() - want).abs().max()) < 2e-6


def test_scores_far_apart_give_the_winning_keys_value(found):
    """Scores hundreds apart: every other key's weight underflows, as in float64."""
    kt = torch.zeros(1, 1, 16, 20)
    kt[0, 0, 0, 7] = 50.0
    kt[0, 0, 0, :7] = -50.0
    v = torch.randn(1, 1, 20, 16)
    q = torch.zeros(1, 1, 1, 16)
    q[0, 0, 0, 0] = 10.0
    got = found.attend(q, kt, v, torch.tensor([20]), 1.0)
    assert torch.allclose(got[0, 0, 0], v[0, 0, 7], atol=1e-6)


def test_calls_it_does_not_take():
    q = torch.randn(3, 4, 16)
    threads = torch.get_num_threads()
    assert not cpu_decode.supports(q.double(), 2, torch.float64)  # float32 only
    assert not cpu_decode.supports(torch.randn(3, 4, 8), 2, torch.float32)  # D % 16
    assert not cpu_decode.supports(torch.randn(3, 18, 16), 2, torch.float32)  # 9 per head
    assert not cpu_decode.supports(q, 2, torch.bfloat16)  # copies of another dtype
    torch.set_num_threads(2)
    try:
        # several threads: only a kernel built with OpenMP (which shares torch's threads)
        found = cpu_decode.kernel()
        assert cpu_decode.supports(q, 2, torch.float32) == (found is not None and found.parallel)
    finally:
        torch.set_num_threads(threads)


def test_the_build_is_cached_per_source_compiler_and_cpu(found, monkeypatch, tmp_path):
    monkeypatch.setenv(cpu_decode.ENV_CACHE, str(tmp_path))
    first = cpu_decode._build()
    stamp = first.stat().st_mtime_ns
    assert cpu_decode._build() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary left


def test_switched_off_or_unbuildable_kernels_leave_torchs_attention(monkeypatch, tmp_path):
    """``ENGINE_CPU_DECODE_KERNEL=0`` and a build that fails both give no kernel, with the
    reason; the engine then decodes with torch's kernel, and its tokens are the ones the
    kernel gives."""
    path = make_tiny_model_dir(tmp_path / "tiny", "llama", seed=3)
    prompts = [[5, 6, 7, 8, 9], [11, 12], [3, 4, 5, 6, 7, 8, 9, 10, 11]]
    params = SamplingParams(max_tokens=10, ignore_eos=True)

    def run() -> tuple[list[list[int]], int]:
        llm = LLM(path, device="cpu", max_batch_size=4)
        tokens = [out.token_ids for out in llm.generate(prompts, params)]
        return tokens, llm.model.backend.mirror.kernel_calls

    with_kernel, calls = run()
    assert calls > 0 or cpu_decode.kernel() is None
    monkeypatch.setattr(cpu_decode, "_state", {})
    monkeypatch.setenv(cpu_decode.ENV_SWITCH, "0")
    assert cpu_decode.kernel() is None
    assert cpu_decode.unavailable_reason() == f"{cpu_decode.ENV_SWITCH} is off"
    assert run() == (with_kernel, 0)
    monkeypatch.setattr(cpu_decode, "_state", {})
    monkeypatch.delenv(cpu_decode.ENV_SWITCH)
    monkeypatch.setenv(cpu_decode.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    assert cpu_decode.kernel() is None
    reason = cpu_decode.unavailable_reason()
    assert reason is not None and "could not be built" in reason
    assert run() == (with_kernel, 0)


def test_rows_in_another_order_and_the_new_tokens_written_first(found):
    """Slot ``s`` is step row ``slot_rows[s]``: queries are read and outputs written in the
    step's order; the slots below ``carried`` get their row's new K/V at their last key
    first (the others already hold it), the other keys stay as they were."""
    gen = torch.Generator().manual_seed(5)
    hkv, group, dim, cap = 2, 2, 16, 40
    lens = torch.tensor([7, 20, 3, 33])
    slot_rows = torch.tensor([2, 0, 3, 1])
    kt = torch.randn(5, hkv, dim, cap, generator=gen)
    v = torch.randn(5, hkv, cap, dim, generator=gen)
    wide = torch.randn(4, 3 * hkv * dim, generator=gen)  # the step's rows, strided
    key, value = wide[:, : hkv * dim].view(4, hkv, dim), wide[:, hkv * dim :: 2][:, : hkv * dim]
    value = value.contiguous().view(4, hkv, dim)
    q = torch.randn(4, hkv, group, dim, generator=gen)
    want_kt, want_v = kt.clone(), v.clone()
    for slot in range(2):  # carried = 2
        row, at = int(slot_rows[slot]), int(lens[slot]) - 1
        want_kt[slot, :, :, at] = key[row]
        want_v[slot, :, at] = value[row]
    got = found.attend(q, kt, v, lens, 0.3, slot_rows, (key, value, 2))
    assert torch.equal(kt, want_kt) and torch.equal(v, want_v)
    want = _reference(q[slot_rows], want_kt, want_v, lens, 0.3)
    assert float((got[slot_rows].double() - want).abs().max()) < 2e-6


def test_switched_off_for_a_block_and_back(found):
    q = torch.randn(2, 4, 16)
    assert cpu_decode.supports(q, 2, torch.float32)
    with cpu_decode.switched_off():
        assert cpu_decode.kernel() is None and not cpu_decode.supports(q, 2, torch.float32)
    assert cpu_decode.kernel() is found


def test_two_threads_share_out_long_rows_with_the_tokens_of_torchs_kernel(tmp_path):
    """Rows long enough (4 x 600 keys x 2 KV heads) for the kernel to share its work over
    two threads: the engine's greedy tokens equal those with the kernel off."""
    found = cpu_decode.kernel()
    if found is None or not found.parallel:
        pytest.skip("no OpenMP build of the CPU decode kernel here")
    path = make_tiny_model_dir(tmp_path / "tiny", "llama", seed=4, max_position_embeddings=1024)
    gen = torch.Generator().manual_seed(9)
    prompts = [torch.randint(3, 160, (n,), generator=gen).tolist() for n in (600, 610, 590, 620)]
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:

        def run() -> tuple[list[list[int]], int]:
            llm = LLM(path, device="cpu", max_batch_size=4, max_num_tokens=4096)
            tokens = [out.token_ids for out in llm.generate(prompts, params)]
            return tokens, llm.model.backend.mirror.kernel_calls

        with_kernel, calls = run()
        with cpu_decode.switched_off():
            without, none = run()
    finally:
        torch.set_num_threads(before)
    assert calls > 0 and none == 0
    assert with_kernel == without
