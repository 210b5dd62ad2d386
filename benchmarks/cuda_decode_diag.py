"""Diagnostics of section [4] of ``bench_engine.py`` (the CUDA decode section).

- :func:`kernels_per_step`: device kernels launched per decode step (torch profiler), and
  their device time, from the difference between a generation of ``1 + steps`` tokens and
  one of 1 token (so prefill cancels), eager (no CUDA graphs), with the most frequent names.
- :func:`prefix_cache_diagnosis`: whether a prefix-cache hit, rather than CUDA graphs,
  changes bfloat16 greedy tokens. Fresh engines; runs without block reuse (eager twice,
  graph twice) and with it (cold, then warm over the cached prefix, eager and graph); the
  first-divergence position of each pair.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable

import torch

from engine import LLM, SamplingParams


def first_divergences(a: list[list[int]], b: list[list[int]]) -> list[int]:
    """Per sequence, the index of the first token that differs (its length when none)."""
    out = []
    for x, y in zip(a, b, strict=True):
        k = 0
        while k < min(len(x), len(y)) and x[k] == y[k]:
            k += 1
        out.append(k)
    return out


def describe(a: list[list[int]], b: list[list[int]]) -> str:
    firsts = first_divergences(a, b)
    full = len(a[0]) if a else 0
    differ = [k for k in firsts if k < full]
    if not differ:
        return f"all {len(a)} sequences identical ({full} tokens each)"
    return (
        f"{len(differ)}/{len(a)} sequences differ; first divergence at token"
        f" {sorted(differ)[: min(12, len(differ))]}{' ...' if len(differ) > 12 else ''}"
        f" (0 = the first generated token)"
    )


def _tokens(llm: LLM, prompts: list[list[int]], new: int) -> list[list[int]]:
    params = SamplingParams(max_tokens=new, ignore_eos=True)
    return [o.token_ids for o in llm.generate(prompts, params)]


def kernels_per_step(
    llm: LLM, prompts: list[list[int]], steps: int = 8
) -> tuple[float, float, list[tuple[str, float]], list[tuple[str, float]]]:
    """``(kernels per decode step, device ms per decode step, [(name, launches per
    step)], [(name, device us per step)])`` of ``llm`` as configured now (run it with
    ``runtime.graphs = None`` for eager kernels), the lists the ten most launched and the
    ten costliest names. On the CPU (a dry run) the profiler's CPU ops stand in for
    kernels."""
    from torch.profiler import ProfilerActivity, profile  # only this diagnostic needs it

    cuda = llm.device.type == "cuda"
    activity = ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU
    kind = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU

    def run(new: int) -> tuple[int, float, Counter, Counter]:
        with profile(activities=[activity]) as prof:
            _tokens(llm, prompts, new)
            if cuda:
                torch.cuda.synchronize(llm.device)
        events = [e for e in prof.events() if e.device_type == kind]
        if not cuda:  # top-level CPU ops only
            events = [e for e in events if e.cpu_parent is None]
        micros: Counter = Counter()
        for e in events:
            micros[e.name] += e.time_range.elapsed_us()
        return len(events), sum(micros.values()), Counter(e.name for e in events), micros

    _tokens(llm, prompts, 1 + steps)  # warm: kernels compiled, prefix cached
    n1, us1, names1, time1 = run(1)
    n2, us2, names2, time2 = run(1 + steps)
    names2.subtract(names1)
    time2.subtract(time1)
    top = [(name[:60], count / steps) for name, count in names2.most_common(10) if count > 0]
    costly = [(name[:60], us / steps) for name, us in time2.most_common(10) if us > 0]
    return (n2 - n1) / steps, (us2 - us1) / steps / 1e3, top, costly


def fusion_profile(
    llm: LLM, prompts: list[list[int]], label: str, print_: Callable[[str], None] = print
) -> None:
    """Print kernels per eager decode step with the fused kernels on and off."""
    model, runtime = llm.model, llm.runtime
    graphs, fused = runtime.graphs, model.fused_ops
    runtime.graphs = None
    try:
        rows = []
        for on in (True, False):
            model.fused_ops = on
            rows.append((on, *kernels_per_step(llm, prompts)))
    finally:
        runtime.graphs, model.fused_ops = graphs, fused
    cuda = llm.device.type == "cuda"
    unit = "CUDA kernels and copies" if cuda else "top-level torch ops (CPU smoke run)"
    for on, count, ms, top, costly in rows:
        print_(
            f"{label}, fused {'on ' if on else 'off'}: {count:.1f} {unit} per decode step,"
            f" {ms:.3f} ms of {'device' if cuda else 'CPU'} time per step"
        )
        print_("   most launched per step: " + ", ".join(f"{n} x{c:g}" for n, c in top[:6]))
        print_("   most time per step: " + ", ".join(f"{n} {us:.1f} us" for n, us in costly[:8]))


def _release() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def prefix_cache_diagnosis(
    make_llm: Callable[[bool], LLM],
    install_graphs: Callable[[LLM], object | None],
    prompts: list[list[int]],
    new: int,
    print_: Callable[[str], None] = print,
) -> None:
    """Settle whether bf16 graph/eager token differences come from CUDA graphs or from a
    prefix-cache hit changing the prefill of a repeated prompt. ``make_llm(reuse)`` builds
    a fresh engine (block reuse on or off); ``install_graphs(llm)`` returns its graphs
    object (None: graphs are off there). One engine at a time (each freed before the next)."""
    print_(f"bf16 divergence diagnosis, batch {len(prompts)}, {new} new tokens, fresh engines:")
    for line in _without_reuse(make_llm(False), install_graphs, prompts, new):
        print_(line)
    _release()
    for line in _with_reuse(make_llm(True), install_graphs, prompts, new):
        print_(line)
    _release()


def _without_reuse(llm: LLM, install_graphs, prompts, new) -> list[str]:
    graphs = install_graphs(llm)
    runtime = llm.runtime
    runtime.graphs = None
    eager_a = _tokens(llm, prompts, new)
    eager_b = _tokens(llm, prompts, new)
    lines = [f"  no prefix caching: eager vs eager again: {describe(eager_a, eager_b)}"]
    if graphs is not None:
        runtime.graphs = graphs
        graph_a = _tokens(llm, prompts, new)
        graph_b = _tokens(llm, prompts, new)
        lines.append(f"  no prefix caching: eager vs graph: {describe(eager_a, graph_a)}")
        lines.append(f"  no prefix caching: graph vs graph again: {describe(graph_a, graph_b)}")
    hits = runtime.kv.stats().counters.cached_hit_tokens
    lines.append(f"  (prompt tokens served from the cache without caching: {hits}, expected 0)")
    runtime.kv.check_valid()
    return lines


def _with_reuse(llm: LLM, install_graphs, prompts, new) -> list[str]:
    graphs = install_graphs(llm)
    runtime = llm.runtime
    runtime.graphs = None
    cold = _tokens(llm, prompts, new)
    before = runtime.kv.stats().counters.cached_hit_tokens
    warm = _tokens(llm, prompts, new)
    hit = runtime.kv.stats().counters.cached_hit_tokens - before
    lines = [
        f"  prefix caching on: eager cold vs eager over the cached prefix ({hit} prompt"
        f" tokens hit): {describe(cold, warm)}"
    ]
    if graphs is not None:
        runtime.graphs = graphs
        warm_graph = _tokens(llm, prompts, new)
        lines.append(
            "  prefix caching on: eager vs graph, both over the cached prefix:"
            f" {describe(warm, warm_graph)}"
        )
        lines.append(f"  prefix caching on: eager cold vs graph warm: {describe(cold, warm_graph)}")
    runtime.kv.check_valid()
    return lines
