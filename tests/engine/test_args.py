"""llm_args -> claims: explicit values are func claims, engine defaults are perf claims
with logged fallbacks, the machine and the model are setup facts; bad arguments raise
typed errors naming the argument."""

from __future__ import annotations

import logging

import pytest
import torch

import arbiter
from arbiter import ConflictError, InvalidClaim
from arbiter.claims import FuncClaim, PerfClaim, SetupClaim
from engine import InvalidLlmArg, PoolTooSmall, build_claims, device_facts, size_pool
from engine.args import CPU_SM, meminfo_mib, model_facts
from engine.llm import RUNTIME_PROFILE
from engine.model import ModelArgs
from engine.pool import kv_spec

ARGS = ModelArgs(
    architecture="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=160,
    max_position_embeddings=256,
    torch_dtype="float32",
)
CPU = device_facts(torch.device("cpu"))


def arbitrate(claims):
    """As `LLM` arbitrates: on the runtime's release line (engine.llm.RUNTIME_PROFILE)."""
    return arbiter.arbitrate(claims, profile=RUNTIME_PROFILE)


def _by_name(claims):
    return {c.name: c for c in claims}


def test_explicit_arguments_are_func_claims_and_defaults_perf_claims():
    claims = _by_name(
        build_claims(
            {
                "kv_cache_config": {"tokens_per_block": 16, "enable_block_reuse": False},
                "enable_chunked_prefill": True,
                "max_batch_size": 4,
                "scheduler_config": {"capacity_scheduler_policy": "MAX_UTILIZATION"},
                "device": "cpu",
            },
            ARGS,
            CPU,
        )
    )
    for name in (
        "llm_args.kv_cache_config.tokens_per_block",
        "llm_args.kv_cache_config.enable_block_reuse",
        "llm_args.enable_chunked_prefill",
        "llm_args.max_batch_size",
        "llm_args.scheduler_config.capacity_scheduler_policy",
    ):
        assert isinstance(claims[name], FuncClaim)
    # The user set block reuse, so no default claim competes with it.
    assert "default.enable_block_reuse" not in claims
    for name in ("default.enable_partial_reuse", "default.use_paged_context_fmha"):
        assert isinstance(claims[name], PerfClaim)
    assert isinstance(claims["device"], SetupClaim)
    assert isinstance(claims["model"], SetupClaim)
    assert not any(name.endswith("device") and name.startswith("llm_args") for name in claims)


def test_cpu_counts_as_hopper_equivalent_with_its_real_memory():
    assert CPU.sm == CPU_SM == 90
    assert CPU.memory_mib == meminfo_mib("MemTotal") > 0
    resolution = arbitrate(build_claims({}, ARGS, CPU))
    # Nothing is switched off on the CPU's account.
    assert resolution.value("kv_cache_config.enable_block_reuse") is True
    assert resolution.value("plugin_config.use_paged_context_fmha") is True
    assert resolution.value("build_config.max_seq_len") == 256
    assert resolution.value("model.num_kv_heads") == 2
    assert model_facts(ARGS)["model.dtype"] == "float32"


def test_a_pre_ampere_device_drops_the_reuse_default_with_a_logged_reason(caplog):
    # Volta: no paged context FMHA (attention plugin), which block reuse needs; the
    # arbitrator's wider "pre-Ampere" limits ended with 0.12, before the runtime's line
    old_gpu = type(CPU)(sm=70, memory_mib=16000)
    with caplog.at_level(logging.INFO, logger="engine.llm"):
        resolution = arbitrate(build_claims({"dtype": "float16"}, ARGS, old_gpu))
    assert "default.enable_block_reuse" in resolution.dropped_names
    assert resolution.value("kv_cache_config.enable_block_reuse") is False
    assert any("enable_block_reuse" in r.getMessage() for r in caplog.records)


def test_unknown_arguments_name_themselves_and_suggest():
    with pytest.raises(InvalidLlmArg) as info:
        build_claims({"max_batch_sise": 4}, ARGS, CPU)
    assert info.value.argument == "max_batch_sise"
    assert "max_batch_size" in info.value.suggestions
    assert "max_batch_sise" in str(info.value)
    with pytest.raises(InvalidLlmArg) as info:
        build_claims({"kv_cache_config": {"tokens_per_blok": 4}}, ARGS, CPU)
    assert info.value.argument == "kv_cache_config.tokens_per_blok"
    assert "kv_cache_config.tokens_per_block" in info.value.suggestions
    with pytest.raises(InvalidLlmArg, match="mapping"):
        build_claims({"kv_cache_config": 3}, ARGS, CPU)


def test_out_of_domain_values_raise_invalid_claim_naming_the_argument():
    with pytest.raises(InvalidClaim) as info:
        build_claims({"kv_cache_config": {"tokens_per_block": 0}}, ARGS, CPU)
    assert info.value.claim == "llm_args.kv_cache_config.tokens_per_block"
    assert "tokens_per_block" in str(info.value)
    with pytest.raises(InvalidClaim) as info:
        build_claims({"scheduler_config": {"capacity_scheduler_policy": "FASTEST"}}, ARGS, CPU)
    assert info.value.path == "scheduler_config.capacity_scheduler_policy"


def test_colliding_arguments_raise_a_conflict_naming_both():
    claims = build_claims({"streamingllm": True, "enable_chunked_prefill": True}, ARGS, CPU)
    with pytest.raises(ConflictError) as info:
        arbitrate(claims)
    names = set(info.value.conflicts[0].claims)
    assert names == {"llm_args.streamingllm", "llm_args.enable_chunked_prefill"}
    assert "llm_args.streamingllm" in info.value.report()


def test_per_layer_windows_and_enum_like_values():
    class Policy:
        value = "MAX_UTILIZATION"

    claims = _by_name(
        build_claims(
            {
                "kv_cache_config": {"max_attention_window": [64, 64]},
                "scheduler_config": {"capacity_scheduler_policy": Policy()},
                "dtype": torch.bfloat16,
            },
            ARGS,
            CPU,
        )
    )
    resolution = arbitrate(list(claims.values()))
    assert resolution.value("kv_cache_config.max_attention_window") == 64
    assert resolution.value("scheduler_config.capacity_scheduler_policy") == "MAX_UTILIZATION"
    assert resolution.value("build_config.dtype") == "bfloat16"
    with pytest.raises(InvalidLlmArg, match="equal"):
        build_claims({"kv_cache_config": {"max_attention_window": [64, 32]}}, ARGS, CPU)


def _solved(**llm_args):
    return arbitrate(build_claims(llm_args, ARGS, CPU)).config


def test_pool_is_bounded_by_max_tokens_or_by_the_memory_fraction():
    cpu = torch.device("cpu")
    per_token = 2 * 2 * 2 * 16 * 4  # K and V, layers, KV heads, head dim, float32
    config = _solved(kv_cache_config={"tokens_per_block": 16, "max_tokens": 100})
    size = size_pool(config, ARGS, cpu, free=1 << 30)
    assert (size.num_blocks, size.source) == (7, "max_tokens")  # ceil(100 / 16)
    config = _solved(kv_cache_config={"tokens_per_block": 16, "free_gpu_memory_fraction": 0.5})
    size = size_pool(config, ARGS, cpu, free=64 * per_token * 4)
    assert (size.num_blocks, size.source) == (8, "memory")  # half of 256 tokens
    config = _solved(
        kv_cache_config={"tokens_per_block": 16, "host_cache_size": 10 * 16 * per_token}
    )
    assert size_pool(config, ARGS, cpu, free=1 << 30).host_blocks == 10
    with pytest.raises(PoolTooSmall, match="free_gpu_memory_fraction"):
        size_pool(_solved(), ARGS, cpu, free=100)


def test_cpu_pool_is_capped_by_what_the_batch_can_hold():
    config = _solved(max_batch_size=2, max_seq_len=64, kv_cache_config={"tokens_per_block": 16})
    size = size_pool(config, ARGS, torch.device("cpu"), free=1 << 34)
    assert size.num_blocks * 16 <= 2 * (64 + 16)


def test_kv_spec_follows_the_solved_config_and_the_model_window():
    mistral = ModelArgs(**{**vars(ARGS), "architecture": "mistral", "sliding_window": 16})
    config = _solved(kv_cache_config={"tokens_per_block": 4, "max_tokens": 64})
    size = size_pool(config, mistral, torch.device("cpu"))
    spec = kv_spec(config, mistral, torch.device("cpu"), size)
    assert spec.max_attention_window == 16  # every layer slides: blocks can be released
    assert spec.tokens_per_block == 4 and spec.enable_block_reuse
    assert spec.dtype == torch.float32


def test_a_small_pool_shortens_max_seq_len_instead_of_windowing_attention():
    def solve(**llm_args):
        return arbitrate(build_claims(llm_args, ARGS, CPU)).config

    # 72 tokens of pool, 3 beams: each beam of a sequence gets 24 tokens at most.
    config = solve(max_beam_width=3, kv_cache_config={"tokens_per_block": 4, "max_tokens": 72})
    assert config.kv_cache_config.max_attention_window is None
    assert config.build_config.max_seq_len == 24
    config = solve(kv_cache_config={"max_tokens": 64})
    assert config.kv_cache_config.max_attention_window is None
    assert config.build_config.max_seq_len == 64
    # A window the user asks for is kept, and then the model's full length fits.
    config = solve(kv_cache_config={"max_tokens": 64, "max_attention_window": 32})
    assert config.kv_cache_config.max_attention_window == 32
    assert config.build_config.max_seq_len == 256
    claims = _by_name(build_claims({"streamingllm": True}, ARGS, CPU))
    assert "default.full_attention" not in claims


def test_arguments_go_through_the_dialect_and_unimplemented_ones_are_refused():
    # every unknown argument is named at once, with the dialect's close matches
    with pytest.raises(InvalidLlmArg) as info:
        build_claims({"max_batch_sise": 4, "max_seq_lenn": 8}, ARGS, CPU)
    assert "max_batch_sise" in str(info.value) and "max_seq_lenn" in str(info.value)
    # LLM-API fields the runtime does not implement: refused, never silently ignored
    for args, argument in (
        ({"enable_attention_dp": True}, "enable_attention_dp"),
        ({"skip_tokenizer_init": True}, "skip_tokenizer_init"),
        (
            {"kv_cache_config": {"cross_kv_cache_fraction": 0.5}},
            "kv_cache_config.cross_kv_cache_fraction",
        ),
    ):
        with pytest.raises(InvalidLlmArg) as info:
            build_claims(args, ARGS, CPU)
        assert info.value.argument == argument
        assert "not implemented" in str(info.value) or "does not implement" in str(info.value)
    # the claims are the dialect's own: same names and option paths as `arbiter check`
    from arbiter.dialects import trtllm

    given = {"max_batch_size": 4, "kv_cache_config": {"tokens_per_block": 16}}
    ours = {c.name: c.expr.paths() for c in build_claims(given, ARGS, CPU)}
    theirs = {c.name: c.expr.paths() for c in trtllm.read(given, defaults=False).claims}
    assert {n: p for n, p in ours.items() if n.startswith("llm_args.")} == {
        n: p for n, p in theirs.items() if n.startswith("llm_args.")
    }
