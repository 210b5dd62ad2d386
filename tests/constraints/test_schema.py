"""The option schema: required paths, domains, defaults, lookup and suggestions."""

from __future__ import annotations

import pytest

from constraints import EngineConfig, UnknownPath, lookup, options, violations
from constraints.domains import BoolDomain, EnumDomain, FractionDomain, IntDomain
from constraints.errors import DomainError

REQUIRED = {
    "plugin_config": [
        "use_paged_context_fmha",
        "context_fmha",
        "use_fp8_context_fmha",
        "streamingllm",
        "paged_kv_cache",
        "remove_input_padding",
        "gemm_plugin",
        "use_fused_mlp",
        "multiple_profiles",
        "reduce_fusion",
        "user_buffer",
    ],
    "kv_cache_config": [
        "enable_block_reuse",
        "enable_partial_reuse",
        "copy_on_partial_reuse",
        "tokens_per_block",
        "max_tokens",
        "free_gpu_memory_fraction",
        "max_attention_window",
        "sink_token_length",
        "host_cache_size",
        "onboard_blocks",
        "dtype",
    ],
    "build_config": [
        "max_batch_size",
        "max_input_len",
        "max_seq_len",
        "max_num_tokens",
        "opt_num_tokens",
        "max_beam_width",
        "max_draft_len",
        "gather_context_logits",
        "gather_generation_logits",
        "speculative_decoding_mode",
    ],
    "scheduler_config": [
        "capacity_scheduler_policy",
        "context_chunking_policy",
        "enable_chunked_context",
    ],
    "speculative_config": ["decoding_type"],
    "quant_config": ["quant_algo", "kv_cache_quant_algo"],
    "device": ["sm", "memory_mib"],
    "model": [
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "hidden_size",
        "vocab_size",
        "max_position_embeddings",
        "dtype",
    ],
}


@pytest.mark.parametrize("path", [f"{s}.{n}" for s, names in REQUIRED.items() for n in names])
def test_required_paths_exist_with_domain_and_default(path):
    spec = lookup(path)
    assert spec.path == path
    assert spec.description
    if spec.derived_default is None and not (spec.default is None and spec.domain.nullable):
        assert spec.check(spec.default) == spec.default


def test_enum_domains_name_the_engine_values():
    assert lookup("scheduler_config.capacity_scheduler_policy").domain.values == (
        "GUARANTEED_NO_EVICT",
        "MAX_UTILIZATION",
        "STATIC_BATCH",
    )
    assert lookup("scheduler_config.context_chunking_policy").domain.values == (
        "FIRST_COME_FIRST_SERVED",
        "EQUAL_PROGRESS",
    )
    assert set(lookup("speculative_config.decoding_type").domain.values) == {
        "none",
        "Medusa",
        "Eagle",
        "Lookahead",
        "MTP",
        "DraftTarget",
        "NGram",
        "UserProvided",
        "PARD",
        "AUTO",
        "SaveState",
    }


def test_every_option_has_a_solver_readable_domain():
    kinds = {type(s.domain) for s in options()}
    assert kinds <= {BoolDomain, EnumDomain, IntDomain, FractionDomain}
    for spec in options():
        lo, hi = spec.domain.bounds()
        assert lo <= hi, spec.path


def test_fraction_is_fixed_point():
    spec = lookup("kv_cache_config.free_gpu_memory_fraction")
    assert spec.domain.encode(0.9) == 900 and spec.domain.decode(900) == 0.9
    with pytest.raises(DomainError, match="precision"):
        spec.check(0.12345)


def test_unknown_path_suggests_close_matches():
    with pytest.raises(UnknownPath) as err:
        lookup("kv_cache_config.enable_blok_reuse")
    assert err.value.suggestions[0] == "kv_cache_config.enable_block_reuse"
    assert "did you mean" in str(err.value)
    # the right option under the wrong section
    with pytest.raises(UnknownPath) as err:
        lookup("plugin_config.enable_block_reuse")
    assert "kv_cache_config.enable_block_reuse" in err.value.suggestions


def test_domain_error_names_path_value_and_domain():
    with pytest.raises(DomainError) as err:
        lookup("build_config.max_beam_width").check(0)
    assert err.value.path == "build_config.max_beam_width"
    assert err.value.value == 0
    assert "[1, 1024]" in str(err.value)


def test_engine_config_validates_assignment_and_derives_max_seq_len():
    config = EngineConfig()
    assert config.build_config.max_seq_len == config.model.max_position_embeddings
    with pytest.raises(ValueError):
        config.kv_cache_config.tokens_per_block = 0
    with pytest.raises(ValueError):
        EngineConfig.model_validate({"kv_cache_config": {"no_such_option": 1}})
    flat = config.flat()
    assert EngineConfig.from_flat(flat) == config


def test_defaults_break_no_rule():
    assert violations(EngineConfig()) == []  # the schema's defaults are trtllm-1.2's


def test_violations_reports_broken_rules():
    config = EngineConfig()
    config.runtime_config.backend = "tensorrt"
    config.plugin_config.use_paged_context_fmha = False
    # a TensorRT-engine rule: broken under the TensorRT line, out of scope on PyTorch
    broken = {r.id for r in violations(config, profile="trtllm-tensorrt")}
    assert "kv.reuse-needs-paged-context-fmha" in broken
    assert {r.id for r in violations(config)} == {"runtime.pytorch-profile-backend"}


def test_a_scoped_config_holds_its_engines_sections_in_schema_order_and_pickles():
    import pickle

    from constraints.schema import engine_config, options, scope_for, section_names

    vllm = engine_config(["vllm"])
    assert engine_config(("vllm",)) is vllm  # one class per scope
    assert engine_config() is EngineConfig
    assert "vllm_config" in vllm.model_fields and "sglang_config" not in vllm.model_fields
    whole = section_names()
    assert [s for s in whole if s in vllm.model_fields] == list(section_names(["vllm"]))
    assert [s.path for s in options(["vllm"])] == [
        s.path for s in options() if s.path in {o.path for o in options(["vllm"])}
    ]
    assert scope_for(["vllm_config.max_loras", "kv_cache_config.tokens_per_block"]) == ("vllm",)
    assert scope_for(["kv_cache_config.tokens_per_block"]) == ()

    config = vllm.from_flat({"vllm_config.max_loras": 4})
    back = pickle.loads(pickle.dumps(config))  # worker processes receive configs
    assert type(back) is vllm and back == config and back.flat() == config.flat()
    full = pickle.loads(pickle.dumps(EngineConfig()))
    assert type(full) is EngineConfig


def test_another_engines_option_of_a_scoped_config_is_out_of_scope():
    from constraints import OutOfScope
    from constraints.schema import engine_config

    config = engine_config(["vllm"])()
    with pytest.raises(OutOfScope) as err:
        config.get("sglang_config.page_size")
    assert err.value.engine == "sglang" and err.value.scope == ("vllm",)
    assert "sglang's own section" in str(err.value) and "vllm's only" in str(err.value)
    assert config.get("vllm_config.max_loras") == config.flat()["vllm_config.max_loras"]


def test_a_profiles_resolution_names_the_missing_engine_for_its_option():
    from arbiter import arbitrate
    from constraints import OutOfScope

    resolution = arbitrate([], profile="vllm-0.33")
    assert "sglang_config.page_size" not in resolution.values
    with pytest.raises(OutOfScope, match="sglang's own section"):
        resolution.value("sglang_config.page_size")
