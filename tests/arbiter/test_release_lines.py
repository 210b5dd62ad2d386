"""Release lines: the line picked without --profile from the engine installed beside
arbiter (a fake distribution: `importlib.metadata.version` monkeypatched, never the
engine), the flags of one SGLang release named with the release that has them, the
release-scoped SGLang rules, and the release corpus (`tests/corpus/releases/`), each case
checked on its own profile."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import yaml

from arbiter import check
from arbiter.dialects.protocol import Machine
from arbiter.dialects.release import DISTRIBUTIONS, choose_line, line_for
from arbiter.engines.sglang import solve
from arbiter.engines.sglang.native import check_sglang
from arbiter.engines.sglang.serve import SglangArgsError, read_arguments
from arbiter.errors import DialectError
from constraints.engines.sglang.rules.sglang import RULES, chunk_for_memory
from constraints.profiles import get_profile

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "releases"
CASES = [yaml.safe_load(p.read_text()) for p in sorted(CORPUS.glob("*.yaml"))]


def _installed(monkeypatch, versions: dict[str, str]) -> None:
    """The engines' distributions as `versions` says (absent: not installed); every other
    distribution as it is."""
    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist in versions:
            return versions[dist]
        if dist in DISTRIBUTIONS.values():
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)


@pytest.mark.parametrize(
    ("engine", "default", "installed", "line"),
    [
        ("vllm", "vllm-0.33", "0.24.0", "vllm-0.24"),
        ("vllm", "vllm-0.33", "0.30.1", "vllm-0.24"),
        ("vllm", "vllm-0.33", "0.33.0", "vllm-0.33"),
        ("vllm", "vllm-0.33", "0.35.0rc1", "vllm-0.33"),
        ("sglang", "sglang-0.5.23", "0.5.16", "sglang-0.5.16"),
        ("sglang", "sglang-0.5.23", "0.5.20", "sglang-0.5.16"),
        ("sglang", "sglang-0.5.23", "0.5.23.post1", "sglang-0.5.23"),
        ("trtllm", "trtllm-1.2", "1.0.0", "trtllm-1.0"),
        ("trtllm", "trtllm-1.2", "1.3.0rc5", "trtllm-1.2"),
    ],
)
def test_installed_release_picks_the_line_at_or_below(
    monkeypatch, engine, default, installed, line
):
    dist = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}[engine]
    _installed(monkeypatch, {dist: installed})
    chosen = choose_line(engine, default)
    assert chosen.profile == line
    assert chosen.installed == installed
    assert f"(installed {installed})" in chosen.why
    assert chosen.why.startswith(f"{get_profile(line).engine_name} {get_profile(line).release}")


def test_an_engine_older_than_every_line_gets_the_oldest_and_says_so(monkeypatch):
    _installed(monkeypatch, {"vllm": "0.10.2"})
    chosen = choose_line("vllm", "vllm-0.33")
    assert chosen.profile == "vllm-0.24"
    assert "older than every line" in chosen.why


def test_without_the_engine_the_newest_line_is_said(monkeypatch):
    _installed(monkeypatch, {})
    chosen = choose_line("sglang", "sglang-0.5.23")
    assert chosen.profile == "sglang-0.5.23" and chosen.installed is None
    assert chosen.why == "the newest line; sglang not installed"
    assert line_for("sglang", "0.5.16", "sglang-0.5.23").name == "sglang-0.5.16"


def test_the_cli_reads_against_the_installed_release(monkeypatch, tmp_path):
    """`arbiter check` without --profile on vLLM 0.24 installed: the 0.24 line, said in
    the assumptions line; a 0.33-only flag is then refused naming 0.33."""
    from typer.testing import CliRunner

    from arbiter.cli import app

    _installed(monkeypatch, {"vllm": "0.24.0"})
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "check",
            "--serve-args",
            "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
        ],
    )
    assert "profile vllm-0.24 (vLLM 0.24 (installed 0.24.0))" in result.output, result.output


AIC_WORKER = (
    "python3 -m dynamo.sglang --tensor-parallel-size 2 --page-size 64 --kv-cache-dtype fp8_e4m3 "
    "--mem-fraction-static 0.85 --context-length 6500 --max-running-requests 80 "
    "--cuda-graph-bs 1 2 4 8 16 32 64 80 --trust-remote-code"
)


def test_cuda_graph_bs_is_a_0_5_16_flag_named_both_ways():
    args = read_arguments(None, AIC_WORKER, line="sglang-0.5.16")
    assert [int(b) for b in args.values["cuda_graph_bs_decode"]] == [1, 2, 4, 8, 16, 32, 64, 80]
    with pytest.raises(SglangArgsError) as err:
        read_arguments(None, AIC_WORKER, line="sglang-0.5.23")
    (problem,) = err.value.problems
    assert problem.key == "--cuda-graph-bs"
    assert (
        "an SGLang 0.5.16 flag, not one of 0.5.23; in 0.5.23 use "
        "--cuda-graph-bs-decode/--cuda-graph-bs-prefill, or --profile sglang-0.5.16"
    ) in str(problem)
    with pytest.raises(SglangArgsError) as err:
        read_arguments(None, "--tp-size 2 --attn-dp-size 2", line="sglang-0.5.16")
    assert "an SGLang 0.5.23 flag, not one of 0.5.16" in str(err.value)
    assert "--profile sglang-0.5.23" in str(err.value)


def test_the_former_profile_name_is_the_0_5_23_line():
    assert get_profile("sglang-0.5").name == "sglang-0.5.23"
    verdict = check_sglang(None, serve_args=AIC_WORKER, device="H200", gpus=2, profile="sglang-0.5")
    assert verdict.verdict == "reject"


def test_chunk_rules_are_scoped_by_release():
    rules = {r.id: r for r in RULES}
    old, new = rules["sglang.chunk-by-gpu-memory-0.5.16"], rules["sglang.chunk-by-gpu-memory"]
    p16, p23 = get_profile("sglang-0.5.16"), get_profile("sglang-0.5.23")
    assert p16.admits(old) and not p16.admits(new)
    assert p23.admits(new) and not p23.admits(old)
    assert old.source.version == "0.5.16" and new.source.version == "0.5.23"
    # the 20-35 GiB tier is where they differ (A10G: 22.5 GiB); elsewhere they agree
    assert (chunk_for_memory(23028, "0.5.16"), chunk_for_memory(23028, "0.5.23")) == (2048, 4096)
    assert chunk_for_memory(81559, "0.5.16") == chunk_for_memory(81559, "0.5.23") == 8192


def test_derived_chunk_and_fraction_follow_the_release():
    """On an A10G SGLang 0.5.16 derives a 2048-token chunk and a decode-graph ceiling of
    24 (server_args.py _handle_gpu_memory_settings), 0.5.23 4096 and 48 (memory_hook.py):
    reserved 512 + 1.5 x 2048 + 128 + 2 x 24 = 3760 MiB against 512 + 1.5 x 4096 + 128
    + 2 x 48 = 6880 MiB, plus the prefill CUDA graphs' reserve (reserve_for_graph_mb, in
    both: 8 MiB per captured size up to the chunk, 42 sizes up to 2048 on 0.5.16: 336 MiB,
    50 up to 4096 on 0.5.23: 400 MiB); 0.5.16's fraction as its own ServerArgs derived it
    (benchmarks/oracle_sglang.py, 0.5.16 wheel: 0.822)."""
    res16, _ = solve({"tp-size": 1}, device="A10G", gpus=1, profile="sglang-0.5.16")
    res23, _ = solve({"tp-size": 1}, device="A10G", gpus=1, profile="sglang-0.5.23")
    chunk = "sglang_config.chunked_prefill_size"
    fraction = "kv_cache_config.free_gpu_memory_fraction"
    assert (res16.values[chunk], res23.values[chunk]) == (2048, 4096)
    assert res16.values[fraction] == round((23028 - 3760 - 336) / 23028, 3) == 0.822
    assert res23.values[fraction] == round((23028 - 6880 - 400) / 23028, 3)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_release_corpus_case(case):
    """Each case on its own release line, with the verdict that release's own code gave."""
    model = str(FIXTURES / f"{case['model']}.json") if case["model"] else None
    machine = Machine.read(model, case["device"], case["gpus"])
    try:
        verdict = check(
            case["engine"],
            case.get("config"),
            serve_args=case.get("serve_args"),
            machine=machine,
            profile=case["profile"],
        )
    except DialectError as err:  # the input's own refusal, as the engine's parser gives it
        assert case["verdict"] == "reject", str(err)
        assert case["reject"] in str(err)
        return
    assert verdict.profile == get_profile(case["profile"]).name
    assert verdict.verdict == case["verdict"], (verdict.reasons, verdict.changes)
    if case["verdict"] == "reject":
        assert any(case["reject"] in r for r in verdict.reasons), verdict.reasons


def test_release_corpus_covers_both_lines_of_one_command():
    assert {c["profile"] for c in CASES} >= {"sglang-0.5.16", "sglang-0.5.23", "vllm-0.24"}
    commands = [c["serve_args"] for c in CASES if c.get("serve_args")]
    assert len(set(commands)) < len(commands)
    for case in CASES:
        prov = case["provenance"]
        assert prov["repo"] and prov["path"] and prov["ref"] and case["why"]


@pytest.mark.parametrize("release", ["0.24", "0.33"])
def test_batch_tier_is_the_release_wheels(release):
    """The `vllm serve` budget and sequence limit per device are the rows each wheel's own
    `EngineArgs.get_batch_defaults` gave (the field list's `derived` table): 0.24 has no
    160 GiB tier, so a B200 gets 8192 tokens there and 16384 on 0.33."""
    from arbiter.dialects.surface import load_surface
    from arbiter.engines.vllm.defaults import batch_tier

    derived = load_surface(f"vllm-{release}").derived
    catalog = {
        "NVIDIA A100-SXM4-80GB": "A100-80GB",
        "NVIDIA H100 80GB HBM3": "H100",
        "NVIDIA H200": "H200",
        "NVIDIA B200": "B200",
    }
    checked = 0
    for row in derived["max_num_batched_tokens"].cases:
        when = row["when"]
        if "API_SERVER" not in str(when["usage_context"]).upper() or when["device"] not in catalog:
            continue
        tier = batch_tier(int(when["memory_gib"] * 1024), when["device"], None, release)
        assert tier.max_num_batched_tokens == row["value"], (release, when)
        checked += 1
    assert checked == 4


@pytest.mark.parametrize(
    ("flags", "fraction"),
    [
        ("", 0.822),
        ("--cuda-graph-bs 1 2 4 8 16 32", 0.821),
        ("--cuda-graph-max-bs 512", 0.78),
    ],
)
def test_0_5_16_static_fraction_follows_its_capture_sizes(flags, fraction):
    """The static fraction SGLang 0.5.16's own `ServerArgs` derived on an A10G (23028 MiB,
    Llama-3.1-8B, its prefill CUDA graphs on as on a GPU; run on the 0.5.16 wheel with
    benchmarks/oracle_sglang.py's CPU shims, patch 8): its deprecated `--cuda-graph-bs` sets
    the decode capture sizes, whose largest is the graph ceiling of the reserve, and
    `--cuda-graph-max-bs` the ceiling itself."""
    res, _ = solve(
        None, serve_args=f"--tp-size 1 {flags}", device="A10G", gpus=1, profile="sglang-0.5.16"
    )
    assert res.values["kv_cache_config.free_gpu_memory_fraction"] == fraction
