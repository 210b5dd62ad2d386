"""TensorRT-LLM field lists per release: known fields, unknown keys, nesting, coercion."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from arbiter.cli import app
from arbiter.engines.trtllm import native as trtllm
from arbiter.engines.trtllm.fields import (
    FieldErrors,
    catalogue,
    python_type,
    releases,
    validate,
)


def test_supported_releases_have_a_sourced_field_list():
    assert releases() == ("1.0", "1.2")
    for release in releases():
        cat = catalogue(release)
        assert cat.source["repo"] == "NVIDIA/TensorRT-LLM"
        assert cat.source["path"] == "tensorrt_llm/llmapi/llm_args.py"
        for cls in [*cat.models, *cat.args]:
            for spec in cat.fields(cls).values():
                kind = spec.base_type
                if not (cat.is_model(kind) or kind.startswith("tagged(")):
                    python_type(spec.type)  # every type of the notation is understood


@pytest.mark.parametrize(
    ("release", "cls", "name", "present"),
    [
        ("1.2", "TorchLlmArgs", "attention_dp_config", True),
        ("1.0", "TorchLlmArgs", "attention_dp_config", False),
        ("1.2", "TorchLlmArgs", "sampler_type", True),
        ("1.0", "TorchLlmArgs", "enable_trtllm_sampler", True),
        ("1.2", "TorchLlmArgs", "build_config", False),
        ("1.2", "TrtLlmArgs", "build_config", True),
        ("1.2", "TrtLlmArgs", "cuda_graph_config", False),
        ("1.2", "KvCacheConfig", "tokens_per_block", True),
        ("1.0", "KvCacheConfig", "tokens_per_block", False),
        ("1.2", "TorchLlmArgs", "moe_expert_parallel_size", True),
        ("1.2", "NGramDecodingConfig", "max_matching_ngram_size", True),
        ("1.2", "MTPDecodingConfig", "mtp_eagle_one_model", True),
        ("1.0", "MTPDecodingConfig", "mtp_eagle_one_model", False),
    ],
)
def test_fields_are_the_release_s(release, cls, name, present):
    assert (name in catalogue(release).fields(cls)) is present


def test_defaults_that_matter_are_recorded():
    cat = catalogue("1.2")
    assert cat.fields("CudaGraphConfig")["max_batch_size"].default == 0
    assert cat.fields("MoeConfig")["backend"].default == "AUTO"
    assert catalogue("1.0").fields("MoeConfig")["backend"].default == "CUTLASS"
    assert cat.fields("KvCacheConfig")["free_gpu_memory_fraction"].default == 0.9
    assert cat.fields("TorchLlmArgs")["max_batch_size"].default == 2048
    assert set(cat.unions["speculative_config"]["choices"]) >= {"Eagle3", "NGram", "MTP"}


def test_every_unknown_key_is_named_at_once_with_close_matches():
    with pytest.raises(FieldErrors) as err:
        validate(
            {
                "max_batch_sise": 8,
                "enable_block_reuse": True,
                "kv_cache_config": {"enable_blok_reuse": True},
                "speculative_config": {"decoding_type": "Eagle3", "num_medusa_heads": 4},
            },
            "1.2",
            "pytorch",
            file="x.yaml",
        )
    problems = {p.key: p for p in err.value.problems}
    assert set(err.value.unknown_keys) == {
        "max_batch_sise",
        "enable_block_reuse",
        "kv_cache_config.enable_blok_reuse",
        "speculative_config.num_medusa_heads",
    }
    assert "max_batch_size" in problems["max_batch_sise"].suggestions
    assert problems["enable_block_reuse"].suggestions[0] == "kv_cache_config.enable_block_reuse"
    assert (
        "kv_cache_config.enable_block_reuse"
        in problems["kv_cache_config.enable_blok_reuse"].suggestions
    )
    text = str(err.value)
    assert text.startswith("x.yaml: 4 problem(s)") and text.count("\n  - ") == 4


def test_nesting_where_the_engine_does_not_and_the_reverse_name_the_path():
    with pytest.raises(FieldErrors) as err:
        validate(
            {
                "kv_cache_config": 0.9,
                "max_batch_size": {"value": 8},
                "cuda_graph_config": [1, 2],
                "speculative_config": "MTP",
            },
            "1.2",
            "pytorch",
        )
    reasons = {p.key: p.reason for p in err.value.problems}
    assert "expected an object (KvCacheConfig)" in reasons["kv_cache_config"]
    assert "not an object" in reasons["max_batch_size"]
    assert "expected an object (CudaGraphConfig)" in reasons["cuda_graph_config"]
    assert "decoding_type" in reasons["speculative_config"]


@pytest.mark.parametrize(
    ("given", "coerced"),
    [
        ({"print_iter_log": "false"}, {"print_iter_log": False}),
        ({"print_iter_log": "1"}, {"print_iter_log": True}),
        ({"print_iter_log": "off"}, {"print_iter_log": False}),  # pydantic's lax bool words
        ({"enable_attention_dp": "yes"}, {"enable_attention_dp": True}),
        ({"max_batch_size": "8"}, {"max_batch_size": 8}),
        (
            {"cuda_graph_config": {"batch_sizes": ("1", 2)}},
            {"cuda_graph_config": {"batch_sizes": [1, 2]}},
        ),
        ({"enable_autotuner": 0}, {"enable_autotuner": False}),
        ({"stream_interval": "10"}, {"stream_interval": 10}),
        ({"max_batch_size": 8.0}, {"max_batch_size": 8}),
        (
            {"kv_cache_config": {"free_gpu_memory_fraction": "0.85"}},
            {"kv_cache_config": {"free_gpu_memory_fraction": 0.85}},
        ),
    ],
)
def test_values_are_coerced_as_pydantic_lax_mode_does(given, coerced):
    assert validate(given, "1.2", "pytorch") == coerced


@pytest.mark.parametrize(
    "given",
    [
        {"print_iter_log": "maybe"},
        {"print_iter_log": 2},  # only 0 and 1 are bools
        {"max_batch_size": "8.5"},
        {"max_batch_size": 8.5},  # a float with a fraction is no int
        {"stream_interval": "ten"},
        {"stream_interval": 1.5},
        {"stream_interval": 0},  # PositiveInt
        {"kv_cache_config": {"free_gpu_memory_fraction": 1.5}},  # ge=0, le=1
        {"moe_config": {"backend": "cutlass"}},  # Literal values are case-sensitive
        {"tokenizer_mode": "fast"},
    ],
)
def test_values_the_engine_refuses_are_bad_input(given):
    with pytest.raises(FieldErrors):
        validate(given, "1.2", "pytorch")


def test_decoding_types_are_the_release_s():
    validate(
        {"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3}}, "1.2", "pytorch"
    )
    with pytest.raises(FieldErrors) as err:
        validate({"speculative_config": {"decoding_type": "Eagle3"}}, "1.0", "pytorch")
    assert err.value.problems[0].key == "speculative_config.decoding_type"
    # the 1.0 spelling is still taken by 1.2
    validate(
        {"speculative_config": {"decoding_type": "DraftTarget", "max_draft_len": 3}},
        "1.2",
        "pytorch",
    )


def test_cli_exit_2_names_every_unknown_key(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text(
        yaml.safe_dump({"max_batch_sise": 8, "kv_cache_config": {"enable_blok_reuse": True}})
    )
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    output = result.output + (result.stderr if result.stderr_bytes else "")
    assert "max_batch_sise" in output and "kv_cache_config.enable_blok_reuse" in output
    assert "Traceback" not in output


def test_a_release_without_a_field_list_is_named():
    with pytest.raises(trtllm.DialectError, match="supported: 1.0, 1.2"):
        catalogue("0.7")


def test_a_field_of_the_other_backend_says_so():
    with pytest.raises(FieldErrors) as err:
        validate({"build_config": {"max_batch_size": 8}}, "1.2", "pytorch")
    assert "it is a field of TrtLlmArgs (backend: tensorrt)" in err.value.problems[0].reason
    with pytest.raises(FieldErrors) as err:
        validate({"cuda_graph_config": {}}, "1.2", "tensorrt")
    assert "it is a field of TorchLlmArgs (backend: pytorch)" in err.value.problems[0].reason
    with pytest.raises(FieldErrors) as err:
        validate({"no_such_field": 1}, "1.2", "pytorch")
    assert "it is a field of" not in err.value.problems[0].reason


def test_a_top_level_field_nested_in_a_section_suggests_the_top_level_path():
    with pytest.raises(FieldErrors) as err:
        validate({"kv_cache_config": {"tensor_parallel_size": 2}}, "1.2", "pytorch")
    problem = err.value.problems[0]
    assert problem.key == "kv_cache_config.tensor_parallel_size"
    assert problem.suggestions[0] == "tensor_parallel_size"
