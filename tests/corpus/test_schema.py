"""The corpus files themselves: every case validates, ids are unique, the fixtures they
name exist and carry their provenance, and the corpus covers what it must."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from .adapter import merged_config, serve_options
from .cases import FIXTURE_DIR, CaseError, load_cases, load_file, validate

CASES = load_cases()

GOOD = {
    "id": "x-good",
    "provenance": {"repo": "NVIDIA/TensorRT-LLM", "path": "a.yaml", "ref": "abc123"},
    "engine": "trtllm",
    "profile": "trtllm-1.2",
    "backend": "pytorch",
    "model": None,
    "device": None,
    "gpus": 1,
    "config": {"max_batch_size": 8},
    "verdict": "accept",
    "why": "the engine's own test accepts it",
}


def test_the_corpus_has_its_size():
    engines = [c.engine for c in CASES]
    assert engines.count("trtllm") >= 80
    assert engines.count("mlc") >= 10
    deployments = [c for c in CASES if c.model is not None and c.device is not None]
    assert len(deployments) >= 20, "deployments name a model fixture and a device"


def test_every_verdict_kind_appears_for_trtllm():
    kinds = {c.verdict for c in CASES if c.engine == "trtllm"}
    assert kinds == {"accept", "adjust", "reject"}


@pytest.mark.parametrize(
    "needle",
    [
        "cuda_graph_config",
        "moe_expert_parallel_size",
        "moe_config",
        "enable_attention_dp",
        "attention_dp_config",
        "cache_transceiver_config",
        "disable_overlap_scheduler",
        "kv_cache_config",
        "torch_compile_config",
        "context_parallel_size",
        "post_processor_hook",
    ],
)
def test_the_corpus_covers_each_feature(needle):
    assert any(needle in json.dumps(c.config) for c in CASES if c.engine == "trtllm")


@pytest.mark.parametrize(
    "decoding_type",
    ["MTP", "Eagle", "Eagle3", "NGram", "DraftTarget", "Draft_Target", "SA", "User_Provided"]
    + ["Medusa", "Lookahead"],
)
def test_the_corpus_covers_each_speculative_type(decoding_type):
    kinds = {
        c.config["speculative_config"].get("decoding_type")
        for c in CASES
        if isinstance(c.config.get("speculative_config"), dict)
    }
    assert decoding_type in kinds


def test_the_corpus_has_a_prebuilt_engine_and_both_trtllm_backends():
    assert any(c.prebuilt_engine is not None for c in CASES)
    assert {c.backend for c in CASES if c.engine == "trtllm"} == {"pytorch", "tensorrt"}


def test_every_fixture_a_case_names_is_a_sourced_config_json():
    for name in sorted({c.model for c in CASES if c.model is not None}):
        data = json.loads((FIXTURE_DIR / f"{name}.json").read_text())
        prov = data.get("_provenance", {})
        # the corpus's own fixtures name repo/path/ref; the reference models of the facts
        # work name the config they were re-authored from and the published totals' source
        sourced = all(prov.get(k) for k in ("repo", "path", "ref")) or all(
            prov.get(k) for k in ("config", "params_source")
        )
        assert sourced, name
        assert data.get("architectures") or data.get("model_type"), name


def test_a_valid_case_loads():
    case = validate(GOOD, "inline")
    assert (case.id, case.verdict, case.gpus) == ("x-good", "accept", 1)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"provenance": {"repo": "r", "path": "p"}}, "provenance"),
        ({"verdict": "maybe"}, "verdict"),
        ({"engine": "vllm"}, "engine"),
        ({"profile": "trtllm-9.9"}, "profile"),
        ({"backend": "tensorrt"}, "backend"),
        ({"gpus": 0}, "gpus"),
        ({"model": "no-such-model"}, "model"),
        ({"config": "max_batch_size: 8"}, "config"),
        ({"verdict": "reject"}, "reject"),
        ({"reject": "why not"}, "reject"),
        ({"adjust": {"a": 1}}, "adjust"),
        ({"why": "ok"}, "why"),
        ({"serve_args": ["--tp_size", "2"]}, "serve_args"),
        ({"prebuilt_engine": {"build_config": {}}}, "prebuilt_engine"),
    ],
)
def test_a_bad_case_is_named_with_its_key(change, key):
    with pytest.raises(CaseError) as err:
        validate({**GOOD, **change}, "inline")
    assert err.value.key == key
    assert "x-good" in str(err.value) and key in str(err.value)


def test_missing_and_unknown_keys_are_all_named():
    raw = {k: v for k, v in GOOD.items() if k not in ("why", "gpus")}
    with pytest.raises(CaseError, match="missing keys: gpus, why"):
        validate(raw, "inline")
    with pytest.raises(CaseError, match="unknown keys: colour, flavour"):
        validate({**GOOD, "colour": 1, "flavour": 2}, "inline")


def test_duplicate_ids_across_files_are_refused(tmp_path: Path):
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump([GOOD]))
    with pytest.raises(CaseError, match="duplicate id") as err:
        load_cases(tmp_path)
    assert err.value.file == "b.yaml"


def test_a_file_that_is_not_a_case_list_is_refused(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("- just a string\n")
    with pytest.raises(CaseError, match="expected a case mapping"):
        load_file(path)
    path.write_text("id: [unclosed\n")
    with pytest.raises(CaseError, match="not valid YAML"):
        load_file(path)


def test_serve_flags_become_llm_arguments_and_the_yaml_wins():
    case = validate(
        {
            **GOOD,
            "serve_args": "--host 0.0.0.0 --tp_size 4 --ep_size 2 --trust_remote_code "
            "--kv_cache_free_gpu_memory_fraction 0.8",
            "config": {"tensor_parallel_size": 8, "kv_cache_config": {"dtype": "fp8"}},
        },
        "inline",
    )
    assert merged_config(case) == {
        "tensor_parallel_size": 8,
        "moe_expert_parallel_size": 2,
        "trust_remote_code": True,
        "kv_cache_config": {"free_gpu_memory_fraction": 0.8, "dtype": "fp8"},
    }


def test_an_unknown_serve_flag_is_named():
    with pytest.raises(ValueError, match="--tp: no such trtllm-serve option"):
        serve_options("--tp 8")
    with pytest.raises(ValueError, match="--max_batch_size: needs a value"):
        serve_options("--max_batch_size")
