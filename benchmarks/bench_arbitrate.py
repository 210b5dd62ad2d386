"""Arbitration speed and quality.

1. The realistic scenario (arbiter/scenarios/server_h100.yaml: 25 claims over the full
   schema, every shipped rule in scope of its profile, trtllm-tensorrt): p50 and p95 of
   `arbitrate()` in-process.
2. Generated instances with 10, 100 and 1,000 perf claims (plus the same rules): solve
   time, and the optimality ratio of the seed's greedy strategy (arbiter.baselines) to
   ours, both scored by our objective (total weight of the perf claims that hold in the
   final configuration, which must also satisfy every rule).

Run: python benchmarks/bench_arbitrate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from arbiter import arbitrate, load_claims, perf
from arbiter.baselines import greedy_arbitrate
from constraints import lookup, options
from constraints.profiles import get_profile
from constraints.rules import rules_for
from constraints.schema import EngineConfig

SCENARIO = Path(__file__).resolve().parents[1] / "arbiter" / "scenarios" / "server_h100.yaml"
# the scenario's release line (it names it), whose rules cover the plugin options too
PROFILE = "trtllm-tensorrt"
HARD = rules_for(get_profile(PROFILE), kind="hard")
DEFAULT = rules_for(get_profile(PROFILE), kind="default")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def realistic(repeat: int) -> None:
    claims = load_claims(SCENARIO)
    arbitrate(claims, profile=PROFILE)  # warm up imports and caches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        arbitrate(claims, profile=PROFILE)
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"realistic scenario: {len(claims)} claims, {len(HARD)} hard rules"
        f" + {len(DEFAULT)} default rules ({PROFILE}), {repeat} runs"
    )
    print(
        f"  arbitrate() p50 {percentile(times, 0.5):.1f} ms   p95 {percentile(times, 0.95):.1f} ms"
    )


# The options the scale instances draw from: the bool and small-enum options of the
# plugin, KV-cache, build, scheduler, speculative and quantization sections as the core
# schema defined them. A fixed list keeps the figures comparable while the schema grows;
# `--all-options` draws from every bool and small-enum option instead.
CORE_OPTIONS = (
    "plugin_config.context_fmha",
    "plugin_config.use_paged_context_fmha",
    "plugin_config.use_fp8_context_fmha",
    "plugin_config.streamingllm",
    "plugin_config.paged_kv_cache",
    "plugin_config.remove_input_padding",
    "plugin_config.gemm_swiglu_plugin",
    "plugin_config.low_latency_gemm_swiglu_plugin",
    "plugin_config.use_fused_mlp",
    "plugin_config.multiple_profiles",
    "plugin_config.reduce_fusion",
    "plugin_config.user_buffer",
    "plugin_config.norm_quant_fusion",
    "plugin_config.manage_weights",
    "kv_cache_config.enable_block_reuse",
    "kv_cache_config.enable_partial_reuse",
    "kv_cache_config.copy_on_partial_reuse",
    "kv_cache_config.onboard_blocks",
    "kv_cache_config.dtype",
    "build_config.gather_context_logits",
    "build_config.gather_generation_logits",
    "build_config.speculative_decoding_mode",
    "build_config.dtype",
    "scheduler_config.capacity_scheduler_policy",
    "scheduler_config.context_chunking_policy",
    "scheduler_config.enable_chunked_context",
    "speculative_config.decoding_type",
    "quant_config.kv_cache_quant_algo",
)


def generated(n: int, seed: int, all_options: bool = False) -> list:
    """Perf claims of 1-3 equalities over bool and small enum options, weights 1-9."""
    rng = random.Random(seed)
    if all_options:
        choices = [
            s
            for s in options()
            if not s.fact
            and (s.domain.kind == "bool" or (s.domain.kind == "enum" and len(s.domain.values) <= 6))
        ]
    else:
        choices = [lookup(p) for p in CORE_OPTIONS]
    claims = []
    for i in range(n):
        picked = rng.sample(choices, rng.randint(1, 3))
        requires = {
            s.path: rng.choice([True, False] if s.domain.kind == "bool" else list(s.domain.values))
            for s in picked
        }
        claims.append(perf(f"p{i:04d}", requires, weight=rng.randint(1, 9)))
    return claims


def greedy_config(claims) -> dict:
    """The seed's strategy: claims in order, a claim clashing on an already-set path is
    dropped; unset options keep their defaults. It knows no rules."""
    perfs = [(c.name, dict(c.requires), c.weight) for c in claims]
    chosen, _, _ = greedy_arbitrate([], perfs)
    values = EngineConfig().flat()
    values.update(chosen)
    return values


def value_of(values: dict, claims) -> int:
    return sum(c.weight for c in claims if c.expr.evaluate(values))


def scale(sizes: list[int], all_options: bool = False) -> None:
    print("generated perf claims: ours with every shipped rule (time, status), and the")
    print("greedy/ours objective ratio without rules (the seed knows none), plus how many")
    print("shipped rules the greedy configuration breaks")
    header = f"  {'claims':>7} {'ms (rules)':>10} {'status':>8} {'ms (no rules)':>13} {'ours':>7} {'greedy':>7} {'ratio':>6} {'broken':>6}"
    print(header)
    for n in sizes:
        claims = generated(n, seed=n, all_options=all_options)
        t0 = time.perf_counter()
        with_rules = arbitrate(claims, profile=PROFILE)
        ms_rules = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        free = arbitrate(claims, rules=[])
        ms_free = (time.perf_counter() - t0) * 1000
        ours = value_of(free.values, claims)
        greedy_values = greedy_config(claims)
        greedy = value_of(greedy_values, claims)
        broken = sum(not r.expr.evaluate(greedy_values) for r in HARD)
        print(
            f"  {n:>7} {ms_rules:>10.1f} {with_rules.status:>8} {ms_free:>13.1f} {ours:>7} {greedy:>7}"
            f" {greedy / ours:>6.3f} {broken:>6}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument(
        "--all-options",
        action="store_true",
        help="draw generated claims from every bool/enum option",
    )
    args = parser.parse_args()
    realistic(args.repeat)
    scale([10, 100, 1000], all_options=args.all_options)


if __name__ == "__main__":
    main()
