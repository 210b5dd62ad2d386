"""The TensorRT-LLM 1.x surface: real config keys read, carried fields written back
unchanged, write-back as a fixed point, trtllm-serve arguments, prebuilt-engine limits,
and check_trtllm() verdicts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arbiter import arbitrate, setup
from arbiter.cli import app
from arbiter.engines.trtllm import native as trtllm
from arbiter.engines.trtllm import serve as trtllm_serve
from arbiter.engines.trtllm.fields import catalogue

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
MOE = "deepseek-ai/DeepSeek-V3"  # the catalog's: a check names its model
LLAMA = json.loads((EXAMPLES / "models" / "llama-3-8b.json").read_text())

# re-authored in the shape of TensorRT-LLM's curated serving YAMLs (examples/configs):
# each carries keys the schema refused before (issue 10)
DEEPSEEK_LIKE = {
    "cuda_graph_config": {"enable_padding": True, "max_batch_size": 128},
    "enable_attention_dp": True,
    "attention_dp_config": {"enable_balance": True, "batching_wait_iters": 0, "timeout_iters": 60},
    "moe_expert_parallel_size": 8,
    "tensor_parallel_size": 8,
    "moe_config": {"backend": "TRTLLM"},
    "print_iter_log": True,
    "stream_interval": 10,
    "num_postprocess_workers": 4,
    "enable_autotuner": False,
    "kv_cache_config": {
        "dtype": "fp8",
        "enable_block_reuse": False,
        "free_gpu_memory_fraction": 0.8,
    },
    "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 3},
}
DISAGG_CONTEXT = {
    "disable_overlap_scheduler": True,
    "cache_transceiver_config": {"backend": "UCX", "max_tokens_in_buffer": 8192},
    "max_num_tokens": 8192,
    "kv_cache_config": {"free_gpu_memory_fraction": 0.85},
}
NGRAM = {
    "speculative_config": {
        "decoding_type": "NGram",
        "max_draft_len": 4,
        "max_matching_ngram_size": 3,
        "is_keep_all": True,
    },
    "torch_compile_config": {"enable_piecewise_cuda_graph": True, "capture_num_tokens": [8, 64]},
    "cuda_graph_config": {"batch_sizes": [1, 2, 4, 8]},
}
REAL = {"deepseek": DEEPSEEK_LIKE, "disagg": DISAGG_CONTEXT, "ngram": NGRAM}


@pytest.mark.parametrize("name", list(REAL))
def test_real_configs_are_read_and_carried_fields_come_back_unchanged(name):
    config = REAL[name]
    verdict = trtllm.check_trtllm(config, gpus=8)
    assert verdict.verdict in ("accept", "adjust"), verdict.reasons
    out = verdict.config
    for key, reason in verdict.not_arbitrated.items():
        assert reason
        node_in, node_out = config, out
        for part in key.split("."):
            node_in, node_out = node_in[part], node_out[part]
        assert node_out == node_in, key  # written back exactly as given
    assert "kv_cache_free_gpu_memory_fraction" not in out or name != "deepseek"


def test_not_arbitrated_lists_the_fields_no_rule_reads():
    carried = trtllm.check_trtllm(DEEPSEEK_LIKE, gpus=8).not_arbitrated
    assert {"print_iter_log", "stream_interval", "num_postprocess_workers"} <= set(carried)
    assert {"enable_autotuner", "moe_config"}.isdisjoint(set(carried) - {"enable_autotuner"})
    ngram = trtllm.check_trtllm(NGRAM).not_arbitrated
    assert "speculative_config.is_keep_all" in ngram and "torch_compile_config" in ngram


def test_serve_flag_name_of_the_memory_fraction_is_no_yaml_key():
    # the YAML is merged into the LLM arguments as is (llm_utils.py,
    # update_llm_args_with_extra_dict): trtllm-serve's flag name is an unknown field there
    verdict = trtllm.check_trtllm({"kv_cache_free_gpu_memory_fraction": 0.8})
    assert verdict.verdict == "reject"
    assert verdict.unknown_keys == ("kv_cache_free_gpu_memory_fraction",)
    assert "did you mean 'kv_cache_config.free_gpu_memory_fraction'" in verdict.reasons[0]
    flag = trtllm.read(serve_args="--kv_cache_free_gpu_memory_fraction 0.8")
    resolution = arbitrate(flag.claims, profile=flag.profile)
    assert resolution.value("kv_cache_config.free_gpu_memory_fraction") == 0.8


def test_suffix_automaton_is_no_decoding_type_of_1_2():
    verdict = trtllm.check_trtllm(
        {"speculative_config": {"decoding_type": "SA", "max_draft_len": 4}}
    )
    assert verdict.verdict == "reject"
    assert "speculative_config.decoding_type" in verdict.reasons[0]
    assert "TensorRT-LLM 1.2" in verdict.reasons[0]


EIGHT_GPUS = setup("gpus", {"device.count": 8})  # the GPU count is a fact: name it


def _round(config, **kw):
    parsed = trtllm.read(copy.deepcopy(config), **kw)
    resolution = arbitrate([*parsed.claims, EIGHT_GPUS], profile=parsed.profile)
    return trtllm.write(resolution, parsed), resolution


@pytest.mark.parametrize(
    "config",
    [
        DEEPSEEK_LIKE,
        DISAGG_CONTEXT,
        NGRAM,
        {"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3}},
        {
            "backend": "tensorrt",
            "speculative_config": {"decoding_type": "Medusa", "max_draft_len": 4},
        },
        {"kv_cache_config": {"max_attention_window": [4096, 8192], "enable_block_reuse": True}},
        {"cuda_graph_config": None, "enable_chunked_prefill": True},
    ],
    ids=["deepseek", "disagg", "ngram", "eagle3", "medusa-trt", "windows", "no-graphs"],
)
def test_read_write_read_is_a_fixed_point(config):
    out, first = _round(config)
    again, second = _round(out)
    assert again == out
    assert second.values == first.values


KV = st.fixed_dictionaries(
    {},
    optional={
        "enable_block_reuse": st.booleans(),
        "tokens_per_block": st.sampled_from([16, 32, 64]),
        "free_gpu_memory_fraction": st.sampled_from([0.5, 0.8, 0.9]),
    },
)
SPEC = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"decoding_type": st.just("MTP"), "num_nextn_predict_layers": st.integers(1, 3)}
    ),
    st.fixed_dictionaries({"decoding_type": st.just("NGram"), "max_draft_len": st.integers(1, 6)}),
    st.fixed_dictionaries({"decoding_type": st.just("Eagle3"), "max_draft_len": st.integers(1, 4)}),
)
CONFIGS = st.fixed_dictionaries(
    {},
    optional={
        "max_batch_size": st.sampled_from([8, 64, 256]),
        "max_num_tokens": st.sampled_from([2048, 8192]),
        "enable_chunked_prefill": st.booleans(),
        "kv_cache_config": KV,
        "cuda_graph_config": st.one_of(
            st.none(), st.fixed_dictionaries({}, optional={"enable_padding": st.booleans()})
        ),
        "print_iter_log": st.booleans(),
        "speculative_config": SPEC,
    },
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONFIGS)
def test_write_back_is_a_fixed_point_for_generated_configs(config):
    verdict = trtllm.check_trtllm(config)
    assume(verdict.verdict != "reject")
    again = trtllm.check_trtllm(verdict.config)
    assert again.verdict != "reject", again.reasons
    assert again.config == verdict.config
    assert again.resolution.values == verdict.resolution.values


def test_write_back_emits_only_fields_of_the_decoding_type():
    out, _ = _round({"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3}})
    eagle3 = catalogue("1.2").fields("Eagle3DecodingConfig")
    assert set(out["speculative_config"]) <= set(eagle3)
    assert "num_medusa_heads" not in out["speculative_config"]
    # a PyTorch-backend config gets no TensorRT build fields back
    assert "build_config" not in out and "quant_config" not in out


# ------------------------------------------------------------------ trtllm-serve
def test_serve_args_parse_the_real_option_names():
    serve = trtllm_serve.parse(
        "trtllm-serve /models/ds --tp_size 8 --ep_size 4 --pp_size=1 "
        "--kv_cache_free_gpu_memory_fraction 0.75 --max_batch_size 64 --trust_remote_code "
        "--backend pytorch --host 0.0.0.0 --port 8001 --config extra.yaml"
    )
    assert serve.model == "/models/ds" and serve.config == "extra.yaml"
    assert serve.args == {
        "tensor_parallel_size": 8,
        "moe_expert_parallel_size": 4,
        "pipeline_parallel_size": 1,
        "kv_cache_config": {"free_gpu_memory_fraction": 0.75},
        "max_batch_size": 64,
        "trust_remote_code": True,
        "backend": "pytorch",
    }
    assert serve.server == {"host": "0.0.0.0", "port": 8001}


def test_bad_serve_args_are_all_named():
    with pytest.raises(trtllm_serve.ServeArgsError) as err:
        trtllm_serve.parse("--tp-size 2 --max_batch_size lots --kv_cache_fraction 0.5")
    paths = [p.key for p in err.value.problems]
    assert paths == ["--tp-size", "--max_batch_size", "--kv_cache_fraction"]
    assert "--tp_size" in err.value.problems[0].suggestions


def test_the_yaml_wins_over_the_command_line_and_kv_cache_config_merges_from_1_2():
    cli = trtllm_serve.parse("--max_batch_size 64 --kv_cache_free_gpu_memory_fraction 0.7").args
    yaml_args = {"max_batch_size": 32, "kv_cache_config": {"enable_block_reuse": False}}
    merged = trtllm_serve.merge(cli, yaml_args, "1.2")
    assert merged["max_batch_size"] == 32
    assert merged["kv_cache_config"] == {
        "free_gpu_memory_fraction": 0.7,
        "enable_block_reuse": False,
    }
    assert trtllm_serve.merge(cli, yaml_args, "1.0")["kv_cache_config"] == {
        "enable_block_reuse": False
    }


def test_check_with_serve_args_beside_the_yaml(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text(yaml.safe_dump({"max_batch_size": 32, "print_iter_log": True}))
    args = ["check", str(path), "--serve-args", "--tp_size 2 --max_batch_size 64", "--json"]
    args += ["--device", "2xH100-80GB", "--model", str(EXAMPLES / "models" / "llama-3-8b.json")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    written = data["written"]["config"]
    assert written["max_batch_size"] == 32 and written["tensor_parallel_size"] == 2
    assert "print_iter_log" in data["not_arbitrated"]
    alone = CliRunner().invoke(
        app,
        ["check", "--serve-args", "--tp_size 2 --ep_size 2", "--device", "2xH100-80GB"]
        + ["--model", str(EXAMPLES / "models" / "llama-3-8b.json")],
    )
    assert alone.exit_code == 0, alone.output
    neither = CliRunner().invoke(app, ["check"])
    assert neither.exit_code == 2
    bad = CliRunner().invoke(app, ["check", "--serve-args", "--tp 2"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


# ------------------------------------------------------------------ prebuilt engines
@pytest.fixture
def engine_dir(tmp_path):
    """An engine built at max_batch_size 8 / max_num_tokens 256 (the shape of TRT-LLM's
    test_build_config_from_engine)."""
    config = json.loads((EXAMPLES / "trtllm/engine_fp16_no_paged_fmha/config.json").read_text())
    config["build_config"].update(max_batch_size=8, max_num_tokens=256)
    folder = tmp_path / "engine"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_runtime_limits_below_the_build_are_no_conflict(engine_dir):
    parsed = trtllm.read({"max_batch_size": 4, "max_num_tokens": 16}, engine=engine_dir)
    resolution = arbitrate(parsed.claims, profile=parsed.profile)
    assert resolution.value("build_config.max_batch_size") == 8
    assert resolution.value("build_config.max_num_tokens") == 256
    out = trtllm.write(resolution, parsed)
    assert out["max_batch_size"] == 4 and out["max_num_tokens"] == 16


def test_runtime_limits_above_the_build_are_clamped_in_1_2_and_refused_in_1_0(engine_dir):
    parsed = trtllm.read({"max_batch_size": 16, "max_seq_len": 1024}, engine=engine_dir)
    resolution = arbitrate(parsed.claims, profile=parsed.profile)
    notes = parsed.native.notes
    assert any("max_batch_size [16] clamped to build_config.max_batch_size [8]" in n for n in notes)
    assert any("max_seq_len [1024] overridden" in n for n in notes)
    out = trtllm.write(resolution, parsed)
    assert out["max_batch_size"] == 8 and out["max_seq_len"] == 4096
    old = trtllm.read({"max_batch_size": 16}, engine=engine_dir, profile="trtllm-1.0")
    with pytest.raises(trtllm.ConflictError) as err:
        arbitrate(old.claims, profile=old.profile)
    assert "llm_args.max_batch_size" in err.value.conflicts[0].claims


# ------------------------------------------------------------------ verdicts
def test_verdicts_accept_adjust_reject():
    assert trtllm.check_trtllm({"max_batch_size": 64}).verdict == "accept"
    # FlashInfer attention turns default block reuse off (py_executor_creator)
    flashinfer = trtllm.check_trtllm({"max_batch_size": 16, "attn_backend": "FLASHINFER"})
    assert flashinfer.verdict == "adjust"
    assert any("enable_block_reuse" in c for c in flashinfer.changes)
    # pre-Ampere block-reuse limits were the 0.9-0.12 arbitrator's: not a 1.2 adjustment
    assert trtllm.check_trtllm({"max_batch_size": 16}, device="V100-16GB").verdict == "accept"
    # the pre-Ampere reuse rules belong to the TensorRT-engine arbitrator (scope ARBITRATOR)
    volta = trtllm.check_trtllm(
        {"max_batch_size": 16}, device="V100-16GB", profile="trtllm-tensorrt"
    )
    assert volta.verdict == "adjust"
    assert any("enable_block_reuse" in c for c in volta.changes)
    eagle = trtllm.check_trtllm(
        {
            "speculative_config": {
                "decoding_type": "Eagle",
                "max_draft_len": 3,
                "speculative_model": "d",
            }
        }
    )
    assert eagle.verdict == "accept"  # the engine only warns
    assert any("runs as Eagle3" in w for w in eagle.warnings)
    unknown = trtllm.check_trtllm({"max_batch_sise": 8, "stream_intervl": 2})
    assert unknown.verdict == "reject"
    assert set(unknown.unknown_keys) == {"max_batch_sise", "stream_intervl"}


@pytest.mark.parametrize(
    ("config", "rule"),
    [
        (
            {"cuda_graph_config": {"batch_sizes": [1, 2, 4], "max_batch_size": 8}},
            "cuda-graph.max-batch-size-matches-batch-sizes",
        ),
        (
            {"tensor_parallel_size": 8, "moe_expert_parallel_size": 3},
            "moe.grid-equals-tensor-parallel",
        ),
        (
            {
                "tensor_parallel_size": 8,
                "moe_expert_parallel_size": 4,
                "moe_tensor_parallel_size": 4,
            },
            "moe.grid-equals-tensor-parallel",
        ),
        (
            {"speculative_config": {"decoding_type": "Medusa", "max_draft_len": 4}},
            "runtime.medusa-lookahead-need-tensorrt",
        ),
        (
            {"speculative_config": {"decoding_type": "NGram", "max_draft_len": 0}},
            "speculative.ngram-needs-draft-and-pattern-lengths",
        ),
        (
            {"attention_dp_config": {"enable_balance": True, "timeout_iters": -1}},
            "attention-dp.balance-needs-nonnegative-waits",
        ),
        (
            {"backend": "tensorrt", "kv_cache_config": {"dtype": "fp8"}},
            "kv.tensorrt-backend-dtype-auto",
        ),
    ],
)
def test_rejections_name_the_rule(config, rule):
    verdict = trtllm.check_trtllm(config, gpus=8)
    assert verdict.verdict == "reject"
    assert rule in verdict.rules


def test_expert_count_must_be_divisible_by_expert_parallelism():
    # 60-64 experts of Llama-3-8B's MLP: about 360B parameters, which 8 B200s hold
    moe_model = {**LLAMA, "num_local_experts": 60}
    config = {"tensor_parallel_size": 8, "moe_expert_parallel_size": 8}
    verdict = trtllm.check_trtllm(config, model=moe_model, gpus=8, device="B200")
    assert verdict.verdict == "reject"
    assert "moe.experts-divisible-by-expert-parallel" in verdict.rules
    assert (
        trtllm.check_trtllm(
            config, model={**LLAMA, "num_local_experts": 64}, gpus=8, device="B200"
        ).verdict
        != "reject"
    )
    balanced = {**config, "moe_config": {"load_balancer": {"num_slots": 64}}}
    assert trtllm.check_trtllm(balanced, model=moe_model, gpus=8, device="B200").verdict != "reject"
    # an expert-parallel size the engine derives (tp 8 / moe tp 1 = 8) counts too
    derived = {"tensor_parallel_size": 8, "moe_tensor_parallel_size": 1}
    verdict = trtllm.check_trtllm(derived, model=moe_model, gpus=8, device="B200")
    assert set(verdict.rules) == {
        "moe.experts-divisible-by-expert-parallel",
        "moe.grid-equals-tensor-parallel",
    }


def test_world_size_must_fit_the_gpus():
    verdict = trtllm.check_trtllm({"tensor_parallel_size": 4, "pipeline_parallel_size": 2}, gpus=4)
    assert verdict.verdict == "reject" and "8 ranks" in verdict.reasons[0]


def test_profile_picks_the_release():
    config = {"attention_dp_config": {"enable_balance": False}}
    assert trtllm.check_trtllm(config).verdict == "accept"
    old = trtllm.check_trtllm(config, profile="trtllm-1.0")
    assert old.verdict == "reject" and old.unknown_keys == ("attention_dp_config",)


def test_1_0_takes_both_cuda_graph_fields_only_for_the_generated_list():
    assert trtllm.generated_batch_sizes_1_0(8, False) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert trtllm.generated_batch_sizes_1_0(512, True)[-3:] == [128, 256, 512]
    good = {"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": list(range(1, 9))}}
    assert trtllm.check_trtllm(good, profile="trtllm-1.0").verdict != "reject"
    bad = {"cuda_graph_config": {"max_batch_size": 8, "batch_sizes": [1, 8]}}
    verdict = trtllm.check_trtllm(bad, profile="trtllm-1.0")
    assert verdict.verdict == "reject" and "cuda_graph_config.batch_sizes" in verdict.reasons[0]


def test_the_surface_examples_check_as_documented():
    moe = EXAMPLES / "trtllm" / "moe_attention_dp.yaml"
    serve = "trtllm-serve deepseek --tp_size 8 --ep_size 8 --kv_cache_free_gpu_memory_fraction 0.8"
    result = CliRunner().invoke(
        app, ["check", str(moe), "--serve-args", serve, "--device", "8xH200", "--model", MOE]
    )
    assert result.exit_code == 0, result.output
    assert "# not arbitrated (written back as given): print_iter_log" in result.output
    bad = CliRunner().invoke(
        app,
        ["check", str(EXAMPLES / "trtllm" / "moe_bad_grid.yaml"), "--device", "8xH200"]
        + ["--model", MOE],
    )
    output = bad.output + (bad.stderr if bad.stderr_bytes else "")
    assert bad.exit_code == 1 and "moe.grid-equals-tensor-parallel" in output
