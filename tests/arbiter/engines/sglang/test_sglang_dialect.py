"""The SGLang dialect: reading YAML and launch command lines, bad input, derived defaults,
adjustments with their rules, write-back and the read -> write -> read fixed point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arbiter.dialects._base import DialectError
from arbiter.engines.sglang import solve as sglang_solve
from arbiter.engines.sglang.native import check_sglang, read, write
from arbiter.engines.sglang.serve import SglangArgsError, read_arguments

ROOT = Path(__file__).resolve().parents[4]
LLAMA = ROOT / "examples" / "models" / "llama-3-8b.json"


def test_every_unknown_key_and_bad_value_at_once():
    verdict = check_sglang(
        {"mem-frac-static": 0.8, "tp_sise": 2, "page-size": "big", "schedule-policy": "fastest"}
    )
    assert verdict.verdict == "reject"
    assert set(verdict.unknown_keys) == {"mem-frac-static", "tp_sise"}
    assert len(verdict.reasons) == 4
    text = "\n".join(verdict.reasons)
    # each suggestion spelled as its key was (D-L7): dashed for a dashed key
    assert "'mem-fraction-static'" in text and "'tp_size'" in text
    assert "page-size: expected an integer" in text
    assert "schedule-policy: not one of" in text and "lpm" in text


def test_unknown_keys_raise_one_typed_error():
    with pytest.raises(SglangArgsError) as info:
        read({"foo": 1, "bar": 2})
    assert info.value.unknown_keys == ("foo", "bar")
    assert "2 problem(s)" in str(info.value)


def test_deprecated_flag_refused_in_yaml_accepted_on_the_command_line():
    refused = check_sglang({"enable-dp-attention": True, "dp-size": 2, "tp-size": 2}, gpus=2)
    assert refused.verdict == "reject"
    assert "DeprecatedStoreTrueAction" in refused.reasons[0]
    line = "python -m sglang.launch_server --model-path m --tp-size 2 --dp 2 --enable-dp-attention"
    args = read_arguments(None, line)
    assert args.values["attn_dp_size"] == 2 and args.values["dp_size"] == 1
    verdict = check_sglang(None, serve_args=line, gpus=2)
    assert verdict.verdict == "accept"
    assert any("--attn-dp-size 2" in c for c in verdict.changes)


def test_command_line_spellings_lists_switches_and_precedence():
    line = (
        "sglang serve --model-path /m --tensor-parallel-size 2 --enable-lora "
        "--lora-target-modules q_proj v_proj --chunked-prefill-size=4096 --page-size 16"
    )
    args = read_arguments({"tp-size": 4, "page_size": 32}, line)
    assert args.values["tp_size"] == 2  # the command line wins over the YAML
    assert args.values["page_size"] == 16
    assert args.values["enable_lora"] is True
    assert args.values["lora_target_modules"] == ["q_proj", "v_proj"]
    assert args.values["chunked_prefill_size"] == 4096
    assert args.given["tensor-parallel-size"] == 2 and "tp-size" not in args.given


def test_command_line_errors_are_named():
    with pytest.raises(SglangArgsError) as info:
        read_arguments(None, "python -m sglang.launch_server --tp-size 2 4 --nope 3 --page-size")
    keys = [p.key for p in info.value.problems]
    assert keys == ["--tp-size", "--page-size", "--nope"] or set(keys) == {
        "--tp-size",
        "--page-size",
        "--nope",
    }


def test_abbreviations_as_argparse_takes_them():
    args = read_arguments({"mem-fraction-sta": 0.8}, None)
    assert args.values == {"mem_fraction_static": 0.8}
    assert "allow_abbrev" in args.warnings[0]
    verdict = check_sglang({"cuda-graph-max-bs": 160})
    assert verdict.verdict == "reject"
    assert (
        "ambiguous option" in verdict.reasons[0]
        and "--cuda-graph-max-bs-decode" in verdict.reasons[0]
    )


def test_config_file_named_on_the_command_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("page-size: 64\nattention-backend: fa3\n")
    args = read_arguments(None, f"python -m sglang.launch_server --config {path} --page-size 128")
    assert args.values == {"page_size": 128, "attention_backend": "fa3"}


def test_wrong_profile_is_a_typed_error():
    with pytest.raises(DialectError):
        read({}, profile="trtllm-1.2")
    assert check_sglang({}, profile="nope").verdict == "reject"


def test_unset_fields_are_derived_not_adjusted():
    verdict = check_sglang({"speculative-algorithm": "EAGLE"}, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "accept"
    text = "\n".join(verdict.warnings)
    assert "max_running_requests = 48" in text
    assert "speculative_num_steps = 5" in text  # Llama: (5, 4, 8)
    assert "speculative_num_draft_tokens = 8" in text
    assert verdict.resolution.values["build_config.max_batch_size"] == 48


def test_eagle_steps_unset_with_topk_given_is_refused():
    verdict = check_sglang({"speculative-algorithm": "EAGLE", "speculative-eagle-topk": 4})
    assert verdict.verdict == "reject"
    assert "_handle_eagle_family" in verdict.reasons[0]


def test_explicit_running_requests_override_the_default_rule():
    verdict = check_sglang(
        {"speculative-algorithm": "NGRAM", "max-running-requests": 256}, model=LLAMA
    )
    assert verdict.verdict == "accept"
    assert verdict.resolution.values["build_config.max_batch_size"] == 256
    assert "sglang.spec-max-running-requests" in verdict.resolution.overridden_defaults


def test_ngram_rewrites_an_explicit_topk_and_mixed_chunk():
    verdict = check_sglang(
        {
            "speculative-algorithm": "NGRAM",
            "speculative-eagle-topk": 2,
            "enable-mixed-chunk": True,
        },
        model=LLAMA,
    )
    assert verdict.verdict == "adjust"
    text = "\n".join(verdict.changes)
    assert "speculative-eagle-topk: 2 -> 10" in text
    assert "enable-mixed-chunk: True -> False" in text and "sglang.spec-mixed-chunk-off" in text


def test_backend_forces_the_page_size():
    verdict = check_sglang({"attention-backend": "trtllm_mha", "page-size": 8}, model=LLAMA)
    assert verdict.verdict == "adjust"
    assert "page-size: 8 -> 64" in verdict.changes[0]
    assert "sglang.backend-page-size" in verdict.changes[0]
    kept = check_sglang({"attention-backend": "trtllm_mha", "page-size": 32}, model=LLAMA)
    assert kept.verdict == "accept"


def test_conflicts_name_their_rules():
    verdict = check_sglang(
        {"speculative-algorithm": "STANDALONE", "enable-lora": True}, model=LLAMA
    )
    assert verdict.verdict == "reject"
    assert "sglang.lora-speculative" in verdict.rules
    verdict = check_sglang({"pp-size": 2, "speculative-algorithm": "NGRAM"}, gpus=2)
    assert "sglang.pp-speculative-eagle-only" in verdict.rules


def test_gpus_must_hold_the_layout():
    """tp x pp x dp replicas beyond the GPUs: the rule decides (a conflict naming it and
    the claims it joins), not a refusal before the solver."""
    verdict = check_sglang({"tp-size": 2, "dp-size": 2}, gpus=2)
    assert verdict.verdict == "reject"
    assert verdict.rules == ("machine.sglang-dp-replicas-fit-devices",)
    assert verdict.conflict is not None
    (conflict,) = verdict.conflict.conflicts
    assert set(conflict.claims) == {"sglang.tp_size", "sglang.dp_size"}
    assert check_sglang({"tp-size": 2, "dp-size": 2}, gpus=4).verdict == "accept"


def test_nnodes_multiplies_the_gpus_per_node():
    """`--gpus` counts the GPUs of one node; SGLang's `nnodes` says how many nodes the
    launch spans (SGLang 0.5.23 accepts tp 16 over 2 nodes: corpus case two-nodes-tp16)."""
    two = {"tp-size": 16, "nnodes": 2}
    assert check_sglang(two, model=LLAMA, device="H100-80GB", gpus=8).verdict == "accept"
    assert check_sglang(two, model=LLAMA, gpus=8).verdict == "accept"
    short = check_sglang(two, model=LLAMA, device="H100-80GB", gpus=4)
    assert short.rules == ("machine.parallel-fits-devices",)
    uneven = check_sglang({"pp-size": 3, "nnodes": 2}, model=LLAMA, gpus=4)
    assert uneven.rules == ("sglang.ranks-divide-over-nodes",)
    replicas = check_sglang({"tp-size": 8, "dp-size": 2, "nnodes": 2}, model=LLAMA, gpus=8)
    assert replicas.rules == ("sglang.dp-replicas-single-node",)
    assert check_sglang({"nnodes": 2, "tp-size": 8, "attn-dp-size": 2}, gpus=4).verdict == "accept"


def test_carried_fields_are_written_back_unchanged():
    config = {
        "model-path": "meta-llama/Llama-3.1-8B-Instruct",
        "tp-size": 2,
        "cuda-graph-config": {"decode": {"max_bs": 64}},
        "stream-interval": 4,
        "kv-cache-dtype": "mxfp8",
    }
    verdict = check_sglang(config, device="B200", gpus=2)
    assert verdict.verdict == "accept"
    assert verdict.config == config
    # mxfp8 has no shared KV precision, but its written value is arbitrated
    # (sglang.mxfp8-kv-needs-blackwell): it is not carried
    assert set(verdict.not_arbitrated) == {"model-path", "cuda-graph-config", "stream-interval"}
    hopper = check_sglang(config, device="H100-80GB", gpus=2)
    assert hopper.verdict == "reject"
    assert hopper.rules == ("sglang.mxfp8-kv-needs-blackwell",)


@pytest.mark.parametrize(
    "config",
    [
        {"tp-size": 2, "pp-size": 2, "disable-overlap-schedule": False},
        {
            "speculative_algorithm": "EAGLE",
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 8,
        },
        {"attention-backend": "trtllm_mha", "page-size": 8, "context-length": 8192},
        {"disaggregation-mode": "decode", "disable-radix-cache": False},
    ],
)
def test_read_write_read_is_a_fixed_point(config):
    first = check_sglang(config, model=LLAMA, gpus=4)
    assert first.verdict in ("accept", "adjust")
    second = check_sglang(first.config, model=LLAMA, gpus=4)
    assert second.config == first.config
    assert write(second.resolution, read(first.config)) == first.config
    keys = {k.replace("-", "_") for k in config}
    assert {k.replace("-", "_") for k in first.config} == keys


def test_write_without_input_names_what_a_solve_changed():
    from arbiter.claims import func
    from arbiter.solve import arbitrate

    resolution = arbitrate(
        [func("radix off", {"sglang_config.disable_radix_cache": True})], profile="sglang-0.5"
    )
    assert write(resolution) == {"disable-radix-cache": True}


def test_yaml_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tp-size: [1, 2\n")
    verdict = check_sglang(path)
    assert verdict.verdict == "reject" and str(path) in verdict.reasons[0]
    path.write_text(yaml.safe_dump({"tp-size": 2, "no-such-flag": 1}))
    verdict = check_sglang(path, gpus=2)
    assert verdict.unknown_keys == ("no-such-flag",)


def test_solve_is_the_same_reading_as_check():
    resolution, parsed = sglang_solve({"tp-size": 2, "attn-dp-size": 2}, gpus=2)
    assert resolution.values["build_config.max_num_tokens"] == 4096
    assert parsed.native.adjustments == []  # the chunk was not written: derived, not adjusted


def test_torch_native_runs_without_cuda_graphs():
    verdict = check_sglang({"attention-backend": "torch_native"}, model=LLAMA)
    assert verdict.verdict == "accept"
    assert verdict.resolution.values["cuda_graph_config.enabled"] is False
    assert any("without CUDA graphs" in w for w in verdict.warnings)


def test_the_default_attention_backend_is_derived_for_the_gpu():
    """An unset attention_backend is what SGLang picks (get_default_attn_backend): fa3 on
    an H100, trtllm_mha on a B200, whose pages then hold 64 tokens; a written backend
    overrides the default rule."""
    page = "kv_cache_config.tokens_per_block"
    hopper = check_sglang({}, model=LLAMA, device="H100-80GB")
    assert any("attention_backend = 'fa3'" in w for w in hopper.warnings), hopper.warnings
    assert hopper.resolution is not None and hopper.resolution.values[page] == 1
    blackwell = check_sglang({}, model=LLAMA, device="B200")
    assert any("attention_backend = 'trtllm_mha'" in w for w in blackwell.warnings)
    assert blackwell.resolution is not None and blackwell.resolution.values[page] == 64
    assert blackwell.config == {}  # SGLang derives it again: nothing is written back
    written = check_sglang({"attention-backend": "flashinfer"}, model=LLAMA, device="B200")
    assert written.verdict == "accept"
    assert written.resolution is not None and written.resolution.values[page] == 1
    assert "sglang.default-backend-mha" in written.resolution.overridden_defaults


def test_fa3_with_an_fp8_e5m2_kv_cache_runs_triton():
    config = {"attention-backend": "fa3", "kv-cache-dtype": "fp8_e5m2"}
    verdict = check_sglang(config, model=LLAMA, device="H100-80GB")
    assert verdict.verdict == "adjust"
    assert verdict.changes[0].startswith("attention-backend: 'fa3' -> 'triton'")
    assert "sglang.fa3-fp8-e5m2-runs-triton" in verdict.changes[0]
    assert verdict.config == config  # written back as written: SGLang falls back again
    e4m3 = check_sglang({**config, "kv-cache-dtype": "fp8_e4m3"}, model=LLAMA, device="H100-80GB")
    assert e4m3.verdict == "accept"


@pytest.mark.parametrize(
    ("config", "device", "expected"),
    [
        # unset: native NVFP4 prefill (trtllm_mha) on SM100, an FP8 workspace elsewhere
        ({}, "B200", {"prefill_attention_backend": "trtllm_mha"}),
        ({}, "RTX-PRO-6000", {"prefill_attention_backend": "flashinfer"}),
        # the backend written names the prefill: flashinfer -> FP8 workspace
        ({"attention-backend": "flashinfer"}, "B200", {"prefill_attention_backend": "flashinfer"}),
        ({"prefill-attention-backend": "flashinfer"}, "B200", {}),
        # a backend that is neither: nothing declared (sglang.nvfp4-kv-phases refuses it)
        ({"attention-backend": "fa4"}, "B200", None),
    ],
)
def test_nvfp4_phases_are_the_ones_sglang_declares(config, device, expected):
    """kv_cache_hook.handle_nvfp4_prefill_kv_dequant_dtype: decode on trtllm_mha, prefill
    by the backend written, else by the GPU; only the phases left unset are declared."""
    from arbiter.engines.sglang.defaults import nvfp4_phases
    from constraints.facts.devices import DeviceSpec

    args = read_arguments({"kv-cache-dtype": "nvfp4", **config})
    got = nvfp4_phases(args, None, DeviceSpec.named(device))
    if expected is None:
        assert got == {}
        return
    want = {"sglang_config." + k: v for k, v in expected.items()}
    if "decode-attention-backend" not in config:
        want["sglang_config.decode_attention_backend"] = "trtllm_mha"
    assert got == want
    assert nvfp4_phases(read_arguments(config or {"tp-size": 1}), None, None) == {}
