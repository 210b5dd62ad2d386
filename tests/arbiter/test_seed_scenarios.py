"""Golden scenarios: the seed arbitrator's five claims, and where its greedy logic fails."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from arbiter import ConflictError, arbitrate, func, perf, setup
from arbiter.baselines import greedy_arbitrate
from arbiter.compat import ConfigArbitrateError, ConfigArbitrator

STREAMINGLLM = func(
    "streamingllm",
    {
        "plugin_config.streamingllm": True,
        "plugin_config.use_paged_context_fmha": False,
        "kv_cache_config.enable_block_reuse": False,
    },
)
BLOCK_REUSE = func(
    "enable_block_reuse",
    {"kv_cache_config.enable_block_reuse": True, "plugin_config.use_paged_context_fmha": True},
)
BEAM = func(
    "beam_search (beam_width > 1)",
    {"build_config.max_beam_width": 4, "kv_cache_config.enable_block_reuse": False},
)
FP8 = func("fp8_quant", {"quant_config.quant_algo": "FP8"})
CHUNKED = perf("chunked_context", {"scheduler_config.enable_chunked_context": True})


def test_streamingllm_drops_chunked_context_with_its_reason():
    reasons = []
    chunked = perf(
        "chunked_context",
        {"scheduler_config.enable_chunked_context": True},
        fallback=reasons.append,
    )
    # StreamingLLM and chunked context are TensorRT-engine features (plugin, batch manager)
    r = arbitrate([STREAMINGLLM, chunked], profile="trtllm-tensorrt")
    assert r.dropped_names == ("chunked_context",)
    assert r.value("scheduler_config.enable_chunked_context") is False
    assert r.value("plugin_config.use_paged_context_fmha") is False
    assert len(reasons) == 1
    reason = reasons[0]
    assert reason.kind == "conflict" and reason.claims == ("streamingllm",)
    assert "scheduler.chunked-context-needs-paged-context-fmha" in reason.rules


def test_streamingllm_and_block_reuse_conflict():
    with pytest.raises(ConflictError) as err:
        arbitrate([STREAMINGLLM, BLOCK_REUSE])
    conflict = err.value.conflicts[0]
    assert set(conflict.claims) == {"streamingllm", "enable_block_reuse"}
    assert "`enable_block_reuse`" in str(err.value) and "`streamingllm`" in str(err.value)


def test_beam_search_turns_block_reuse_off_and_keeps_chunked_context():
    r = arbitrate([BEAM, CHUNKED])
    assert r.kept_names == ("chunked_context",)
    assert r.value("kv_cache_config.enable_block_reuse") is False
    assert r.value("plugin_config.use_paged_context_fmha") is True
    assert {c.path for c in r.changes} == {
        "build_config.max_beam_width",
        "kv_cache_config.enable_block_reuse",
        "scheduler_config.enable_chunked_context",
    }


def test_beam_search_and_block_reuse_conflict():
    with pytest.raises(ConflictError) as err:
        arbitrate([BEAM, BLOCK_REUSE])
    assert set(err.value.conflicts[0].claims) == {
        "beam_search (beam_width > 1)",
        "enable_block_reuse",
    }


def test_fp8_quant_on_hopper_keeps_block_reuse_and_chunked_context():
    r = arbitrate([setup("gpu", {"device.sm": 90}), FP8, BLOCK_REUSE, CHUNKED])
    assert r.kept_names == ("chunked_context",)
    assert r.value("plugin_config.use_paged_context_fmha") is True
    assert r.value("quant_config.quant_algo") == "FP8"


def test_pre_ampere_setup_blocks_block_reuse():
    with pytest.raises(ConflictError) as err:
        # the seed's own setup: "pre-ampere not supported" (the 0.9-0.12 LLM API)
        arbitrate(
            [setup("pre-ampere not supported", {"device.sm": 75}), BLOCK_REUSE],
            profile="trtllm-0.10",
        )
    conflict = err.value.conflicts[0]
    assert conflict.claims == ("enable_block_reuse",)
    assert conflict.setups == ("pre-ampere not supported",)
    assert conflict.facts == {"device.sm": 75}


def test_seed_compatible_api_applies_values_to_config_objects():
    plugin = SimpleNamespace(use_paged_context_fmha=True, streamingllm=False, context_fmha=True)
    kv = SimpleNamespace(enable_block_reuse=True, tokens_per_block=32)
    fallbacks = []
    arb = ConfigArbitrator()
    arb.claim_func(
        "streamingllm", config_name="plugin_config", streamingllm=True, use_paged_context_fmha=False
    )
    arb.claim_func("streamingllm", config_name="kv_cache_config", enable_block_reuse=False)
    arb.claim_perf(
        "chunked_context",
        config_name="plugin_config",
        use_paged_context_fmha=True,
        fallback=lambda: fallbacks.append(1),
    )
    arb(plugin_config=plugin, kv_cache_config=kv)
    assert plugin.streamingllm is True and plugin.use_paged_context_fmha is False
    assert kv.enable_block_reuse is False and kv.tokens_per_block == 32
    assert fallbacks == [1]


def test_seed_compatible_api_raises_its_error_type():
    arb = ConfigArbitrator()
    arb.claim_func(
        "streamingllm", config_name="plugin_config", streamingllm=True, use_paged_context_fmha=False
    )
    arb.claim_func("enable_block_reuse", config_name="kv_cache_config", enable_block_reuse=True)
    with pytest.raises(ConfigArbitrateError) as err:
        arb(plugin_config=SimpleNamespace(), kv_cache_config=SimpleNamespace())
    assert isinstance(err.value, ConflictError)
    assert set(err.value.conflicts[0].claims) == {"streamingllm", "enable_block_reuse"}


# ------------------------------------------------------------------ the seed's two flaws
ORDER_PERFS = [
    (
        "fast_prefill",
        {"plugin_config.use_paged_context_fmha": False, "plugin_config.context_fmha": True},
        1,
    ),
    ("chunked_context", {"plugin_config.use_paged_context_fmha": True}, 1),
    ("block_reuse", {"plugin_config.use_paged_context_fmha": True}, 1),
]


def test_flaw_one_greedy_depends_on_claim_order_ours_does_not():
    _, kept_a, _ = greedy_arbitrate([], ORDER_PERFS)
    _, kept_b, _ = greedy_arbitrate([], list(reversed(ORDER_PERFS)))
    assert set(kept_a) != set(kept_b)  # the seed's answer changes with the order
    assert set(kept_a) == {"fast_prefill"}  # and in one order it keeps the lighter side

    def ours(perfs):
        arb = ConfigArbitrator(rules=[])
        for name, opts, _ in perfs:
            for path, value in opts.items():
                section, option = path.split(".", 1)
                arb.claim_perf(name, config_name=section, **{option: value})
        return arb(plugin_config=SimpleNamespace())

    first, second = ours(ORDER_PERFS), ours(list(reversed(ORDER_PERFS)))
    assert first.kept_names == second.kept_names == ("block_reuse", "chunked_context")
    assert first.values == second.values


def test_flaw_two_greedy_leaks_a_dropped_claim_ours_does_not():
    funcs = [("beam_search", {"kv_cache_config.enable_block_reuse": False})]
    perfs = [
        (
            "fast_reuse",
            {"kv_cache_config.tokens_per_block": 64, "kv_cache_config.enable_block_reuse": True},
            1,
        )
    ]
    config, kept, dropped = greedy_arbitrate(funcs, perfs)
    assert dropped == ["fast_reuse"]
    assert config["kv_cache_config.tokens_per_block"] == 64  # leaked from the dropped claim

    kv = SimpleNamespace(enable_block_reuse=True, tokens_per_block=32)
    arb = ConfigArbitrator()
    arb.claim_func("beam_search", config_name="kv_cache_config", enable_block_reuse=False)
    arb.claim_perf(
        "fast_reuse", config_name="kv_cache_config", tokens_per_block=64, enable_block_reuse=True
    )
    resolution = arb(kv_cache_config=kv)
    assert resolution.dropped_names == ("fast_reuse",)
    assert kv.tokens_per_block == 32 and kv.enable_block_reuse is False
