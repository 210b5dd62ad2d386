"""Every engine configuration shipped under `examples/`, with the facts its README checks
it against: the one table the contract tests (`test_json_contract.py`) walk.

A case is (file under examples/, the `arbiter check` options after FILE). The TensorRT-LLM
and MLC cases are `tests/arbiter/test_examples.py`'s (their profiles included); the vLLM
and SGLang ones are the commands of `examples/vllm/README.md` and
`examples/sglang/README.md`. `NOT_CONFIGS` are the files under examples/ that are no engine
configuration (models, claims, intents, sweeps, a draft model, READMEs).
"""

from __future__ import annotations

from pathlib import Path

from tests.arbiter.test_examples import CASES, PROFILE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LLAMA_31 = str(ROOT / "tests/fixtures/models/llama-3.1-8b.json")
LLAMA_3 = str(EXAMPLES / "models/llama-3-8b.json")


def _trtllm_mlc() -> list[tuple[str, list[str]]]:
    out = []
    for file, dialect, model, device, engine, _, _ in CASES:
        args = ["--dialect", dialect, "--device", device]
        if file in PROFILE:
            args += ["--profile", PROFILE[file]]
        if model:
            args += ["--model", str(EXAMPLES / model)]
        if engine:
            args += ["--engine", str(EXAMPLES / engine)]
        out.append((file, args))
    return out


_VLLM = ["--dialect", "vllm", "--model", LLAMA_31, "--device", "H100"]
_SGLANG = ["--dialect", "sglang", "--model", LLAMA_3]

# (file, options); the two vLLM refusals that take about 2 s each are `SLOW`
CASES_ALL: list[tuple[str, list[str]]] = [
    *_trtllm_mlc(),
    ("vllm/llama-3.1-8b-h100.yaml", _VLLM),
    ("vllm/no-chunking-short-budget.yaml", _VLLM),
    ("vllm/lora-speculative-budget.yaml", _VLLM),
    ("vllm/typos.yaml", _VLLM),
    (
        "vllm/eagle3-mixtral.yaml",
        ["--dialect", "vllm", "--model", str(ROOT / "tests/fixtures/models/mixtral-8x7b.json")]
        + ["--device", "H100", "--gpus", "2"],
    ),
    ("vllm/draft-other-vocabulary.yaml", _VLLM),
    ("vllm/async-pp-v1-runner.yaml", [*_VLLM, "--gpus", "2"]),
    (
        "vllm/quantization-not-the-checkpoints.yaml",
        [
            "--dialect",
            "vllm",
            "--model",
            str(ROOT / "tests/fixtures/models/deepseek-r1-0528-fp8.json"),
        ]
        + ["--device", "H200", "--gpus", "8"],
    ),
    ("sglang/eagle_chain_h100.yaml", [*_SGLANG, "--device", "H100-80GB"]),
    ("sglang/attn_dp_4xh100.yaml", [*_SGLANG, "--device", "H100-80GB", "--gpus", "4"]),
    ("sglang/hicache_without_radix.yaml", _SGLANG),
    ("sglang/fa4_b200.yaml", [*_SGLANG, "--device", "B200"]),
    ("sglang/default_backend_b200.yaml", [*_SGLANG, "--device", "B200"]),
    ("sglang/fp8_e5m2_b200.yaml", [*_SGLANG, "--device", "B200"]),
    ("sglang/nvfp4_pd_prefill_b200.yaml", [*_SGLANG, "--device", "B200"]),
    ("sglang/fp4_kv_triton_h100.yaml", [*_SGLANG, "--device", "H100-80GB"]),
    ("sglang/pd_decode_h200.yaml", [*_SGLANG, "--device", "H200"]),
]
SLOW = {"vllm/async-pp-v1-runner.yaml", "vllm/quantization-not-the-checkpoints.yaml"}

NOT_CONFIGS = {
    "claims_streamingllm.yaml",
    "sweep.yaml",
    "models/",
    "compare/",
    "vllm/drafts/",
    "trtllm/engine_fp16_no_paged_fmha/config.json",  # checked as its folder
}


def example_files() -> set[str]:
    """Every engine configuration under examples/ (relative paths; a folder for an engine)."""
    out = set()
    for path in EXAMPLES.rglob("*"):
        name = path.relative_to(EXAMPLES).as_posix()
        if not path.is_file() or path.name == "README.md":
            continue
        if any(name == n or (n.endswith("/") and name.startswith(n)) for n in NOT_CONFIGS):
            continue
        out.add(name)
    return out | {"trtllm/engine_fp16_no_paged_fmha"}
