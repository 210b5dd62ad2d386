"""The intent vocabulary and its mapping onto each engine's own options.

Every feature is checked on every engine against a table written here from the engines'
option surfaces (docs/engines.md, "Engine-neutral claim vocabulary"); the configs the
mapping generates are checked against the field lists: vLLM 0.33 and SGLang 0.5 with
`Surface.check_keys` (no deprecated SGLang flag, which its `--config` merger refuses),
TensorRT-LLM 1.2 with the dialect's field validation, MLC with the dialect's reader.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.compare import FEATURES, IntentError, native, parse_intent
from arbiter.compare.mapping import ENGINES
from arbiter.compare.vocabulary import Lora, Speculative
from arbiter.dialects.surface import load_surface
from arbiter.engines.mlc import native as mlc
from arbiter.engines.trtllm.fields import validate

FIXTURES = Path(__file__).parents[1] / "fixtures" / "models"
NO = "no option"
EAGLE3 = Speculative("eagle3", 3, "/models/eagle3-draft")
# feature, value, {engine: expected native config, or NO}
TABLE = [
    (
        "prefix_caching",
        True,
        {
            "trtllm": {"kv_cache_config": {"enable_block_reuse": True}},
            "vllm": {"enable-prefix-caching": True},
            "sglang": {"disable-radix-cache": False},
            "mlc": {"prefix_cache_mode": "radix"},
        },
    ),
    (
        "prefix_caching",
        False,
        {
            "trtllm": {"kv_cache_config": {"enable_block_reuse": False}},
            "vllm": {"enable-prefix-caching": False},
            "sglang": {"disable-radix-cache": True},
            "mlc": {"prefix_cache_mode": "disable"},
        },
    ),
    (
        "chunked_prefill",
        True,
        {
            "trtllm": {"enable_chunked_prefill": True},
            "vllm": {"enable-chunked-prefill": True},
            "sglang": {},  # on by default, its chunk derived from the GPU's memory
            "mlc": {"prefill_mode": "hybrid"},
        },
    ),
    (
        "chunked_prefill",
        False,
        {
            "trtllm": {"enable_chunked_prefill": False},
            "vllm": {"enable-chunked-prefill": False},
            "sglang": {"chunked-prefill-size": -1},
            "mlc": NO,
        },
    ),
    (
        "speculative",
        Speculative("ngram", 4),
        {
            "trtllm": {"speculative_config": {"decoding_type": "NGram", "max_draft_len": 4}},
            "vllm": {"speculative-config": {"method": "ngram", "num_speculative_tokens": 4}},
            "sglang": {"speculative-algorithm": "NGRAM", "speculative-num-draft-tokens": 4},
            "mlc": NO,
        },
    ),
    (
        "speculative",
        EAGLE3,
        {
            "trtllm": {
                "speculative_config": {
                    "decoding_type": "Eagle3",
                    "max_draft_len": 3,
                    "speculative_model_dir": "/models/eagle3-draft",
                }
            },
            "vllm": {
                "speculative-config": {
                    "method": "eagle3",
                    "num_speculative_tokens": 3,
                    "model": "/models/eagle3-draft",
                }
            },
            "sglang": {
                "speculative-algorithm": "EAGLE3",
                "speculative-num-steps": 3,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": 4,
                "speculative-draft-model-path": "/models/eagle3-draft",
            },
            "mlc": NO,
        },
    ),
    (
        "speculative",
        Speculative("mtp", 2),
        {
            "trtllm": {
                "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 2}
            },
            "vllm": {"speculative-config": {"method": "mtp", "num_speculative_tokens": 2}},
            "sglang": {
                "speculative-algorithm": "EAGLE",
                "speculative-num-steps": 2,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": 3,
            },
            "mlc": NO,
        },
    ),
    (
        "speculative",
        Speculative("draft_model", 5, "/models/small"),
        {
            "trtllm": {
                "speculative_config": {
                    "decoding_type": "Draft_Target",
                    "max_draft_len": 5,
                    "speculative_model_dir": "/models/small",
                }
            },
            "vllm": {
                "speculative-config": {
                    "method": "draft_model",
                    "num_speculative_tokens": 5,
                    "model": "/models/small",
                }
            },
            "sglang": {
                "speculative-algorithm": "STANDALONE",
                "speculative-num-steps": 5,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": 6,
                "speculative-draft-model-path": "/models/small",
            },
            "mlc": {
                "speculative_mode": "small_draft",
                "spec_draft_length": 5,
                "additional_models": ["/models/small"],
            },
        },
    ),
    (
        "fp8_kv",
        True,
        {
            "trtllm": {"kv_cache_config": {"dtype": "fp8"}},
            "vllm": {"kv-cache-dtype": "fp8"},
            "sglang": {"kv-cache-dtype": "fp8_e4m3"},
            "mlc": NO,
        },
    ),
    (
        "fp8_kv",
        False,
        {
            "trtllm": {"kv_cache_config": {"dtype": "auto"}},
            "vllm": {"kv-cache-dtype": "auto"},
            "sglang": {"kv-cache-dtype": "auto"},
            "mlc": {},
        },
    ),
    (
        "lora",
        Lora(64, 8),
        {
            "trtllm": {"lora_config": {"max_lora_rank": 64, "max_loras": 8}},
            "vllm": {"enable-lora": True, "max-lora-rank": 64, "max-loras": 8},
            "sglang": {
                "enable-lora": True,
                "max-lora-rank": 64,
                "max-loras-per-batch": 8,
                "lora-target-modules": ["all"],
            },
            "mlc": NO,
        },
    ),
    (
        "context_length",
        8192,
        {
            "trtllm": {"max_seq_len": 8192},
            "vllm": {"max-model-len": 8192},
            "sglang": {"context-length": 8192},
            "mlc": {"max_single_sequence_length": 8192},
        },
    ),
    (
        "batch",
        64,
        {
            "trtllm": {"max_batch_size": 64},
            "vllm": {"max-num-seqs": 64},
            "sglang": {"max-running-requests": 64},
            "mlc": {"max_num_sequence": 64},
        },
    ),
    (
        "token_budget",
        4096,
        {
            "trtllm": {"max_num_tokens": 4096},
            "vllm": {"max-num-batched-tokens": 4096},
            "sglang": {"max-prefill-tokens": 4096, "chunked-prefill-size": 4096},
            "mlc": {"prefill_chunk_size": 4096},
        },
    ),
    (
        "tensor_parallel",
        2,
        {
            "trtllm": {"tensor_parallel_size": 2},
            "vllm": {"tensor-parallel-size": 2},
            "sglang": {"tp-size": 2},
            "mlc": {"tensor_parallel_shards": 2},
        },
    ),
    (
        "pipeline_parallel",
        2,
        {
            "trtllm": {"pipeline_parallel_size": 2},
            "vllm": {"pipeline-parallel-size": 2},
            "sglang": {"pp-size": 2},
            "mlc": {"pipeline_parallel_stages": 2},
        },
    ),
    (
        "expert_parallel",
        1,
        {
            "trtllm": {"moe_expert_parallel_size": 1},
            "vllm": {"enable-expert-parallel": False},
            "sglang": {"ep-size": 1},
            "mlc": {},
        },
    ),
    (
        "attention_dp",
        False,
        {
            "trtllm": {"enable_attention_dp": False},
            "vllm": {},
            "sglang": {},
            "mlc": {},
        },
    ),
    (
        "cuda_graphs",
        False,
        {
            "trtllm": {"cuda_graph_config": None},
            "vllm": {"enforce-eager": True},
            "sglang": {"disable-decode-cuda-graph": True, "disable-prefill-cuda-graph": True},
            "mlc": NO,
        },
    ),
    (
        "cuda_graphs",
        True,
        {
            "trtllm": {"cuda_graph_config": {}},
            "vllm": {"enforce-eager": False},
            "sglang": {"disable-decode-cuda-graph": False, "disable-prefill-cuda-graph": False},
            "mlc": NO,
        },
    ),
    (
        "kv_page_size",
        32,
        {
            "trtllm": {"kv_cache_config": {"tokens_per_block": 32}},
            "vllm": {"block-size": 32},
            "sglang": {"page-size": 32},
            "mlc": {"kv_cache_page_size": 32},
        },
    ),
    (
        "kv_memory_share",
        0.8,
        {
            "trtllm": {"kv_cache_config": {"free_gpu_memory_fraction": 0.8}},
            "vllm": {"gpu-memory-utilization": 0.8},
            "sglang": {"mem-fraction-static": 0.8},
            "mlc": {"gpu_memory_utilization": 0.8},
        },
    ),
]
BASE = {"mlc": {"mode": "server"}}


def test_every_feature_is_in_the_table():
    assert {row[0] for row in TABLE} == set(FEATURES)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("feature", "value", "expected"), TABLE, ids=lambda x: str(x)[:24])
def test_feature_maps_onto_the_engines_option(engine, feature, value, expected):
    mapped = native(engine, {feature: value})
    if expected[engine] == NO:
        assert feature in mapped.missing and mapped.missing[feature]
        assert mapped.config == BASE.get(engine, {})
        return
    assert not mapped.missing
    assert mapped.config == {**BASE.get(engine, {}), **expected[engine]}


def test_parallel_features_that_read_each_other():
    # vLLM's expert parallelism is a switch over data x tensor ranks, not a size
    assert native("vllm", {"tensor_parallel": 8, "expert_parallel": 8}).config == {
        "tensor-parallel-size": 8,
        "enable-expert-parallel": True,
    }
    odd = native("vllm", {"tensor_parallel": 8, "expert_parallel": 4})
    assert "8 ranks, not 4" in odd.missing["expert_parallel"]
    # attention DP: vLLM runs data-parallel ranks of TP 1; SGLang an attention-DP size
    dp = {"tensor_parallel": 4, "attention_dp": True}
    assert native("vllm", dp).config == {"data-parallel-size": 4, "tensor-parallel-size": 1}
    assert native("sglang", dp).config == {"tp-size": 4, "attn-dp-size": 4}
    assert native("trtllm", dp).config == {"tensor_parallel_size": 4, "enable_attention_dp": True}
    assert "attention_dp" in native("mlc", dp).missing
    assert "expert_parallel" in native("mlc", {"expert_parallel": 8}).missing
    # SGLang: chunking off keeps the prefill budget, without a chunk
    unchunked = native("sglang", {"chunked_prefill": False, "token_budget": 2048}).config
    assert unchunked == {"chunked-prefill-size": -1, "max-prefill-tokens": 2048}


def _everything(engine: str) -> dict:
    """One feature set using every feature an engine has an option for."""
    features = {
        "prefix_caching": True,
        "chunked_prefill": True,
        "speculative": EAGLE3 if engine != "mlc" else Speculative("draft_model", 4, "/d"),
        "fp8_kv": engine != "mlc",
        "context_length": 8192,
        "batch": 64,
        "token_budget": 8192,
        "tensor_parallel": 2,
        "pipeline_parallel": 1,
        "kv_page_size": 16,
        "kv_memory_share": 0.85,
    }
    if engine != "mlc":
        features.update(lora=Lora(16, 4), expert_parallel=2, attention_dp=True, cuda_graphs=False)
    return features


@pytest.mark.parametrize(("engine", "surface"), [("vllm", "vllm-0.33"), ("sglang", "sglang-0.5")])
def test_generated_configs_use_fields_of_the_release(engine, surface):
    fields = load_surface(surface)
    for value in (True, False):
        config = native(engine, {"prefix_caching": value, "cuda_graphs": value}).config
        fields.check_keys(config)
    mapped = native(engine, _everything(engine))
    assert not mapped.missing
    resolved = fields.check_keys(mapped.config)  # raises UnknownFields naming any bad key
    for key, found in resolved.items():
        assert not found.negated, key
        assert not found.field.deprecated, f"{key}: a deprecated flag the --config merger refuses"
        if found.field.choices is not None and not isinstance(mapped.config[key], bool):
            value = mapped.config[key]
            for item in value if isinstance(value, list) else [value]:
                assert item in found.field.choices, key
    if engine == "vllm":
        assert "'fp8'" in fields.lookup("kv-cache-dtype").type
        assert 16 in fields.lookup("max-lora-rank").choices


def test_generated_trtllm_config_is_valid_for_1_2():
    config = native("trtllm", _everything("trtllm")).config
    validated = validate(config, "1.2", "pytorch", file="<compare>")
    assert validated["speculative_config"]["decoding_type"] == "Eagle3"
    for kind in ("ngram", "mtp"):
        spec = native("trtllm", {"speculative": Speculative(kind, 3)}).config
        validate(spec, "1.2", "pytorch", file="<compare>")
    validate(native("trtllm", {"cuda_graphs": True}).config, "1.2", "pytorch", file="<compare>")


def test_generated_mlc_config_reads_as_mlc():
    parsed = mlc.read(native("mlc", _everything("mlc")).config)
    assert parsed.mode == "server"
    names = {c.name for c in parsed.claims}
    assert {"mlc.speculative_mode", "mlc.max_num_sequence", "mlc.prefill_chunk_size"} <= names


# ------------------------------------------------------------------------ the intent
def test_intent_reads_hard_and_soft_features():
    intent = parse_intent(
        {
            "model": "llama-3.1-8b",
            "device": "H100-80GB",
            "gpus": 2,
            "hard": {"prefix_caching": True, "lora": {"max_rank": 16, "adapters": 2}},
            "soft": {"speculative": {"kind": "ngram", "draft_tokens": 3}, "kv_memory_share": 0.8},
        }
    )
    assert intent.hard == {"prefix_caching": True, "lora": Lora(16, 2)}
    assert intent.soft == {"speculative": Speculative("ngram", 3), "kv_memory_share": 0.8}
    assert intent.model.endswith("llama-3.1-8b.json") and intent.gpus == 2
    assert intent.strength("lora") == "hard" and intent.strength("speculative") == "soft"
    assert list(intent.features) == ["prefix_caching", "lora", "speculative", "kv_memory_share"]


def test_bad_intent_names_every_problem_at_once():
    with pytest.raises(IntentError) as caught:
        parse_intent(
            {
                "modle": "x",
                "device": "H1000",
                "gpus": 0,
                "hard": {
                    "prefix_cache": True,
                    "batch": True,
                    "speculative": {"kind": "eagle3", "draft_tokens": 100},
                    "kv_memory_share": 1.5,
                },
                "soft": {"fp8kv": True, "lora": {"max_rank": 8, "adapter": 2}, "batch": 4},
            }
        )
    problems = {p.path: p for p in caught.value.problems}
    assert set(problems) == {
        "modle",
        "device",
        "gpus",
        "hard.prefix_cache",
        "hard.batch",
        "hard.speculative.draft_tokens",
        "hard.speculative.draft_model",
        "hard.kv_memory_share",
        "soft.fp8kv",
        "soft.lora.adapter",
        "soft.lora.adapters",
        "soft.batch",
    }
    assert problems["modle"].suggestions == ("model",)
    assert problems["hard.prefix_cache"].suggestions[0] == "prefix_caching"
    assert problems["soft.fp8kv"].suggestions == ("fp8_kv",)
    assert problems["hard.batch"].allowed == "an integer from 1 to 16777216"
    assert "1 to 64" in problems["hard.speculative.draft_tokens"].allowed
    assert problems["hard.kv_memory_share"].allowed == "a number above 0 and at most 1"
    assert "H100-80GB" in problems["device"].suggestions
    assert "either hard or soft" in problems["soft.batch"].reason
    text = str(caught.value)
    assert text.count("\n") == len(problems) and "did you mean 'fp8_kv'?" in text


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({}, "hard", "asks for no feature"),
        ({"hard": [1]}, "hard", "expected a mapping"),
        ({"hard": {"speculative": "ngram"}}, "hard.speculative", "expected a mapping"),
        (
            {"hard": {"speculative": {"kind": "medusa", "draft_tokens": 2}}},
            "hard.speculative.kind",
            "unknown",
        ),
        ({"hard": {"lora": {"max_rank": 0, "adapters": 1}}}, "hard.lora.max_rank", "bad value"),
        ({"hard": {"batch": 1}, "model": "llama-3.1-9b"}, "model", "no such config.json"),
        ({"hard": {"batch": 1}, "device": 7}, "device", "catalog device"),
        ({"hard": {"cuda_graphs": "off"}}, "hard.cuda_graphs", "bad value"),
        (
            {"hard": {"speculative": {"kind": "ngram", "draft_tokens": 2, "draft_model": "x"}}},
            "hard.speculative.draft_model",
            "ngram takes no draft model",
        ),
    ],
)
def test_bad_values_name_the_path_and_domain(data, path, words):
    with pytest.raises(IntentError) as caught:
        parse_intent(data)
    assert caught.value.problems[0].path == path
    assert words in str(caught.value)


def test_intent_files_and_overrides(tmp_path):
    from arbiter.compare import read_intent

    model = tmp_path / "m" / "config.json"
    model.parent.mkdir()
    model.write_text((FIXTURES / "llama-3.1-8b.json").read_text())
    intent_file = tmp_path / "intent.yaml"
    intent_file.write_text("model: m/config.json\nhard: {batch: 8}\n")
    intent = read_intent(intent_file)
    assert intent.model == str(model)  # relative to the intent file
    assert read_intent(intent_file, model="qwen2.5-7b", gpus=4).gpus == 4
    assert read_intent(intent_file, model="qwen2.5-7b").model.endswith("qwen2.5-7b.json")
    missing = tmp_path / "nope.yaml"
    with pytest.raises(IntentError, match="cannot read"):
        read_intent(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"hidden_size": 64}')
    with pytest.raises(IntentError) as caught:
        read_intent(intent_file, model=str(broken))
    assert caught.value.problems[0].path.startswith("model")
    assert "cannot be read" in str(caught.value)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(IntentError, match="expected an object"):
        read_intent(listed)
