"""`arbiter check FILE --dialect sglang [--serve-args ...] [--model] [--device] [--gpus]`:
exit 0 (holds, possibly with SGLang's adjustments), 1 (conflict), 2 (bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.cli import app

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / "sglang"
LLAMA = str(ROOT / "examples" / "models" / "llama-3-8b.json")
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["check", *args, "--dialect", "sglang"])


def test_adjusted_config_exits_0_with_the_rule():
    result = run(str(EXAMPLES / "eagle_chain_h100.yaml"), "--model", LLAMA, "--device", "H100-80GB")
    assert result.exit_code == 0, result.output
    assert "speculative-num-draft-tokens: 8 -> 4" in result.output
    assert "sglang.eagle-topk1-draft-tokens" in result.output
    assert "SGLang derives max_running_requests = 48" in result.output
    assert "speculative-num-draft-tokens: 4" in result.output  # written back rewritten
    assert "profile: sglang-0.5" in result.output


def test_attention_dp_example_needs_its_gpus():
    path = str(EXAMPLES / "attn_dp_4xh100.yaml")
    ok = run(path, "--model", LLAMA, "--device", "H100-80GB", "--gpus", "4")
    assert ok.exit_code == 0, ok.output
    assert "chunked-prefill-size: 8192 -> 2048" in ok.output
    short = run(path, "--model", LLAMA, "--device", "H100-80GB", "--gpus", "1")
    assert short.exit_code == 1, short.output  # a conflict through the machine rule
    assert "machine.parallel-fits-devices" in short.output
    # the numbers in SGLang's words, and the fix the GPU count allows
    assert "GPUs [=1] x nodes [=1] must be >= tp-size [=4] x pp-size [=1] = 4" in short.output
    assert "1. pass --gpus 4" in short.output


def test_a_launch_over_two_nodes_counts_the_gpus_of_both(tmp_path):
    path = tmp_path / "two_nodes.yaml"
    path.write_text("tp-size: 16\nnnodes: 2\nnode-rank: 0\ndist-init-addr: 10.0.0.1:5000\n")
    ok = run(str(path), "--model", LLAMA, "--device", "H100-80GB", "--gpus", "8")
    assert ok.exit_code == 0, ok.output
    half = run(str(path), "--model", LLAMA, "--device", "H100-80GB", "--gpus", "4")
    assert half.exit_code == 1
    assert "machine.parallel-fits-devices" in half.output


def test_conflict_exits_1():
    result = run(str(EXAMPLES / "hicache_without_radix.yaml"), "--model", LLAMA)
    assert result.exit_code == 1
    assert "sglang.hicache-needs-radix" in result.output


def test_pd_decode_example():
    result = run(str(EXAMPLES / "pd_decode_h200.yaml"), "--model", LLAMA, "--device", "H200")
    assert result.exit_code == 0, result.output
    assert "SGLang derives disable_radix_cache = True" in result.output
    assert "mem_fraction_static = 0.929" in result.output


def test_bad_input_exits_2_naming_every_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tp-sise: 2\nmem-frac-static: 0.8\npage-size: big\n")
    result = run(str(path))
    assert result.exit_code == 2
    for text in ("tp-sise", "'tp-size'", "mem-frac-static", "page-size: expected an integer"):
        assert text in result.output


def test_serve_args_alone_and_json(tmp_path):
    result = runner.invoke(
        app,
        [
            "check",
            "--dialect",
            "sglang",
            "--serve-args",
            "python -m sglang.launch_server --model-path m --tp-size 2 --pp-size 2",
            "--gpus",
            "4",
            "--model",
            LLAMA,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["written"]["config"] == {"model-path": "m", "tp-size": 2, "pp-size": 2}
    assert data["profile"] == "sglang-0.5.23"
    assert data["capacity"]["figures"]["terms"] == "sglang"
    assert data["not_arbitrated"] == {
        "model-path": "no option of arbiter: carried through unchanged"
    }


def test_default_backend_example_moves_the_page_on_a_b200():
    result = run(str(EXAMPLES / "default_backend_b200.yaml"), "--model", LLAMA, "--device", "B200")
    assert result.exit_code == 0, result.output
    assert "page-size: 1 -> 64" in result.output
    assert "SGLang derives attention_backend = 'trtllm_mha'" in result.output


def test_fp8_e5m2_with_trtllm_mla_exits_1():
    result = run(str(EXAMPLES / "fp8_e5m2_b200.yaml"), "--model", LLAMA, "--device", "B200")
    assert result.exit_code == 1, result.output
    assert "sglang.trtllm-mla-kv-dtype" in result.output


@pytest.mark.slow  # two checks, ~1.5 s under load: the default run is at its budget
def test_fp4_kv_examples():
    """An nvfp4 PD prefill server on a B200 is refused (trtllm_mha's native block scales);
    the block-16 FP4 KV on a Hopper GPU holds on triton."""
    refused = run(
        str(EXAMPLES / "nvfp4_pd_prefill_b200.yaml"), "--model", LLAMA, "--device", "B200"
    )
    assert refused.exit_code == 1, refused.output
    assert "sglang.nvfp4-trtllm-mha-no-transfer" in refused.output
    held = run(str(EXAMPLES / "fp4_kv_triton_h100.yaml"), "--model", LLAMA, "--device", "H100-80GB")
    assert held.exit_code == 0, held.output
