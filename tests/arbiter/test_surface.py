"""The vLLM and SGLang field lists: they load, their fields are complete, every engine
spelling resolves, unknown keys are all named with close matches, and the derived
defaults are the engines' own."""

from __future__ import annotations

import pytest
import yaml

from arbiter.dialects.surface import (
    UnknownFields,
    UnknownSurface,
    field_list_path,
    load_surface,
    surface_names,
)

SURFACES = ("vllm-0.33", "vllm-0.24", "sglang-0.5.23", "sglang-0.5.16")


@pytest.mark.parametrize("name", SURFACES)
def test_field_list_loads_with_its_source(name):
    surface = load_surface(name)
    assert surface.engine == name.split("-")[0]
    assert surface.release == name.split("-")[1]
    assert surface.source["package"] == surface.engine
    version = surface.source["version"]
    assert version == surface.release or version.startswith(surface.release + ".")
    assert surface.source["generator"] == "scripts/extract_fields.py"
    assert len(surface.fields) > 150


@pytest.mark.parametrize("name", SURFACES)
def test_every_field_has_name_type_and_default(name):
    raw = yaml.safe_load(field_list_path(name).read_text())
    names = [entry["name"] for entry in raw["fields"]]
    assert len(names) == len(set(names))
    for entry in raw["fields"]:
        assert entry["name"] and entry["type"], entry
        assert "default" in entry, entry["name"]
        assert entry["section"], entry["name"]


def test_unknown_surface_is_a_typed_error():
    with pytest.raises(UnknownSurface) as err:
        load_surface("vllm-0.3")
    assert "vllm-0.33" in err.value.suggestions
    assert set(SURFACES) <= set(surface_names())


@pytest.mark.parametrize(
    ("key", "field", "negated"),
    [
        ("max-num-batched-tokens", "max_num_batched_tokens", False),
        ("max_num_batched_tokens", "max_num_batched_tokens", False),
        ("--gpu-memory-utilization", "gpu_memory_utilization", False),
        ("no-enable-prefix-caching", "enable_prefix_caching", True),
        ("--no-enable-chunked-prefill", "enable_chunked_prefill", True),
        ("--disable-prefix-caching", "enable_prefix_caching", True),
        ("tensor-parallel-size", "tensor_parallel_size", False),
        ("tp", "tensor_parallel_size", False),
    ],
)
def test_vllm_spellings(key, field, negated):
    found = load_surface("vllm-0.33").resolve(key)
    assert found is not None, key
    assert (found.field.name, found.negated) == (field, negated)


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("mem-fraction-static", "mem_fraction_static"),
        ("chunked_prefill_size", "chunked_prefill_size"),
        ("--tp-size", "tp_size"),
        ("tensor-parallel-size", "tp_size"),
        ("speculative-algorithm", "speculative_algorithm"),
    ],
)
def test_sglang_spellings(key, field):
    assert load_surface("sglang-0.5").lookup(key).name == field


def test_bool_negation_is_recorded_for_vllm_bools():
    surface = load_surface("vllm-0.33")
    prefix = surface.fields["enable_prefix_caching"]
    assert prefix.negation == "--no-enable-prefix-caching"
    assert surface.fields["enforce_eager"].is_bool


def test_deprecated_flags_are_marked():
    """SGLang 0.5.23's --config merger refuses a deprecated flag in a YAML file
    (corpus case sglang-disable-cuda-graph-in-config), so the dialect must know them."""
    sglang = load_surface("sglang-0.5")
    assert sglang.fields["disable_cuda_graph"].deprecated
    assert sglang.fields["enable_dp_attention"].deprecated
    assert not sglang.fields["attn_dp_size"].deprecated


def test_choices_are_the_engines():
    vllm = load_surface("vllm-0.33")
    assert set(vllm.fields["max_lora_rank"].choices) == {1, 8, 16, 32, 64, 128, 256, 320, 512}
    # the parser takes any string for kv-cache-dtype; the type names the literal values
    assert vllm.fields["kv_cache_dtype"].choices is None
    assert "'fp8_e5m2'" in vllm.fields["kv_cache_dtype"].type
    sglang = load_surface("sglang-0.5")
    assert {"null", "prefill", "decode"} <= set(sglang.fields["disaggregation_mode"].choices)


def test_unknown_keys_are_all_named_at_once_with_close_matches():
    surface = load_surface("vllm-0.33")
    with pytest.raises(UnknownFields) as err:
        surface.check_keys(["max-num-batch-tokens", "max-model-len", "gpu_mem_utilization"])
    unknown = dict(err.value.unknown)
    assert set(unknown) == {"max-num-batch-tokens", "gpu_mem_utilization"}
    # each suggestion in the key's own spelling (D-L7: a dashed key is answered dashed)
    assert "max-num-batched-tokens" in unknown["max-num-batch-tokens"]
    assert "gpu_memory_utilization" in unknown["gpu_mem_utilization"]
    text = str(err.value)
    assert "max-num-batch-tokens" in text and "gpu_mem_utilization" in text
    assert "did you mean" in text


def test_sglang_unknown_key_suggests_its_own_name():
    with pytest.raises(UnknownFields) as err:
        load_surface("sglang-0.5").lookup("mem-fraction")
    assert "mem-fraction-static" in dict(err.value.unknown)["mem-fraction"]  # dashed (D-L7)


def _derived(surface, field, **when):
    for case in surface.derived[field].cases:
        if all(case["when"].get(k) == v for k, v in when.items()):
            return case["value"]
    raise AssertionError(f"no derived case for {field} {when}")


def test_vllm_token_budget_depends_on_device_and_usage():
    """EngineArgs.get_batch_defaults: >=70 GiB (not A100) 8192 for the API server,
    A100-80GB stays on the small tier (2048), >=160 GiB gets 16384."""
    surface = load_surface("vllm-0.33")
    server = "OPENAI_API_SERVER"
    assert (
        _derived(
            surface,
            "max_num_batched_tokens",
            memory_gib=80,
            usage_context=server,
            device="NVIDIA H100 80GB HBM3",
        )
        == 8192
    )
    assert (
        _derived(
            surface, "max_num_batched_tokens", usage_context=server, device="NVIDIA A100-SXM4-80GB"
        )
        == 2048
    )
    assert (
        _derived(surface, "max_num_batched_tokens", usage_context=server, device="NVIDIA B200")
        == 16384
    )
    assert (
        _derived(
            surface,
            "max_num_batched_tokens",
            usage_context="LLM_CLASS",
            device="NVIDIA H100 80GB HBM3",
        )
        == 16384
    )
    assert (
        _derived(surface, "max_num_seqs", usage_context=server, device="NVIDIA H100 80GB HBM3")
        == 1024
    )
    assert (
        _derived(surface, "max_num_seqs", usage_context=server, device="NVIDIA A100-SXM4-40GB")
        == 256
    )
    assert "arg_utils.py" in surface.derived["max_num_seqs"].source


def test_sglang_derived_defaults_from_gpu_memory():
    surface = load_surface("sglang-0.5")
    assert _derived(surface, "chunked_prefill_size", device="H100", tp_size=1) == 8192
    assert _derived(surface, "chunked_prefill_size", device="B200", tp_size=1) == 16384
    assert _derived(surface, "chunked_prefill_size", device="A10", tp_size=1) == 4096
    assert _derived(surface, "cuda_graph_max_bs", device="H100", tp_size=1) == 256
    assert _derived(surface, "cuda_graph_max_bs", device="H100", tp_size=4) == 512
    fraction = _derived(surface, "mem_fraction_static", device="H100", tp_size=1)
    assert 0.8 < fraction < 0.9
    assert "memory_hook.py" in surface.derived["mem_fraction_static"].source
