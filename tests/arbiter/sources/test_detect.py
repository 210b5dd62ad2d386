"""Detection of single sources: each kind of file, command lines, and the sentences the
CLI prints for a wrong dialect or a wrong command."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.sources import command_message, detect, dialect_hint, mismatch_message

ROOT = Path(__file__).parents[3]
# the newcomer's own vLLM config (shared/reference/newcomer-review-3.md, D-H1 and D-M4)
NEWCOMER_VLLM = {
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "tensor-parallel-size": 2,
    "gpu-memory-utilization": 0.92,
    "max-model-len": 131072,
    "max-num-seqs": 512,
    "max-num-batched-tokens": 16384,
    "enable-prefix-caching": True,
    "enable-chunked-prefill": True,
    "kv-cache-dtype": "fp8",
}


def test_the_newcomers_vllm_yaml_is_named_and_the_default_dialect_is_refused() -> None:
    found = detect(NEWCOMER_VLLM)
    assert (found.kind, found.dialect) == ("engine-config", "vllm")
    assert found.confidence > 0.5
    assert any("max-num-seqs" in e for e in found.evidence)
    assert mismatch_message(found, "trtllm") == (
        "this looks like a `vllm serve` config: --dialect vllm"
    )
    assert mismatch_message(found, "vllm") is None


def test_an_engine_config_given_to_solve_is_named() -> None:
    found = detect(NEWCOMER_VLLM)
    assert command_message(found, "solve") == (
        "an engine config (a `vllm serve` config): use `arbiter check`"
    )
    assert command_message(found, "check") is None


def test_a_claims_file_given_to_check_is_named() -> None:
    found = detect(ROOT / "examples" / "claims_streamingllm.yaml")
    assert found.kind == "claims"
    assert command_message(found, "check") == "an `arbiter solve` claims file: use `arbiter solve`"
    assert command_message(found, "solve") is None
    listed = detect([{"kind": "func", "name": "x", "requires": {"a": 1}}])  # type: ignore[list-item]
    assert listed.kind == "claims"


def test_a_claims_list_text_is_claims() -> None:
    found = detect(
        "- {kind: perf, name: reuse, requires: {kv_cache_config.enable_block_reuse: true}}\n"
    )
    assert found.kind == "claims"


def test_a_model_config_is_told_to_be_passed_as_model() -> None:
    found = detect(ROOT / "examples" / "models" / "llama-3-8b.json")
    assert found.kind == "model"
    assert (
        command_message(found, "check") == "a Hugging Face model config.json: pass it as `--model`"
    )


def test_a_built_engine_config() -> None:
    found = detect(ROOT / "examples" / "trtllm" / "engine_fp16_no_paged_fmha" / "config.json")
    assert (found.kind, found.dialect) == ("trtllm-engine", "trtllm")
    assert "--engine" in str(command_message(found, "check"))


def test_intent_and_grid() -> None:
    assert detect(ROOT / "examples" / "compare" / "chat.yaml").kind == "intent"
    assert detect(ROOT / "examples" / "sweep.yaml").kind == "grid"
    assert command_message(detect(ROOT / "examples" / "sweep.yaml"), "check") == (
        "an `arbiter sweep` grid: use `arbiter sweep`"
    )


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "{}"])
def test_empty(text: str) -> None:
    found = detect(text)
    assert found.kind == "empty"
    assert found.dialect is None


@pytest.mark.parametrize(
    ("line", "dialect"),
    [
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2", "vllm"),
        ("python -m sglang.launch_server --model-path m --tp-size 2", "sglang"),
        ("python3 -m sglang.launch_server --model-path m", "sglang"),
        ("/usr/bin/python3.11 -u -m vllm.entrypoints.openai.api_server --model m", "vllm"),
        ("trtllm-serve meta-llama/Llama-3.1-8B --tp_size 2", "trtllm"),
        ("trtllm-serve serve m --backend pytorch", "trtllm"),
        ("mlc_llm serve HF://mlc-ai/Llama-3-8B-Instruct-q4f16_1-MLC --mode server", "mlc"),
        ("env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve m", "vllm"),
        ("sh -c 'pip list; exec vllm serve m --max-num-seqs 8'", "vllm"),
        # no launcher: told by the option names
        ("--max-num-seqs 64 --gpu-memory-utilization 0.9", "vllm"),
        ("--mem-fraction-static 0.8 --tp-size 2", "sglang"),
        ("--tp 8 --max_batch_size 256", "trtllm"),
    ],
)
def test_command_lines(line: str, dialect: str) -> None:
    found = detect(line)
    assert found.kind == "serve-command"
    assert found.dialect == dialect, str(found)


def test_a_command_line_as_words() -> None:
    found = detect(["vllm", "serve", "m", "--max-num-seqs", "8"])
    assert found.dialect == "vllm"
    assert found.evidence == ("the launcher `vllm serve`",)


def test_a_tie_asks_for_the_dialect() -> None:
    found = detect({"kv-cache-dtype": "fp8_e5m2"})
    assert found.dialect is None
    assert set(found.candidates) == {"vllm", "sglang"}
    assert dialect_hint(found) == "could be vLLM or SGLang: pass --dialect vllm or --dialect sglang"
    assert mismatch_message(found, "vllm") is None  # a tie that includes the given dialect


def test_values_break_a_tie_only_where_both_list_them() -> None:
    # kv-cache-dtype: both take fp8_e5m2, so it alone ties; mxfp8 is SGLang's alone (vLLM's
    # CacheConfig takes only its literals); int8 neither lists, so it says nothing
    assert detect({"kv-cache-dtype": "fp8_e5m2"}).dialect is None
    assert detect({"kv-cache-dtype": "mxfp8"}).dialect == "sglang"
    assert detect({"kv-cache-dtype": "int8"}).dialect is None
    assert detect({"max-lora-rank": 48}).dialect is None  # vLLM lists ranks, SGLang none


def test_spelling_decides_between_accepted_aliases() -> None:
    # SGLang accepts --tensor-parallel-size as an alias of tp-size; vLLM writes it so
    assert detect({"tensor-parallel-size": 4}).dialect == "vllm"
    assert detect({"tp-size": 4}).dialect == "sglang"
    # underscores: TensorRT-LLM writes them, vLLM and SGLang only accept them
    assert detect({"tensor_parallel_size": 4, "pipeline_parallel_size": 2}).dialect == "trtllm"


def test_nested_sections_count() -> None:
    found = detect({"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3}})
    assert found.dialect == "trtllm"
    assert any("decoding_type" in e for e in found.evidence)


def test_mlc_engine_config_and_trtllm_yaml_text() -> None:
    mlc = detect('{"model": "dist/x", "mode": "server", "max_num_sequence": 4}')
    assert mlc.dialect == "mlc"
    trt = detect("kv_cache_config:\n  enable_block_reuse: true\nbackend: pytorch\n")
    assert trt.dialect == "trtllm"


def test_unknown_keys_lean_on_the_closest_name() -> None:
    found = detect({"max-num-batch-tokens": 8192})  # examples/vllm/typos.yaml's typo
    assert found.dialect == "vllm"
    assert "max_num_batched_tokens" in found.evidence[0]
    nothing = detect({"completely_unrelated_words": 1})
    assert nothing.dialect is None and not nothing.candidates
    assert "field of no engine" in nothing.evidence[0]


def test_text_that_is_neither() -> None:
    found = detect("'unbalanced")
    assert found.kind == "unknown"


def test_a_manifest_text() -> None:
    found = detect("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    assert found.kind == "manifest"
    assert command_message(found, "check") is None


def test_a_model_folder_given_as_the_config_is_named(tmp_path: Path) -> None:
    # D-M4: "a Hugging Face model folder passed as the config gives 'an engine config.json
    # needs a build_config', not 'pass it as --model'"
    (tmp_path / "config.json").write_text(
        (ROOT / "examples" / "models" / "llama-3-8b.json").read_text()
    )
    found = detect(tmp_path)
    assert found.kind == "model"
    assert (
        command_message(found, "check") == "a Hugging Face model config.json: pass it as `--model`"
    )
    assert detect(tmp_path / "missing.yaml").kind == "unknown"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "without a config.json" in detect(empty).evidence[0]


def test_an_sglang_launch_line_under_the_vllm_dialect_is_named() -> None:
    # D-M4: `-d vllm --serve-args "python -m sglang.launch_server --model-path m --tp-size 2"`
    found = detect("python -m sglang.launch_server --model-path m --tp-size 2")
    assert mismatch_message(found, "vllm") == (
        "this looks like a SGLang serve command line: --dialect sglang"
    )


@pytest.mark.parametrize(
    ("value", "dialect"),
    [("fa3", "sglang"), ("triton", "sglang"), ("FLASH_ATTN", "vllm"), ("flash_attn", "vllm")],
)
def test_attention_backend_values_tell_vllm_from_sglang(value: str, dialect: str) -> None:
    # vLLM reads the value as an AttentionBackendEnum name in any case; SGLang lists its own
    found = detect({"attention-backend": value})
    assert found.dialect == dialect, str(found)
    assert any("lists and" in e for e in found.evidence)


def test_attention_backend_both_engines_take_stays_a_tie() -> None:
    assert set(detect({"attention-backend": "flashinfer"}).candidates) == {"vllm", "sglang"}
    assert detect({"attention-backend": "flash"}).dialect is None  # neither lists it
