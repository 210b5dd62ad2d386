"""`arbiter check` answers in the engine's own words (issue 30, item 2; D-M2, D-M3, D-L7).

- golden text of one conflict per engine (the verdict in one line, the user's keys with
  file:line, the rule's message and source, the numbers in the engine's names, fixes as
  values), regenerated with ARBITER_UPDATE_GOLDEN=1;
- no default (non --verbose) output of a shipped example, nor of a generated vLLM
  config, names an internal option path; --verbose still has the derivation;
- every value fix is verified: the input with the fix applied is accepted, and a bound
  is tight (one past it is still refused);
- a memory fraction fix never goes above the engine's safe bound;
- suggestions for a dashed key come back dashed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arbiter.check import verdict_of
from arbiter.cli import app
from arbiter.dialects.value_fixes import SAFE_FRACTION

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).parent / "golden"
LLAMA = EXAMPLES / "models/llama-3-8b.json"

# the internal sections no engine's own config has (TensorRT-LLM's LLM API does have
# kv_cache_config, quant_config, speculative_config and, for engines, build_config)
INTERNAL = re.compile(
    r"\b(?:vllm_config|sglang_config|runtime_config|parallel_config|scheduler_config|"
    r"memory_policy|llm_args)\.[a-z_]+|(?<!build_config\.)\bplugin_config\.[a-z_]+|"
    r"\bmodel\.[a-z_]+_[a-z_]+|\bdevice\.(?:count|nodes|sm|memory_mib)\b|`vllm\.|`sglang\."
)
NOT_TRTLLM = re.compile(
    r"\b(?:build_config|kv_cache_config|quant_config|speculative_config\.decoding_type)\.?"
    r"[a-z_]*\."
)


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["check", *args])


def output(result: Any) -> str:
    return result.output.replace(str(ROOT) + "/", "")  # stdout and stderr, as printed


def internal(text: str, dialect: str) -> list[str]:
    found = INTERNAL.findall(text)
    if dialect != "trtllm":
        found += [m for m in re.findall(r"\b(?:build_config|kv_cache_config)\.[a-z_]+", text)]
    return found


# ---------------------------------------------------------------------------- golden
MLC_PAGE = '{\n  "model": "dist/Llama-3-8B-Instruct-q0f16-MLC",\n  "kv_cache_page_size": 32\n}\n'
CASES = {
    "check_vllm_lora_budget": (
        "examples/vllm/lora-speculative-budget.yaml",
        ["--model", "meta-llama/Llama-3.1-8B-Instruct"],
    ),
    "check_sglang_hicache": (
        "examples/sglang/hicache_without_radix.yaml",
        ["--model", "examples/models/llama-3-8b.json"],
    ),
    "check_trtllm_unchunked_prompt": (
        "examples/trtllm/long_prompt_unchunked.yaml",
        ["--model", "examples/models/llama-3-8b.json"],
    ),
    "check_mlc_page_size": (
        None,
        ["--dialect", "mlc", "--model", "examples/models/llama-3-8b.json"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_conflict_per_engine_reads_in_the_engines_words(name, tmp_path, monkeypatch):
    file, args = CASES[name]
    monkeypatch.chdir(ROOT)
    if file is None:  # MLC ships no refused example: a page size its engine refuses
        path = tmp_path / "mlc-chat-config.json"
        path.write_text(MLC_PAGE, encoding="utf-8")
        file = str(path)
    result = run(file, *args)
    assert result.exit_code == 1, output(result)
    text = output(result).replace(str(tmp_path) + "/", "")
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("ARBITER_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 20  # the point, not a dump


def test_the_vllm_conflict_names_its_keys_numbers_and_value_fixes(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = run(*CASES["check_vllm_lora_budget"][0:1], *CASES["check_vllm_lora_budget"][1])
    text = output(result)
    lines = text.splitlines()
    assert lines[1] == "vLLM would refuse this config: 1 conflict"
    assert "  max-num-seqs: 256  (examples/vllm/lora-speculative-budget.yaml:6)" in lines
    assert (
        "max-num-batched-tokens [=1024] must be >= max-num-seqs [=256] x"
        " (speculative-config.num_speculative_tokens [=4] + 1) = 1280" in text
    )
    fixes = [line.strip() for line in lines if re.match(r"\s+\d+\. ", line)]
    assert fixes[:3] == [
        "1. max-num-seqs: at most 204",
        "2. max-num-batched-tokens: at least 1280",
        "3. speculative-config.num_speculative_tokens: at most 3",
    ]
    assert "4. drop enable-lora" in fixes


def test_verbose_keeps_the_derivation(monkeypatch):
    monkeypatch.chdir(ROOT)
    file, args = CASES["check_vllm_lora_budget"]
    text = output(run(file, *args, "--verbose"))
    assert "build_config.max_batch_size" in text  # arbiter's options, behind -v only
    assert "= note: setup `model` fixes" in text
    assert text.splitlines()[1] == "vLLM would refuse this config: 1 conflict"


# ---------------------------------------------------------------------------- no internal paths
def _examples() -> list[tuple[str, str, list[str]]]:
    out = []
    for dialect, pattern in (
        ("vllm", "vllm/*.yaml"),
        ("sglang", "sglang/*.yaml"),
        ("trtllm", "trtllm/*.yaml"),
        ("mlc", "mlc/*.json"),
    ):
        for path in sorted(EXAMPLES.glob(pattern)):
            out.append((dialect, str(path.relative_to(ROOT)), ["--model", str(LLAMA)]))
    return out


@pytest.mark.parametrize("dialect,file,args", _examples(), ids=lambda v: str(v))
def test_no_default_output_of_an_example_names_an_internal_path(dialect, file, args, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = run(file, "--dialect", dialect, *args)
    text = output(result)
    assert result.exit_code in (0, 1, 2), text
    assert internal(text, dialect) == [], text


VLLM_CONFIGS = st.fixed_dictionaries(
    {},
    optional={
        "max-num-seqs": st.sampled_from([1, 64, 256, 1024, 4096]),
        "max-num-batched-tokens": st.sampled_from([256, 1024, 8192]),
        "max-model-len": st.sampled_from([2048, 8192, 32768, 200000]),
        "tensor-parallel-size": st.sampled_from([1, 2, 3]),
        "gpu-memory-utilization": st.sampled_from([0.3, 0.9, 0.98]),
        "enable-lora": st.booleans(),
        "enable-prefix-caching": st.booleans(),
        "kv-cache-dtype": st.sampled_from(["auto", "fp8"]),
    },
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(config=VLLM_CONFIGS, device=st.sampled_from(["H100-80GB", "L4"]))
def test_no_default_output_of_a_generated_vllm_config_names_an_internal_path(
    config, device, tmp_path
):
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(config or {"max-num-seqs": 8}), encoding="utf-8")
    result = run(str(path), "--dialect", "vllm", "--model", str(LLAMA), "--device", device)
    text = output(result)
    assert result.exit_code in (0, 1), text
    assert internal(text, "vllm") == [], text


# ---------------------------------------------------------------------------- verified fixes
LORA = {
    "enable-lora": True,
    "max-num-seqs": 256,
    "max-num-batched-tokens": 1024,
    "speculative-config": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4},
}


def _fixes(verdict: Any) -> dict[str, Any]:
    return {f.keys[0]: f for f in verdict.engine_fixes if f.kind == "value"}


def test_value_fixes_are_accepted_when_applied_and_tight():
    v = verdict_of("vllm", LORA, model=LLAMA)
    assert v.verdict == "reject"
    fixes = _fixes(v)
    seqs, tokens = fixes["max-num-seqs"], fixes["max-num-batched-tokens"]
    assert (seqs.relation, seqs.value, seqs.given) == ("at most", 204, 256)
    assert (tokens.relation, tokens.value) == ("at least", 1280)
    assert verdict_of("vllm", {**LORA, "max-num-seqs": 204}, model=LLAMA).verdict != "reject"
    assert verdict_of("vllm", {**LORA, "max-num-seqs": 205}, model=LLAMA).verdict == "reject"
    ok = {**LORA, "max-num-batched-tokens": 1280}
    assert verdict_of("vllm", ok, model=LLAMA).verdict != "reject"
    short = {**LORA, "max-num-batched-tokens": 1279}
    assert verdict_of("vllm", short, model=LLAMA).verdict == "reject"


def test_a_parallel_size_fix_lists_the_sizes_that_work():
    v = verdict_of("vllm", {"tensor-parallel-size": 3}, model=LLAMA, device="H100-80GB", gpus=8)
    fix = _fixes(v)["tensor-parallel-size"]
    assert (fix.relation, fix.value) == ("one of", (1, 2, 4, 8))
    assert fix.text() == "tensor-parallel-size: one of 1, 2, 4, 8"
    for tp in fix.value:
        config = {"tensor-parallel-size": tp}
        assert (
            verdict_of("vllm", config, model=LLAMA, device="H100-80GB", gpus=8).verdict != "reject"
        )


def test_a_trtllm_token_budget_fix_is_a_value_that_the_engine_accepts():
    config = yaml.safe_load((EXAMPLES / "trtllm/long_prompt_unchunked.yaml").read_text())
    v = verdict_of("trtllm", config, model=LLAMA)
    fix = _fixes(v)["max_num_tokens"]
    assert (fix.relation, fix.value) == ("at least", 16384)
    assert (
        verdict_of("trtllm", {**config, "max_num_tokens": 16384}, model=LLAMA).verdict != "reject"
    )
    assert (
        verdict_of("trtllm", {**config, "max_num_tokens": 16383}, model=LLAMA).verdict == "reject"
    )


def test_too_few_gpus_is_fixed_by_passing_gpus():
    config = yaml.safe_load((EXAMPLES / "sglang/attn_dp_4xh100.yaml").read_text())
    v = verdict_of("sglang", config, model=LLAMA, device="H100-80GB", gpus=1)
    gpus = [f for f in v.engine_fixes if f.kind == "gpus"]
    assert [f.text() for f in gpus] == ["pass --gpus 4"]
    assert v.engine_fixes[0].kind == "gpus"  # the least change: the config stays
    assert verdict_of("sglang", config, model=LLAMA, device="H100-80GB", gpus=4).verdict != "reject"


# ---------------------------------------------------------------------------- memory fraction
def test_a_memory_fraction_fix_is_verified_and_below_the_safe_bound():
    config = {"gpu-memory-utilization": 0.5, "max-model-len": 8192}
    v = verdict_of("vllm", config, model=LLAMA, device="L4")
    fix = _fixes(v)["gpu-memory-utilization"]
    assert fix.relation == "at least" and 0.5 < fix.value <= SAFE_FRACTION["vllm"]
    fixed = {**config, "gpu-memory-utilization": fix.value}
    assert verdict_of("vllm", fixed, model=LLAMA, device="L4").verdict != "reject"


VOLTA = {"gpu-memory-utilization": 0.9, "max-model-len": 2048}  # 8B weights: ~97% of 16 GB


def test_no_fix_gives_the_engine_more_memory_than_its_safe_bound():
    v = verdict_of("vllm", VOLTA, model=LLAMA, device="V100-16GB")
    assert v.verdict == "reject"
    assert v.conflict.corrections == (("vllm.gpu_memory_utilization",),)  # the only one
    # the solver's drop would take 97.5% of the GPU: neither it nor a value fix is offered
    assert "gpu-memory-utilization" not in _fixes(v)
    assert all(f.kind != "drop" for f in v.engine_fixes)
    assert [f.text() for f in v.engine_fixes] == ["pass --gpus 2, with tensor-parallel-size: 2"]
    ok = {**VOLTA, "tensor-parallel-size": 2}
    assert verdict_of("vllm", ok, model=LLAMA, device="V100-16GB", gpus=2).verdict != "reject"


def test_the_value_search_stops_at_the_safe_bound(monkeypatch):
    from arbiter.dialects import DIALECTS
    from arbiter.dialects.protocol import Machine
    from arbiter.dialects.value_fixes import FRACTION, ValueSearch

    reading = DIALECTS.get_dialect("vllm").read(VOLTA, machine=Machine.read(LLAMA, "V100-16GB", 1))
    claims = reading.solved_claims()

    def search() -> Any:
        values = ValueSearch(claims, profile=reading.profile, mode=None, dialect="vllm")
        return values.search("vllm.gpu_memory_utilization", FRACTION, 0.9)

    assert search() is None  # nothing up to 0.95 holds the weights
    monkeypatch.setitem(SAFE_FRACTION, "vllm", 1.0)
    uncapped = search()  # without the bound the solver would advise more than 0.95
    assert uncapped is not None and uncapped.relation == "at least"
    assert 0.95 < uncapped.values[0] < 1.0


def test_the_safe_bounds_leave_headroom():
    assert set(SAFE_FRACTION) == {"vllm", "sglang", "trtllm", "mlc"}
    assert all(0.8 <= bound <= 0.95 for bound in SAFE_FRACTION.values())


# ---------------------------------------------------------------------------- D-L7
def test_a_dashed_typo_is_answered_with_dashes(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("enable-prefix-cachng: true\nmax_num_seqz: 8\n", encoding="utf-8")
    text = output(run(str(path), "--dialect", "vllm", "--model", str(LLAMA)))
    assert "did you mean 'enable-prefix-caching'" in text
    assert "did you mean 'max_num_seqs'" in text  # an underscored key keeps underscores
    assert "'enable_prefix_caching'" not in text
