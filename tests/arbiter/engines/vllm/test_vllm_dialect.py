"""The vLLM dialect: reading `vllm serve` arguments, vLLM's derived defaults, write-back,
and check_vllm's verdicts (accept / adjust / reject, never an exception)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.dialects import machine_claims
from arbiter.dialects.surface import load_surface
from arbiter.engines.vllm.defaults import (
    Tier,
    batch_defaults,
    batch_tier,
    cudagraph_ceiling,
    cudagraph_ladder,
)
from arbiter.engines.vllm.fields import VllmArgErrors, human_int, read_args
from arbiter.engines.vllm.native import check_vllm, read, write
from arbiter.engines.vllm.serve import parse
from arbiter.solve import arbitrate

ROOT = Path(__file__).resolve().parents[4]
LLAMA = ROOT / "tests/fixtures/models/llama-3.1-8b.json"
BUDGET = "build_config.max_num_tokens"
SEQS = "build_config.max_batch_size"
MACHINE = machine_claims(LLAMA, "4xH100")


def values(parsed):
    return {k: v for k, (_, v) in parsed.native.reading.values.items()}


# ---------------------------------------------------------------------------- reading
def test_every_spelling_vllm_accepts_names_the_same_field():
    for key in ("max-num-seqs", "max_num_seqs", "--max-num-seqs"):
        assert values(read({key: 64}))["max_num_seqs"] == 64
    assert values(read({"tp": 2}))["tensor_parallel_size"] == 2


def test_negations_and_false_booleans_follow_vllms_config_file():
    assert values(read({"no-enable-prefix-caching": True}))["enable_prefix_caching"] is False
    assert values(read({"enable-prefix-caching": False}))["enable_prefix_caching"] is False
    # a boolean without a --no- flag: `key: false` is dropped, as vLLM's --config does
    assert "disable_log_stats" not in read({"disable-log-stats": False}).native.given


def test_human_readable_integers():
    assert human_int("10k") == 10_000 and human_int("4K") == 4096 and human_int("25.6k") == 25_600
    with pytest.raises(ValueError):
        human_int("1.5K")
    assert values(read({"max-num-batched-tokens": "4K"}))["max_num_batched_tokens"] == 4096
    assert "max_model_len" not in values(read({"max-model-len": "auto"}))


def test_all_unknown_keys_and_bad_values_are_named_at_once():
    with pytest.raises(VllmArgErrors) as err:
        read_args(
            {
                "max-num-batch-tokens": 1,
                "swap-space": 4,
                "max-lora-rank": 48,
                "gpu-memory-utilization": 0,
                "kv-cache-dtype": "int8",
                "quantization": "awqq",
            }
        )
    problems = {p.key: p for p in err.value.problems}
    assert len(problems) == 6
    assert set(err.value.unknown_keys) == {"max-num-batch-tokens", "swap-space"}
    assert "max-num-batched-tokens" in problems["max-num-batch-tokens"].suggestions
    assert "invalid choice" in problems["max-lora-rank"].reason
    text = str(err.value)
    assert all(key in text for key in problems)


def test_sub_configs_take_json_mappings_and_dotted_keys():
    spec = '{"method": "ngram", "num_speculative_tokens": 3}'
    got = values(read({"speculative-config": spec}))
    assert got["speculative_config.method"] == "NGram"
    assert got["speculative_config.num_speculative_tokens"] == 3
    # vLLM fills both lookup bounds with 5 when neither is given
    assert got["speculative_config.prompt_lookup_max"] == 5
    dotted = values(
        read(
            {"speculative-config.method": "eagle3", "speculative-config.num_speculative_tokens": 2}
        )
    )
    assert dotted["speculative_config.eagle3"] is True
    with pytest.raises(VllmArgErrors):
        read({"compilation-config": {"pass_config": {"enable_noop": True}}})


def test_the_command_line_wins_over_the_config_file(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("max-num-seqs: 64\nenable-prefix-caching: true\n")
    line = f"vllm serve meta-llama/Llama-3.1-8B --config {path} --max_num_seqs 32 -tp 2 --no-enable-prefix-caching"
    parsed = read(None, serve_args=line)
    got = values(parsed)
    assert got["max_num_seqs"] == 32 and got["tensor_parallel_size"] == 2
    assert got["enable_prefix_caching"] is False
    assert parsed.native.input["model"] == "meta-llama/Llama-3.1-8B"


def test_serve_args_lists_flags_and_equals():
    args = parse("--numa-bind --numa-bind-nodes 0 1 --max-model-len=8k -dcp 2").args
    assert args == {
        "numa-bind": True,
        "numa-bind-nodes": [0, 1],
        "max-model-len": "8k",
        "decode-context-parallel-size": 2,
    }


# ---------------------------------------------------------------------------- defaults
def _serve_rows(field: str):
    return [
        c
        for c in load_surface("vllm-0.33").derived[field].cases
        if c["when"]["usage_context"] == "OPENAI_API_SERVER"
    ]


@pytest.mark.parametrize("field", ["max_num_batched_tokens", "max_num_seqs"])
def test_device_tiers_agree_with_the_rows_vllm_computed(field):
    rows = _serve_rows(field)
    assert len(rows) >= 5
    for row in rows:
        when = row["when"]
        tier = batch_tier(when["memory_gib"] * 1024, when["device"])
        assert getattr(tier, field) == row["value"], when


def test_vllms_default_arithmetic():
    tier = Tier(8192, 1024, "H100")
    plain = batch_defaults(tier, max_model_len=131072, chunked_prefill=True)
    assert (plain.max_num_batched_tokens, plain.max_num_seqs) == (8192, 1024)
    unchunked = batch_defaults(tier, max_model_len=32768, chunked_prefill=False)
    assert unchunked.max_num_batched_tokens == 32768
    doubled = batch_defaults(tier, max_model_len=131072, chunked_prefill=True, throughput=True)
    assert (doubled.max_num_batched_tokens, doubled.max_num_seqs) == (16384, 2048)
    capped = batch_defaults(tier, max_model_len=4, chunked_prefill=True, seqs=16)
    assert capped.max_num_batched_tokens == 64  # max_num_seqs x max_model_len
    given = batch_defaults(tier, max_model_len=8192, chunked_prefill=True, budget=256)
    assert given.max_num_seqs == 256  # a default max_num_seqs is capped at the budget


def test_cuda_graph_ceiling_and_ladder():
    assert cudagraph_ceiling(enforce_eager=True, max_num_seqs=256, budget=8192) == 0
    assert cudagraph_ceiling(enforce_eager=False, max_num_seqs=1024, budget=8192) == 512
    assert cudagraph_ceiling(enforce_eager=False, max_num_seqs=1024, budget=8192, sm=100) == 1024
    assert cudagraph_ceiling(enforce_eager=False, max_num_seqs=64, budget=8192) == 128
    assert cudagraph_ceiling(enforce_eager=False, max_num_seqs=64, budget=100, given=2048) == 100
    ladder = cudagraph_ladder(512)
    assert ladder[:4] == [1, 2, 4, 8] and ladder[-1] == 512 and len(ladder) == 51
    assert 264 not in ladder and 272 in ladder  # steps of 16 from 256


def test_a100_gets_the_small_tier_and_the_verdict_says_so():
    v = check_vllm({}, model=LLAMA, device="A100-80GB")
    assert v.verdict == "accept"
    assert v.resolution.value(BUDGET) == 2048 and v.resolution.value(SEQS) == 256
    assert any("max_num_batched_tokens = 2048" in w and "A100" in w for w in v.warnings)
    h100 = check_vllm({}, model=LLAMA, device="H100")
    assert h100.resolution.value(BUDGET) == 8192 and h100.resolution.value(SEQS) == 1024


def test_without_chunked_prefill_the_default_budget_rises_to_the_model_length():
    v = check_vllm(
        {"enable-chunked-prefill": False, "max-model-len": 32768}, model=LLAMA, device="H100"
    )
    assert v.verdict == "accept" and v.resolution.value(BUDGET) == 32768
    given = check_vllm(
        {"enable-chunked-prefill": False, "max-model-len": 32768, "max-num-batched-tokens": 8192},
        model=LLAMA,
        device="H100",
    )
    assert given.verdict == "reject"
    assert "vllm.scheduler.budget-holds-model-len-without-chunking" in given.rules


def test_encoder_decoder_defaults_are_off_and_explicit_wishes_are_kept_or_adjusted():
    # vLLM 0.33.0's own verdicts (benchmarks/oracle_vllm.py on this config with
    # is_encoder_decoder): defaults off, explicit prefix caching kept, explicit chunked
    # prefill and a long-prefill threshold turned off (SchedulerConfig.__post_init__)
    model = {**json.loads(LLAMA.read_text()), "is_encoder_decoder": True}
    v = check_vllm({}, model=model, device="H100")
    assert v.verdict == "accept"
    assert v.resolution.value("kv_cache_config.enable_block_reuse") is False
    assert any("enable_prefix_caching = False" in w for w in v.warnings)
    kept = check_vllm({"enable-prefix-caching": True}, model=model, device="H100")
    assert kept.verdict == "accept", kept.reasons
    assert kept.resolution.value("kv_cache_config.enable_block_reuse") is True
    fits = {"max-model-len": 8192, "max-num-batched-tokens": 8192}
    chunked = check_vllm({"enable-chunked-prefill": True, **fits}, model=model, device="H100")
    assert chunked.verdict == "adjust"
    assert chunked.changes == (
        "enable_chunked_prefill: True -> False, because vLLM turns it off for an"
        " encoder-decoder model (SchedulerConfig.__post_init__)",
    )
    assert chunked.config == {"enable-chunked-prefill": False, **fits}
    assert chunked.resolution.value("scheduler_config.enable_chunked_context") is False
    threshold = check_vllm(
        {"long-prefill-token-threshold": 1024, **fits}, model=model, device="H100"
    )
    assert threshold.verdict == "adjust" and threshold.config["long-prefill-token-threshold"] == 0
    # chunking turned off, the budget must hold max_model_len: vLLM then refuses
    short = {"enable-chunked-prefill": True, "max-model-len": 8192, "max-num-batched-tokens": 2048}
    refused = check_vllm(short, model=model, device="H100")
    assert refused.verdict == "reject"
    assert "vllm.scheduler.budget-holds-model-len-without-chunking" in refused.rules
    # a decoder-only model keeps what was written
    plain = check_vllm({"enable-chunked-prefill": True, **fits}, model=LLAMA, device="H100")
    assert plain.verdict == "accept"


# ---------------------------------------------------------------------------- adjustments
def test_a_capture_ceiling_above_the_budget_is_adjusted():
    v = check_vllm(
        {"max-cudagraph-capture-size": 2048, "max-num-batched-tokens": 1024, "max-num-seqs": 128},
        model=LLAMA,
        device="H100",
    )
    assert v.verdict == "adjust"
    assert v.changes == (
        "max_cudagraph_capture_size: 2048 -> 1024, because the capture ceiling is capped at"
        " max_num_batched_tokens (VllmConfig._set_cudagraph_sizes)",
    )
    assert "vllm.cudagraph.ceiling-within-budget" in v.resolution.overridden_defaults


@pytest.mark.parametrize(
    ("config", "written"),
    [
        (
            {
                "max-num-batched-tokens": 1024,
                "compilation-config": {"max_cudagraph_capture_size": 2048},
            },
            {
                "max-num-batched-tokens": 1024,
                "compilation-config": {"max_cudagraph_capture_size": 1024},
            },
        ),
        (
            {"max-num-batched-tokens": 1024, "compilation-config.max_cudagraph_capture_size": 2048},
            {"max-num-batched-tokens": 1024, "compilation-config.max_cudagraph_capture_size": 1024},
        ),
        (
            {"enforce-eager": True, "compilation-config": '{"max_cudagraph_capture_size":64}'},
            {"enforce-eager": True},
        ),
        (
            {
                "enforce-eager": True,
                "compilation-config": {"max_cudagraph_capture_size": 64, "cudagraph_mode": "NONE"},
            },
            {"enforce-eager": True, "compilation-config": {"cudagraph_mode": "NONE"}},
        ),
    ],
    ids=["capped", "capped-dotted", "eager-json", "eager-keeps-the-rest"],
)
def test_a_rewritten_capture_ceiling_is_written_back_as_vllm_uses_it(config, written):
    """Found by the fixed-point property test: the adjustment was reported but the config
    was written back unchanged, so checking it again gave the same adjustment."""
    v = check_vllm(config, model=LLAMA, device="H100")
    assert v.verdict == "adjust" and "max_cudagraph_capture_size" in v.changes[0]
    assert v.config == written
    again = check_vllm(v.config, model=LLAMA, device="H100")
    assert again.verdict == "accept" and again.config == written


def test_enforce_eager_ignores_a_capture_ceiling():
    v = check_vllm(
        {"enforce-eager": True, "compilation-config": {"max_cudagraph_capture_size": 64}},
        model=LLAMA,
        device="H100",
    )
    assert v.verdict == "adjust" and "enforce_eager" in v.changes[0]


# ---------------------------------------------------------------------------- write-back
CONFIGS = [
    {"max-num-seqs": 128, "no-enable-prefix-caching": True, "kv-cache-dtype": "fp8_e5m2"},
    {"max_num_batched_tokens": "4K", "gpu-memory-utilization": 0.85, "block-size": 32},
    {
        "speculative-config": '{"method":"ngram","num_speculative_tokens":3}',
        "enable-lora": True,
        "max-num-batched-tokens": 8192,
        "served-model-name": "mine",
    },
    {
        "compilation-config": '{"pass_config":{"fuse_allreduce_rms":true}}',
        "tensor-parallel-size": 4,
    },
]


@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
def test_read_write_read_is_a_fixed_point(config):
    first = read(config, device="H100", model=LLAMA)
    resolution = arbitrate([*first.claims, *MACHINE], profile=first.profile)
    written = write(resolution, first)
    assert written == config  # the user's spelling and values, every field kept
    again = read(written, device="H100", model=LLAMA)
    assert values(again) == values(first)
    assert write(arbitrate([*again.claims, *MACHINE], profile=again.profile), again) == written


def test_write_without_an_input_gives_the_fields_off_the_profile_defaults():
    parsed = read({"max-num-seqs": 64, "enable-prefix-caching": False})
    written = write(arbitrate(parsed.claims, profile="vllm-0.33"))
    assert written["max-num-seqs"] == 64 and written["enable-prefix-caching"] is False


def test_carried_fields_are_listed_with_a_reason():
    v = check_vllm({"served-model-name": "x", "max-num-seqs": 8}, model=LLAMA, device="H100")
    assert v.config["served-model-name"] == "x"
    assert "served_model_name" in v.not_arbitrated


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "config, kwargs",
    [
        ([1, 2], {}),
        ("/nonexistent/serve.yaml", {}),
        ({"max-num-seqs": 4}, {"device": "H999"}),
        ({"max-num-seqs": 4}, {"model": {"foo": 1}}),
        ({"max-num-seqs": 4}, {"profile": "trtllm-1.2"}),
        ({"max-num-seqs": 4}, {"profile": "nope"}),
        (None, {"serve_args": "--max-num-seqs 'x"}),
        ({3: 4}, {}),
    ],
)
def test_bad_input_is_a_reject_with_a_reason_never_an_exception(config, kwargs):
    v = check_vllm(config, **kwargs)
    assert v.verdict == "reject" and v.reasons and v.reasons[0]


def test_quantization_against_the_checkpoint():
    fp8 = {
        **json.loads(LLAMA.read_text()),
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    }
    assert check_vllm({"quantization": "fp8"}, model=fp8, device="H100").verdict == "accept"
    assert check_vllm({"quantization": "gptq"}, model=fp8, device="H100").verdict == "reject"
    online = check_vllm({"quantization": "fp8"}, model=LLAMA, device="H100")
    assert online.verdict == "accept"
    assert online.resolution.value("quant_config.quant_algo") == "FP8"
    awq = check_vllm({"quantization": "awq"}, model=LLAMA, device="H100")
    assert awq.verdict == "reject"
    assert "vllm.quant.offline-needs-checkpoint-config" in awq.rules


def test_vllm_refuses_rather_than_rederive_its_default_budget():
    spec = {"method": "ngram", "num_speculative_tokens": 8}
    v = check_vllm({"enable-lora": True, "speculative-config": spec}, model=LLAMA, device="H100")
    assert v.verdict == "reject"
    assert "vllm.lora.budget-holds-speculative-tokens" in v.rules
    assert "would hold" in v.reasons[0]
    ok = check_vllm(
        {"enable-lora": True, "speculative-config": spec, "max-num-seqs": 512},
        model=LLAMA,
        device="H100",
    )
    assert ok.verdict == "accept"  # 512 x 9 = 4608 <= 8192


def test_values_outside_the_option_domains_are_named_at_once():
    v = check_vllm(
        {
            "tensor-parallel-size": 0,
            "max-num-seqs": 0,
            "speculative-config": {"method": "ngram", "num_speculative_tokens": -1},
        },
        model=LLAMA,
        device="H100",
    )
    assert v.verdict == "reject" and len(v.reasons) == 3
    assert v.reasons[2].startswith("speculative-config.num_speculative_tokens")
