"""Engine benchmark: every number is measured side by side in one run.

1. Decode tokens/s of the engine against ``transformers.generate`` on the same random
   Llama (hidden 256, 4 layers) and prompts, at batch 1, 16 and 64. Decode time is
   ``t(N new tokens) - t(1 new token)`` for both, so prefill is excluded the same way.
   The two take turns for ``--rounds`` rounds per batch size; the medians of their rates
   and of the per-round ratios are printed, with each round's ratio.
   Greedy tokens of the two are asserted equal at every batch size.
   The engine's per-step times (scheduling, input packing, model, attention inside it,
   sampling, bookkeeping) is printed for the largest batch, with how often the decode
   steps extended the kept K/V copies, how often they rebuilt them, and how many
   attention calls the CPU decode kernel (``engine.kernels.cpu_decode``) took.
2. KV memory waste on two mixed-length workloads (short prompts and replies; chat-length
   ones): allocated-but-unused slots over allocated slots, from the KV stats after every
   step (slot-weighted mean and at the peak), next to the floor any paged allocator has,
   the unfilled tail of each sequence's last block.
3. Prefill tokens computed with and without block reuse on a shared-prefix workload.
4. On CUDA: decode tokens/s at batch 1, 32 and 128 of a ~0.5B random Llama in bf16, eager
   and replayed from CUDA graphs (``engine.cuda_graphs``), each as a fraction of the
   memory-bandwidth limit ``batch * bandwidth / (weight bytes + KV bytes read per step)``,
   what differs between the two (sequences equal, positions equal before the first
   divergence, the first decode step's logits against the dtype's rounding step; the same
   in float32 at batch 1, where the two must agree exactly or the section fails), and the
   per-step breakdown of both.
5. The scheduler's host cost per decode step at batch 64 and 128, alone (no model).
6. The host's cost per decode token at batch 64 and 128 where the model is cheap (a
   1-layer model through the static decode step on the CPU): single steps against
   multi-step decode windows of 4, 8 and 16 (``num_scheduler_steps``).

Run: ``python benchmarks/bench_engine.py`` (``--quick`` for fewer tokens, ``--decode-only``
for sections 1, 5 and 6 alone, ``--batches 16,64`` for other batch sizes, ``--threads N`` to fix
torch's CPU threads, ``--clock cpu`` to time with process CPU time on a machine other jobs
share; the step times then use the same clock; ``--profile`` adds each batch's ATen ops per decode
step, engine and transformers side by side, from ``decode_profile.py``).
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import tempfile
import time
import traceback
from pathlib import Path

import torch
from cuda_decode_diag import describe, fusion_profile, prefix_cache_diagnosis
from decode_profile import per_step, table

from engine import LLM, SamplingParams
from engine.cuda_graphs import DecodeGraphs
from engine.kernels import cpu_decode
from engine.kv import KvCacheManager, KvCacheSpec
from engine.model.testing import make_tiny_model_dir
from engine.scheduler import Scheduler, SchedulerConfig
from engine.sequence import Sequence
from engine.step_timing import StepTimes

# Decode steps per window in the CUDA section's "window" mode (num_scheduler_steps).
WINDOW = 8
H200_BANDWIDTH = 4.8e12  # bytes/s, datasheet
H200_PRACTICAL = 4.3e12  # bytes/s, a measured device-to-device copy

SMALL = dict(
    hidden_size=256,
    intermediate_size=688,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=4,
    vocab_size=1024,
    max_position_embeddings=1024,
)
HALF_B = dict(
    hidden_size=1024,
    intermediate_size=4096,
    num_hidden_layers=24,
    num_attention_heads=16,
    num_key_value_heads=8,
    vocab_size=32000,
    max_position_embeddings=4096,
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _prompts(batch: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(length)] for _ in range(batch)]


# The clock: wall time by default; ``--clock cpu`` (process CPU time) on a machine whose
# cores other jobs share, where wall time measures mostly the waiting.
CLOCK = time.perf_counter


def engine_time(llm: LLM, prompts: list[list[int]], new: int) -> float:
    params = SamplingParams(max_tokens=new, ignore_eos=True)
    _sync(llm.device)
    start = CLOCK()
    outs = llm.generate(prompts, params)
    _sync(llm.device)
    seconds = CLOCK() - start
    assert all(len(o.token_ids) == new for o in outs)
    llm.runtime.kv.check_valid()
    return seconds


def hf_time(hf, prompts: list[list[int]], new: int, device: torch.device) -> float:
    ids = torch.tensor(prompts, device=device)
    _sync(device)
    start = CLOCK()
    with torch.no_grad():
        out = hf.generate(
            ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0
        )
    _sync(device)
    assert out.shape[1] == ids.shape[1] + new
    return CLOCK() - start


def assert_same_tokens(llm: LLM, hf, prompts: list[list[int]], new: int) -> None:
    """Greedy tokens of the engine equal ``transformers.generate``'s for every prompt."""
    outs = llm.generate(prompts, SamplingParams(max_tokens=new, ignore_eos=True))
    llm.runtime.kv.check_valid()
    ids = torch.tensor(prompts)
    with torch.no_grad():
        ref = hf.generate(
            ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0
        )
    for i, out in enumerate(outs):
        theirs = ref[i, ids.shape[1] :].tolist()
        assert out.token_ids == theirs, f"prompt {i}: engine {out.token_ids} vs {theirs}"


def decode_rate(timer, batch: int, new: int) -> float:
    """Decode tokens/s: ``batch * (new - 1)`` tokens over ``t(new) - t(1)`` (best of 2)."""
    one = min(timer(1) for _ in range(2))
    many = min(timer(new) for _ in range(2))
    return batch * (new - 1) / max(many - one, 1e-9)


def bench_decode(
    path: Path, new: int, batches: tuple[int, ...], rounds: int, profile: bool = False
) -> None:
    """Engine and transformers take turns, ``rounds`` times per batch size; the medians of
    their rates and of the per-round ratios are printed (a shared machine's noise hits
    both sides of a round alike)."""
    try:
        import transformers
    except ImportError:
        print("\n[1] skipped: transformers (the peer) is not installed")
        return
    device = torch.device("cpu")
    hf = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    hf.generation_config.eos_token_id = None
    print(
        f"\n[1] decode tokens/s on CPU, random Llama {SMALL}, {new} new tokens, prompt 32,"
        f" medians of {rounds} alternating rounds"
    )
    print(f"{'batch':>6} {'engine':>10} {'transformers':>13} {'ratio':>7} {'ratios':>24}")
    for batch in batches:
        llm = LLM(
            path,
            device="cpu",
            max_batch_size=batch,
            kv_cache_config={"tokens_per_block": 16, "max_tokens": batch * (32 + new + 16)},
        )
        prompts = _prompts(batch, 32, SMALL["vocab_size"])
        engine_time(llm, prompts, 2)  # warm up both
        hf_time(hf, prompts, 2, device)
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(
                decode_rate(lambda n, llm=llm, p=prompts: engine_time(llm, p, n), batch, new)
            )
            theirs.append(decode_rate(lambda n, p=prompts: hf_time(hf, p, n, device), batch, new))
        assert_same_tokens(llm, hf, prompts, new)
        if profile:
            ops_ours = per_step(lambda n, llm=llm, p=prompts: engine_time(llm, p, n), 16)
            ops_theirs = per_step(lambda n, p=prompts: hf_time(hf, p, n, device), 16)
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        spread = " ".join(f"{r:.2f}" for r in ratios)
        print(
            f"{batch:>6} {statistics.median(ours):>10.1f} {statistics.median(theirs):>13.1f}"
            f" {statistics.median(ratios):>7.2f} {spread:>24}",
            flush=True,
        )
        if profile:
            print(f"    ops per decode step at batch {batch} (torch profiler; 16 steps):")
            print(table(ops_ours, ops_theirs), flush=True)
    llm.runtime.timer = StepTimes(clock=CLOCK)
    mirror = llm.model.backend.mirror
    before = mirror.extends, mirror.rebuilds, mirror.kernel_calls
    engine_time(llm, prompts, new)
    print(f"engine step times at batch {batches[-1]} ({new} new tokens, prefill included):")
    print(llm.runtime.timer.table())
    llm.runtime.timer = None
    print(
        f"decode K/V copies (engine.kernels.decode_mirror) in that run: layers extended by"
        f" one token {mirror.extends - before[0]}, rebuilt from the pool"
        f" {mirror.rebuilds - before[1]}; attention calls by the CPU kernel"
        f" (engine.kernels.cpu_decode) {mirror.kernel_calls - before[2]}"
        f"{'' if cpu_decode.kernel() else f' ({cpu_decode.unavailable_reason()})'}"
    )


def bench_scheduler(batches: tuple[int, ...] = (64, 128), steps: int = 200) -> None:
    """The scheduler's host cost per decode step, alone (no model): ``schedule()`` and
    ``on_step_done()`` over ``batch`` running sequences (prompt 32, block reuse on), with
    16 more requests waiting (the no-evict admission check runs every step)."""
    print(f"\n[5] scheduler host cost per decode step (no model; mean of {steps} steps)")
    print(f"{'batch':>6} {'schedule ms':>12} {'on_step_done ms':>16}")
    for batch in batches:
        spec = KvCacheSpec(
            num_layers=1,
            num_kv_heads=1,
            head_dim=2,
            tokens_per_block=16,
            num_blocks=(batch + 16) * 20,
            enable_block_reuse=True,
        )
        sched = Scheduler(SchedulerConfig(max_batch_size=batch), KvCacheManager(spec))
        for i in range(batch + 16):
            sched.add(Sequence(i, list(range(32)), max_new_tokens=steps + 8, ignore_eos=True))
        planned = done = 0.0
        for k in range(steps + 2):  # the first two steps (prefill) are not counted
            start = CLOCK()
            out = sched.schedule()
            mid = CLOCK()
            sched.on_step_done(out, {seq.seq_id: 5 for seq in out.needs_token})
            if k >= 2:
                planned, done = planned + mid - start, done + CLOCK() - mid
        sched.kv.check_valid()
        print(f"{batch:>6} {1e3 * planned / steps:>12.3f} {1e3 * done / steps:>16.3f}")


HOST_MODEL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=512,
    max_position_embeddings=1024,
)


def bench_host_windows(root: Path, batches: tuple[int, ...] = (64, 128), new: int = 49) -> None:
    """The host's share of a decode step where the model is cheap (on a GPU a graph
    replay leaves the host everything else): a 1-layer, hidden-64 model through the
    static decode step on the CPU, single steps against multi-step decode windows
    (``num_scheduler_steps``); host = schedule + inputs + sampling + bookkeeping, per
    generated decode token, CPU time; tokens asserted equal."""
    path = make_tiny_model_dir(root / "host", "llama", seed=0, **HOST_MODEL)
    print(
        f"\n[6] host cost per decode token, static decode step on the CPU (1-layer hidden-64"
        f" model), prompt 128, {new - 1} decode tokens, process CPU time (the prompt step"
        " included)"
    )
    print(
        f"{'batch':>6} {'steps':>6} {'host us/token':>14} {'model us/token':>15} {'host vs 1':>10}"
    )
    for batch in batches:
        rng = random.Random(batch)
        prompts = [[rng.randrange(512) for _ in range(128)] for _ in range(batch)]
        params = SamplingParams(max_tokens=new, ignore_eos=True)
        base, want = None, None
        for steps in (1, 4, 8, 16):
            kv = {"max_tokens": batch * (128 + new + 32)}
            llm = LLM(path, device="cpu", dtype="float32", max_batch_size=batch,
                      kv_cache_config=kv, num_scheduler_steps=steps)  # fmt: skip
            llm.runtime.graphs = _new_graphs(llm, window_steps=steps)
            llm.generate(prompts, params)  # warm-up
            runtime = llm.runtime
            runtime.timer = StepTimes(clock=time.process_time)
            got = [o.token_ids for o in llm.generate(prompts, params)]
            timer, runtime.timer = runtime.timer, None
            want = want or got
            assert got == want, f"windows of {steps} changed the tokens"
            runtime.kv.check_valid()
            tokens = batch * (new - 1)
            host = sum(v for k, v in timer.seconds.items() if k not in ("model", "attention"))
            per = 1e6 * host / tokens
            base = base or per
            print(
                f"{batch:>6} {steps:>6} {per:>14.2f} {1e6 * timer.seconds['model'] / tokens:>15.2f}"
                f" {base / per:>9.2f}x",
                flush=True,
            )


# (name, requests, prompt lengths, output lengths), lengths drawn uniformly.
WORKLOADS = (
    ("short", 48, (5, 300), (4, 64)),
    ("chat", 48, (32, 640), (32, 384)),
)


def bench_waste(path: Path) -> None:
    """Slot waste, and the part of it an allocator cannot avoid: the unfilled tail of each
    sequence's last block (``floor``). Waste above the floor would be over-reservation."""
    print("\n[2] KV slot waste on mixed-length workloads (48 requests each, 16 at a time)")
    print(
        f"{'workload':>9} {'prompts':>9} {'outputs':>8} {'tokens_per_block':>17}"
        f" {'mean waste':>11} {'floor':>7} {'waste at peak':>14} {'peak slots':>11}"
    )
    for name, count, (p_lo, p_hi), (o_lo, o_hi) in WORKLOADS:
        rng = random.Random(1)
        prompts = [
            [rng.randrange(3, 1000) for _ in range(rng.randint(p_lo, p_hi))] for _ in range(count)
        ]
        news = [rng.randint(o_lo, o_hi) for _ in prompts]
        for tpb in (16, 4):
            llm = LLM(
                path,
                device="cpu",
                max_batch_size=16,
                kv_cache_config={"tokens_per_block": tpb, "max_tokens": 16 * (p_hi + o_hi + tpb)},
            )
            runtime = llm.runtime
            for prompt, new in zip(prompts, news, strict=True):
                runtime.add_request(prompt, SamplingParams(max_tokens=new, ignore_eos=True))
            allocated = used = floor = peak_alloc = peak_used = 0
            while runtime.has_unfinished:
                runtime.step()
                stats = runtime.kv.stats()
                allocated += stats.allocated_slots
                used += stats.used_slots
                # The tokens each sequence keeps in its blocks (the newest sampled token
                # gets its slot at the next step), rounded up to whole blocks.
                floor += sum(
                    -min(len(seq), len(seq.block_table) * tpb) % tpb
                    for seq in runtime.kv.seqs.values()
                )
                if stats.allocated_slots > peak_alloc:
                    peak_alloc, peak_used = stats.allocated_slots, stats.used_slots
            runtime.kv.check_valid()
            print(
                f"{name:>9} {f'{p_lo}-{p_hi}':>9} {f'{o_lo}-{o_hi}':>8} {tpb:>17}"
                f" {1 - used / allocated:>10.2%} {floor / allocated:>6.2%}"
                f" {1 - peak_used / peak_alloc:>13.2%} {peak_alloc:>11}"
            )


def bench_reuse(path: Path) -> None:
    print("\n[3] prefill tokens on a shared-prefix workload (16 requests: 96 shared + 16 own)")
    rng = random.Random(2)
    system = [rng.randrange(3, 1000) for _ in range(96)]
    prompts = [system + [rng.randrange(3, 1000) for _ in range(16)] for _ in range(16)]
    print(f"{'block reuse':>12} {'prefill tokens':>15} {'reused tokens':>14} {'seconds':>8}")
    for reuse in (False, True):
        llm = LLM(
            path,
            device="cpu",
            max_batch_size=4,
            kv_cache_config={"tokens_per_block": 16, "enable_block_reuse": reuse},
        )
        start = time.perf_counter()
        llm.generate(prompts, SamplingParams(max_tokens=4, ignore_eos=True))
        seconds = time.perf_counter() - start
        llm.runtime.kv.check_valid()
        hits = llm.runtime.kv.stats().counters.cached_hit_tokens
        print(f"{reuse!s:>12} {llm.runtime.num_prefill_tokens:>15} {hits:>14} {seconds:>8.2f}")


def read_bytes_per_step(llm: LLM, batch: int, mean_ctx: float) -> tuple[int, int, int]:
    """Bytes one decode step must read at least: every weight once (the embedding table
    only for the ``batch`` rows it looks up, unless the LM head shares it) and the K/V
    of every cached token of every sequence. Returns (weights, kv per token, step bytes)."""
    model = llm.model
    a = model.args
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    embed = model.model.embed_tokens.weight
    if not a.tie_word_embeddings:
        weights -= embed.numel() * embed.element_size()
        weights += batch * a.hidden_size * embed.element_size()
    kv_dtype_bytes = llm.runtime.kv.storage.kv[0].element_size()
    kv_per_token = 2 * a.num_hidden_layers * a.num_key_value_heads * a.head_dim * kv_dtype_bytes
    return weights, kv_per_token, int(weights + batch * mean_ctx * kv_per_token)


def first_decode_logits(llm: LLM, prompts: list[list[int]]) -> torch.Tensor:
    """The float32 logits (on the host) of the first step in which every scheduled
    sequence decodes, from a two-token generation of ``prompts``."""
    runtime = llm.runtime
    seen: list[torch.Tensor] = []
    sample = runtime._sample

    def record(out, logits):  # type: ignore[no-untyped-def]
        if not seen and out.scheduled and not any(e.is_prefill for e in out.scheduled):
            seen.append(logits[: len(out.scheduled)].to("cpu", torch.float32, copy=True))
        return sample(out, logits)

    runtime.__dict__["_sample"] = record  # this instance only
    try:
        llm.generate(prompts, SamplingParams(max_tokens=2, ignore_eos=True))
    finally:
        del runtime.__dict__["_sample"]
    if not seen:
        raise RuntimeError("no pure decode step was seen")
    return seen[0]


def compare_modes(
    eager: list[list[int]],
    graph: list[list[int]],
    eager_logits: torch.Tensor,
    graph_logits: torch.Tensor,
    dtype: torch.dtype,
) -> tuple[str, bool]:
    """What differs between the eager and the graph run: identical sequences, the share
    of token positions equal before each sequence's first divergence, and the largest
    difference of the first decode step's logits against the rounding step of ``dtype``
    at the logits' magnitude (more than one step there: the two forwards compute
    different things, a bug, not a rounding tie). Also whether the two agree: every
    token equal and the logits within one rounding step."""
    same = sum(a == b for a, b in zip(eager, graph, strict=True))
    total = agreed = 0
    for a, b in zip(eager, graph, strict=True):
        total += len(a)
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        agreed += k
    diff = (eager_logits - graph_logits).abs().max().item()
    scale = max(eager_logits.abs().max().item(), 1e-30)
    rounding = 2.0 ** math.floor(math.log2(scale)) * torch.finfo(dtype).eps
    verdict = (
        "identical"
        if diff == 0
        else "within one rounding step"
        if diff <= rounding
        else f"MORE than one {str(dtype).removeprefix('torch.')} rounding step: a bug"
    )
    agree = same == len(eager) and diff <= rounding
    return (
        f"{same}/{len(eager)} sequences equal, {agreed / max(total, 1):.1%} of positions"
        f" equal before the first divergence; first decode step logits max |diff|"
        f" {diff:.3g} (|logit| up to {scale:.3g}, rounding step {rounding:.3g}): {verdict}",
        agree,
    )


def _cuda_llm(path: Path, dtype: str, max_batch: int, cpu_smoke: bool, **kv: int) -> LLM:
    """The LLM of section [4]: on CUDA, or (``cpu_smoke``) on the CPU with the static
    decode step installed without capture."""
    config: dict = {"kv_cache_config": kv} if kv else {}
    config["num_scheduler_steps"] = WINDOW  # used only where a mode sets it on the runtime
    if not cpu_smoke:
        llm = LLM(path, device="cuda", dtype=dtype, max_batch_size=max_batch, **config)
    else:
        llm = LLM(path, device="cpu", dtype=dtype, max_batch_size=max_batch, **config)
        llm.runtime.graphs = _new_graphs(llm)
    llm.runtime.num_scheduler_steps = 1
    return llm


def _new_graphs(llm: LLM, window_steps: int = WINDOW) -> DecodeGraphs:
    """Another graphs object for ``llm``'s model and pool (captured on CUDA, lazily): each
    one replays the forward as it was when a rung was captured, fused kernels or not."""
    return llm.runtime.new_graphs(window_steps=window_steps)


def float32_check(path: Path, new: int, *, cpu_smoke: bool) -> tuple[str, bool]:
    """Batch 1 in float32, eager and graph: tokens and first decode step logits (both
    must be equal), or why graphs are off."""
    llm = _cuda_llm(path, "float32", 1, cpu_smoke, max_tokens=4096)
    graphs = llm.runtime.graphs
    if graphs is None:
        return f"graphs off ({llm.runtime.graphs_off})", True
    prompts = _prompts(1, 128, llm.model.args.vocab_size, seed=1)
    params = SamplingParams(max_tokens=new, ignore_eos=True)
    out, logits = {}, {}
    for name, value in (("eager", None), ("graph", graphs)):
        llm.runtime.graphs = value
        out[name] = [o.token_ids for o in llm.generate(prompts, params)]
        logits[name] = first_decode_logits(llm, prompts)
    text, agree = compare_modes(
        out["eager"], out["graph"], logits["eager"], logits["graph"], torch.float32
    )
    if cpu_smoke:
        # On a CPU the eager step attends over the decode mirror's copies and the static
        # step over the reference gather: float32 sums in another order, so only the tokens
        # must agree there (on CUDA both run the same Triton kernel).
        agree = out["eager"] == out["graph"]
        text = text.replace(": a bug", "") + " (CPU smoke: other attention code; tokens must agree)"
    return text, agree


def bench_cuda(
    root: Path, new: int, batches: tuple[int, ...] = (1, 32, 128), *, cpu_smoke: bool = False
) -> None:
    """Eager and CUDA-graph decode on one LLM, each with the fused kernels on and off
    (``model.fused_ops``; a second graphs object holds the unfused captures), against the
    memory-bandwidth limit, with the per-step breakdown, the kernels per decode step with
    and without fusion, and the bf16 divergence diagnosis (prefix cache or graphs).

    ``cpu_smoke``: the same code on the CPU with the small model and the static decode
    step run without capture (``DecodeGraphs(capture=False)``), to prove the section
    runs; its figures mean nothing (``gpu_checks.sh --dry-run``)."""
    print("\n[4] CUDA decode of a ~0.5B random Llama in bf16: eager and CUDA graphs")
    if cpu_smoke:
        print("CPU smoke run: small model, float32, static decode steps without capture")
        path = make_tiny_model_dir(root / "smoke", "llama", seed=0, **SMALL)
    elif not torch.cuda.is_available():
        print("skipped: no GPU is present")
        return
    else:
        path = make_tiny_model_dir(root / "half_b", "llama", seed=0, **HALF_B)
    # float32 first (its own small pool, freed before the bf16 run): graph == eager exactly
    check, agree = float32_check(path, new, cpu_smoke=cpu_smoke)
    print(f"float32, batch 1, graph vs eager: {check}", flush=True)
    failures: list[str] = [] if agree else ["float32 graph and eager differ"]
    print(f"float32, batch 1, fused vs unfused: {fused_check(path, new, cpu_smoke)}", flush=True)
    if not cpu_smoke:
        torch.cuda.empty_cache()
    dtype = "float32" if cpu_smoke else "bfloat16"
    failures += bench_modes(path, dtype, new, batches, cpu_smoke)
    gc.collect()
    if not cpu_smoke:
        torch.cuda.empty_cache()
    batch = min(32, max(batches))

    def make(reuse: bool) -> LLM:
        kv = {"max_tokens": batch * (128 + new + 32), "enable_block_reuse": reuse}
        return _cuda_llm(path, dtype, batch, cpu_smoke, **kv)

    def graphs_of(llm: LLM) -> DecodeGraphs | None:
        return llm.runtime.graphs

    prompts = _prompts(batch, 128, 32000 if not cpu_smoke else SMALL["vocab_size"], seed=7)
    prefix_cache_diagnosis(make, graphs_of, prompts, new)
    if failures:
        print(f"FAILED ({'; '.join(failures)}); after a graph failure, eager figures only")
        raise SystemExit(1)


def fused_check(path: Path, new: int, cpu_smoke: bool) -> str:
    """float32, batch 4, eager: tokens and first decode step logits with the fused kernels
    on and off (they differ only by float32 rounding: the order of sums, libm cos/sin)."""
    llm = _cuda_llm(path, "float32", 4, cpu_smoke, max_tokens=4096)
    llm.runtime.graphs = None
    prompts = _prompts(4, 128, llm.model.args.vocab_size, seed=2)
    params = SamplingParams(max_tokens=new, ignore_eos=True)
    out, logits = {}, {}
    for on in (True, False):
        llm.model.fused_ops = on
        out[on] = [o.token_ids for o in llm.generate(prompts, params)]
        logits[on] = first_decode_logits(llm, prompts)
    diff = (logits[True] - logits[False]).abs().max().item()
    scale = logits[False].abs().max().item()
    applies = "" if not cpu_smoke else " (CPU: the fused kernels do not apply, both unfused)"
    return f"{describe(out[True], out[False])}; first decode logits max |diff| {diff:.3g} (|logit| up to {scale:.3g}){applies}"


def bench_modes(
    path: Path, dtype: str, new: int, batches: tuple[int, ...], cpu_smoke: bool
) -> list[str]:
    """The decode table: eager and graph, fused kernels on and off; returns failures."""
    llm = _cuda_llm(path, dtype, max(batches), cpu_smoke)
    runtime = llm.runtime
    graphs = runtime.graphs
    failures: list[str] = []
    if graphs is None:
        print(f"CUDA graphs are off here: {runtime.graphs_off}; eager figures only")
    mean_ctx = 128 + new / 2
    weights, kv_per_token, _ = read_bytes_per_step(llm, 1, mean_ctx)
    print(
        f"weights read per step {weights / 1e9:.3f} GB (embedding rows only), KV"
        f" {kv_per_token} B/token, prompt 128, {new} new tokens, mean context {mean_ctx:.0f};"
        f" limit = batch x {H200_BANDWIDTH / 1e12:.1f} TB/s / (weights + batch x context x KV)"
    )
    print(
        "fused: the fused RMSNorm+residual, SiLU-mul and RoPE kernels (engine.kernels.fused;"
        " on CUDA only); unfused: the torch ops (model.fused_ops = False), same engine"
    )
    print(
        f"window: the graphs replayed in {WINDOW}-step decode windows (num_scheduler_steps"
        f" {WINDOW}: one schedule and one host round trip per {WINDOW} tokens), fused, each"
        " window queued behind the one before (chained); unchained: one window at a time"
    )
    print(
        f"{'batch':>6} {'eager tok/s':>12} {'graph tok/s':>12} {'speedup':>8}"
        f" {'unfused eager':>14} {'unfused graph':>14} {'fusion (graph)':>15}"
        f" {'window tok/s':>13} {'unchained':>10} {'limit tok/s':>12} {'eager':>7}"
        f" {'graph':>7} {'window':>7}"
        f" {'window of 4.3TB/s':>18} {'same tokens':>12}"
    )
    unfused_graphs = _new_graphs(llm) if graphs is not None else None
    modes: list[tuple[str, DecodeGraphs | None, bool, int]] = [("eager", None, True, 1)]
    if graphs is not None:
        modes.append(("graph", graphs, True, 1))
        modes.append(("window", graphs, True, WINDOW))
        modes.append(("unchained", graphs, True, WINDOW))
    modes.append(("eager-u", None, False, 1))
    if unfused_graphs is not None:
        modes.append(("graph-u", unfused_graphs, False, 1))
    profiles: list[tuple[int, str, StepTimes]] = []
    details: list[str] = []
    for batch in batches:
        prompts = _prompts(batch, 128, llm.model.args.vocab_size)
        _, _, step_bytes = read_bytes_per_step(llm, batch, mean_ctx)
        limit = batch * H200_BANDWIDTH / step_bytes
        practical = batch * H200_PRACTICAL / step_bytes
        rates: dict[str, float] = {}
        tokens: dict[str, list[list[int]]] = {}
        for name, value, fused, steps in list(modes):
            runtime.graphs, llm.model.fused_ops = value, fused
            runtime.num_scheduler_steps = steps
            runtime.chain_windows = name != "unchained"
            try:
                params = SamplingParams(max_tokens=new, ignore_eos=True)
                llm.generate(prompts, params)  # warm-up (and capture)
                rates[name] = decode_rate(lambda n, p=prompts: engine_time(llm, p, n), batch, new)
                runtime.timer = StepTimes(device=runtime.device)
                tokens[name] = [o.token_ids for o in llm.generate(prompts, params)]
                profiles.append((batch, name, runtime.timer))
            except Exception as err:  # keep the eager figures; the step still fails below
                if name.startswith("eager"):
                    raise
                print(f"{name} decode failed at batch {batch}: {type(err).__name__}: {err}")
                traceback.print_exc()
                failures.append(f"{name}, batch {batch}: {type(err).__name__}")
                modes = [m for m in modes if m[0] != name]
                rates.pop(name, None)
                tokens.pop(name, None)
            finally:
                runtime.timer = None
                llm.model.fused_ops = True
                runtime.num_scheduler_steps = 1
                runtime.chain_windows = True
        nan = float("nan")
        graph, eager = rates.get("graph", nan), rates["eager"]
        window = rates.get("window", nan)
        for name in ("window", "unchained"):
            if name in tokens and tokens[name] != tokens.get("graph"):
                # the same replays and argmax as single graph steps: tokens must be equal
                failures.append(f"{name} tokens differ from graph tokens at batch {batch}")
                print(f"{name} window tokens differ from single graph steps at batch {batch}")
        same = "-"
        if "graph" in tokens:
            equal = sum(a == b for a, b in zip(tokens["eager"], tokens["graph"], strict=True))
            same = f"{equal}/{batch}"
            logits = {}
            for name, value, _, _ in modes[:2]:
                runtime.graphs = value
                logits[name] = first_decode_logits(llm, prompts)
            text, _ = compare_modes(
                tokens["eager"], tokens["graph"], logits["eager"], logits["graph"],
                llm.model.lm_head.weight.dtype,
            )  # fmt: skip
            details.append(f"batch {batch:>4}: {text}")
        for name in ("eager-u", "graph-u"):
            if name in tokens and name.split("-")[0] in tokens:
                plain = name.split("-")[0]
                details.append(
                    f"batch {batch:>4}: {plain} fused vs unfused: "
                    + describe(tokens[plain], tokens[name])
                )
        fusion = graph / rates.get("graph-u", nan)
        print(
            f"{batch:>6} {eager:>12.1f} {graph:>12.1f} {graph / eager:>7.2f}x"
            f" {rates.get('eager-u', nan):>14.1f} {rates.get('graph-u', nan):>14.1f}"
            f" {fusion:>14.2f}x {window:>13.1f} {rates.get('unchained', nan):>10.1f}"
            f" {limit:>12.1f} {eager / limit:>7.1%}"
            f" {graph / limit:>7.1%} {window / limit:>7.1%} {window / practical:>18.1%}"
            f" {same:>12}",
            flush=True,
        )
    runtime.graphs = graphs
    if details:
        print("token comparisons, each over the prompts' cached prefix (warm runs):")
        print("\n".join(details))
    if graphs is not None:
        print(
            f"captured batch sizes: {sorted(graphs._graphs)}; replays {graphs.replays};"
            f" decode windows {runtime.windows}, of them queued behind another (chained)"
            f" {runtime.chained}"
        )
    from engine.kernels import triton_paged

    broken = triton_paged.grouped_failure()
    kernel = triton_paged.decode_kernel() if broken is None else f"per-head (grouped: {broken})"
    print(f"Triton decode kernel: {kernel}")
    print(
        "per-step breakdown, ms per step over one run (prefill step included; every phase"
        " boundary synchronises the GPU; a replayed step has no separate attention time):"
    )
    print(
        f"{'batch':>6} {'mode':>9} {'schedule':>9} {'inputs':>7} {'model':>7} {'attention':>10}"
        f" {'sampling':>9} {'bookkeep':>9} {'step':>7} {'steps':>6}"
    )
    for batch, name, timer in profiles:
        ms = {k: 1e3 * v / max(timer.steps, 1) for k, v in timer.seconds.items()}
        step = 1e3 * timer.total / max(timer.steps, 1)
        print(
            f"{batch:>6} {name:>9} {ms['schedule']:>9.3f} {ms['inputs']:>7.3f} {ms['model']:>7.3f}"
            f" {ms['attention']:>10.3f} {ms['sampling']:>9.3f} {ms['bookkeeping']:>9.3f}"
            f" {step:>7.3f} {timer.steps:>6}"
        )
    print("kernels per eager decode step (torch profiler; CUDA graphs replay the same kernels):")
    for batch in sorted({min(batches), max(batches)}):
        prompts = _prompts(batch, 128, llm.model.args.vocab_size)
        fusion_profile(llm, prompts, f"batch {batch:>4}")
    runtime.kv.check_valid()
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer new tokens")
    parser.add_argument("--cuda-only", action="store_true", help="only the CUDA decode section")
    parser.add_argument("--decode-only", action="store_true", help="only section [1]")
    parser.add_argument(
        "--cuda-smoke-cpu",
        action="store_true",
        help="with --cuda-only: run section [4]'s code on the CPU (small model; no figures)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per batch")
    parser.add_argument("--batches", default="1,16,64", help="decode batch sizes, comma-separated")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="section [1]: ops per decode step of both sides at each batch (torch profiler)",
    )
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="cpu: process CPU time"
    )
    opts = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if opts.clock == "cpu" else time.perf_counter
    if opts.threads:
        torch.set_num_threads(opts.threads)
    new = 16 if opts.quick else 48
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = make_tiny_model_dir(root / "small", "llama", seed=0, **SMALL)
        print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
        if not opts.cuda_only:
            batches = tuple(int(b) for b in opts.batches.split(","))
            bench_decode(path, new, batches, opts.rounds, opts.profile)
            bench_scheduler()
            bench_host_windows(root)
            if not opts.decode_only:
                bench_waste(path)
                bench_reuse(path)
        if opts.cuda_smoke_cpu:
            bench_cuda(root, 8, (1, 4), cpu_smoke=True)
        else:
            bench_cuda(root, new)


if __name__ == "__main__":
    main()
