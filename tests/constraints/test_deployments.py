"""Real deployments: a model, a machine and an engine configuration, re-authored from
public documentation, with the engine's own verdict (it serves the model, or it runs out
of memory / refuses). Our verdict must equal the engine's, and a solve that succeeds keeps
the checkpoint's quantization and the GPUs it was given.

Models are the fixtures of tests/fixtures/models/ (DeepSeek-R1 has DeepSeek-V3's
config.json; Llama-3.3-70B has Llama-3.1-70B's shape). `vllm` cases arbitrate under the
rules whose scope admits vLLM (there is no vLLM profile yet)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arbiter import ConflictError, arbitrate, func
from arbiter.dialects import machine_claims, mlc, trtllm
from constraints.rules import every_rule

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
KV_DEFAULTS = {"quant_config.kv_cache_quant_algo": None, "kv_cache_config.dtype": "auto"}
# vLLM EngineArgs defaults: gpu_memory_utilization 0.9, max_num_seqs 256,
# max_num_batched_tokens 8192, full attention
VLLM_DEFAULTS = {
    "kv_cache_config.free_gpu_memory_fraction": 0.9,
    "build_config.max_batch_size": 256,
    "build_config.max_num_tokens": 8192,
    "kv_cache_config.max_attention_window": None,
}
VLLM_RULES = [r for r in every_rule() if r.kind == "hard" and r.scope.applies("vllm")]


def model(name: str, **extra: Any) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return {**data, **extra}


LLAMA33_70B_FP8 = model(
    "llama-3.1-70b", quantization_config={"quant_method": "modelopt", "quant_algo": "FP8"}
)


@dataclass(frozen=True)
class Case:
    id: str
    model: dict[str, Any]
    device: str
    engine: str  # trtllm, vllm or mlc
    args: dict[str, Any]
    runs: bool  # the engine's verdict
    source: str
    mode: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def tp(n: int, **more: Any) -> dict[str, Any]:
    return {"tensor_parallel_size": n, **more}


CASES = [
    Case(
        "deepseek-r1-fp8-1xh200",
        model("deepseek-v3"),
        "H200",
        "trtllm",
        tp(1),
        False,
        "issue 11 (measured); DeepSeek-V3 README: 671B FP8 weights need a multi-GPU node",
    ),
    Case(
        "deepseek-r1-fp8-8xh200",
        model("deepseek-v3"),
        "8xH200",
        "trtllm",
        tp(8, max_seq_len=16384),
        True,
        "TensorRT-LLM examples/models/core/deepseek_v3/README.md: DeepSeek-R1 FP8 on 8xH200, TP8",
    ),
    Case(
        "deepseek-r1-fp8-8xb200",
        model("deepseek-v3"),
        "8xB200",
        "trtllm",
        tp(8),
        True,
        "TensorRT-LLM blog 'Pushing latency boundaries: DeepSeek-R1 on B200' (8xB200, TP8)",
    ),
    Case(
        "deepseek-r1-fp8-8xh200-vllm",
        model("deepseek-v3"),
        "8xH200",
        "vllm",
        tp(8, max_seq_len=32768),
        True,
        "vLLM recipes DeepSeek-R1: `vllm serve deepseek-ai/DeepSeek-R1 -tp 8` on 8xH200",
    ),
    Case(
        "qwen3-235b-bf16-1xh200",
        model("qwen3-235b-a22b"),
        "H200",
        "trtllm",
        tp(1),
        False,
        "issue 11 (measured): 235B bf16 weights (470 GB) exceed one 141 GB H200",
    ),
    Case(
        "qwen3-235b-bf16-8xh200-vllm",
        model("qwen3-235b-a22b"),
        "8xH200",
        "vllm",
        tp(8, max_seq_len=32768),
        True,
        "Qwen/Qwen3-235B-A22B model card: `vllm serve ... --tensor-parallel-size 8`",
    ),
    Case(
        "llama-3.3-70b-fp8-1xh200",
        LLAMA33_70B_FP8,
        "H200",
        "trtllm",
        tp(1, max_seq_len=8192),
        True,
        "nvidia/Llama-3.3-70B-Instruct-FP8 model card: TensorRT-LLM serving on one H200",
    ),
    Case(
        "llama-3.3-70b-fp8-2xh100",
        LLAMA33_70B_FP8,
        "2xH100",
        "trtllm",
        tp(2),
        True,
        "TensorRT-LLM docs/source/performance/perf-overview.md: Llama 3.3 70B FP8, H100, TP2",
    ),
    Case(
        "gpt-oss-120b-mxfp4-1xh100",
        model("gpt-oss-120b"),
        "H100",
        "trtllm",
        tp(1),
        True,
        "openai/gpt-oss-120b model card: MXFP4 weights fit a single 80 GB GPU (H100)",
    ),
    Case(
        "gpt-oss-120b-mxfp4-1xl4",
        model("gpt-oss-120b"),
        "L4",
        "trtllm",
        tp(1),
        False,
        "openai/gpt-oss-120b model card: needs an 80 GB GPU (61 GiB of weights > 24 GB L4)",
    ),
    Case(
        "mixtral-8x7b-bf16-1xl4",
        model("mixtral-8x7b"),
        "L4",
        "trtllm",
        {},
        False,
        "issue 11 (measured; the old solve added PP 8): 93 GB of bf16 weights on a 24 GB L4",
    ),
    Case(
        "mixtral-8x7b-bf16-2xh100",
        model("mixtral-8x7b"),
        "2xH100",
        "trtllm",
        tp(2),
        True,
        "TensorRT-LLM examples/models/core/mixtral/README.md: Mixtral 8x7B bf16 with TP2",
    ),
    Case(
        "llama-3.1-8b-bf16-1xl4",
        model("llama-3.1-8b"),
        "L4",
        "vllm",
        {"max_seq_len": 8192},
        True,
        "vLLM docs (quickstart, 24 GB GPUs): Llama-3.1-8B bf16 with max_model_len 8192",
    ),
    Case(
        "llama-3.1-8b-bf16-1xl4-128k-vllm",
        model("llama-3.1-8b"),
        "L4",
        "vllm",
        {"max_seq_len": 131072},
        False,
        "vLLM check_enough_kv_cache_memory: max_model_len 131072 needs 16 GiB of KV, more than an L4 has left",
    ),
    Case(
        "llama-3.1-8b-bf16-1xl4-128k-trtllm",
        model("llama-3.1-8b"),
        "L4",
        "trtllm",
        {"max_seq_len": 131072},
        True,
        "TensorRT-LLM trtGptModelInflightBatching.cpp: the window is clamped to fit (warning)",
    ),
    Case(
        "llama-3.1-70b-bf16-1xh100",
        model("llama-3.1-70b"),
        "H100",
        "trtllm",
        tp(1),
        False,
        "Meta Llama 3.1 model card / blog: 70B bf16 (141 GB) needs more than one 80 GB GPU",
    ),
    Case(
        "llama-3.1-70b-bf16-4xh100",
        model("llama-3.1-70b"),
        "4xH100",
        "trtllm",
        tp(4),
        True,
        "TensorRT-LLM examples/models/core/llama/README.md: Llama-3.1-70B with TP4",
    ),
    Case(
        "llama-3.1-405b-fp8-8xh100",
        model("llama-3.1-405b", quantization_config={"quant_method": "fbgemm_fp8"}),
        "8xH100",
        "vllm",
        tp(8, max_seq_len=8192),
        True,
        "meta-llama/Llama-3.1-405B-Instruct-FP8 model card: FP8 fits one 8xH100 node",
    ),
    Case(
        "llama-3.1-405b-bf16-8xh100",
        model("llama-3.1-405b"),
        "8xH100",
        "trtllm",
        tp(8),
        False,
        "Meta Llama 3.1 blog: bf16 405B (810 GB) needs two 8xH100 nodes",
    ),
    Case(
        "gemma-3-27b-bf16-1xl40s",
        model("gemma-3-27b"),
        "L40S",
        "trtllm",
        tp(1),
        False,
        "Gemma 3 docs (memory requirements): 27B bf16 needs about 54 GB, over a 48 GB L40S",
    ),
    Case(
        "gemma-3-27b-bf16-1xh100",
        model("gemma-3-27b"),
        "H100",
        "vllm",
        {"max_seq_len": 32768},
        True,
        "vLLM recipes Gemma 3: 27B bf16 on one H100",
    ),
    Case(
        "gemma-2-27b-bf16-1xa100",
        model("gemma-2-27b"),
        "A100-80GB",
        "vllm",
        {"max_seq_len": 8192},
        True,
        "google/gemma-2-27b model card: bf16 on one 80 GB A100/H100",
    ),
    Case(
        "llama-4-scout-bf16-1xh100",
        model("llama-4-scout"),
        "H100",
        "trtllm",
        tp(1),
        False,
        "Meta Llama 4 announcement: Scout fits one H100 only with int4 quantization",
    ),
    Case(
        "llama-4-scout-bf16-8xh100",
        model("llama-4-scout"),
        "8xH100",
        "vllm",
        tp(8, max_seq_len=131072),
        True,
        "vLLM blog 'Llama 4 in vLLM': Scout bf16 on 8xH100 (1M context in the blog)",
    ),
    Case(
        "kimi-k2-fp8-8xh100",
        model("kimi-k2"),
        "8xH100",
        "trtllm",
        tp(8),
        False,
        "moonshotai/Kimi-K2 docs/deploy_guidance.md: FP8 weights need a 16-GPU H200/H20 unit",
    ),
    Case(
        "kimi-k2-fp8-16xh200",
        model("kimi-k2"),
        "H200",
        "vllm",
        tp(16, max_seq_len=32768),
        True,
        "moonshotai/Kimi-K2 docs/deploy_guidance.md: vLLM TP16 on two 8xH200 nodes",
        extra={"nodes": 2, "count": 8},
    ),
    Case(
        "qwen3-next-80b-bf16-4xh100",
        model("qwen3-next-80b-a3b"),
        "4xH100",
        "vllm",
        tp(4, max_seq_len=65536),
        True,
        "Qwen/Qwen3-Next-80B-A3B-Instruct model card: `vllm serve ... --tensor-parallel-size 4`",
    ),
    Case(
        "qwen2.5-7b-bf16-1xl4",
        model("qwen2.5-7b"),
        "L4",
        "vllm",
        {"max_seq_len": 8192},
        True,
        "Qwen2.5 docs (vLLM deployment): 7B bf16 on one 24 GB GPU",
    ),
    Case(
        "llama-3-8b-q4f16_1-mlc-l4",
        {
            "model_type": "llama",
            "quantization": "q4f16_1",
            "model_config": {
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_attention_heads": 32,
                "num_hidden_layers": 32,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "vocab_size": 128256,
                "context_window_size": 8192,
            },
        },
        "L4",
        "mlc",
        {"mode": "server"},
        True,
        "mlc-ai/Llama-3-8B-Instruct-q4f16_1-MLC mlc-chat-config.json; MLC docs: serve on 24 GB GPUs",
    ),
]


def solve(case: Case):
    from constraints.facts import DeviceSpec

    dev = DeviceSpec.named(case.device)
    if case.extra:
        dev = DeviceSpec.named(case.device, case.extra["count"], case.extra["nodes"])
    if case.engine == "mlc":
        parsed = mlc.read(dict(case.args))
        return arbitrate(
            [*parsed.claims, *machine_claims(case.model, dev, parsed.claims)],
            profile="mlc",
            mode=parsed.mode,
        )
    parsed = trtllm.read(dict(case.args), defaults=case.engine == "trtllm")
    claims = [*parsed.claims, *machine_claims(case.model, dev, parsed.claims)]
    # what the deployment left unset runs at the engine's default: a KV cache in the
    # model's dtype (neither engine quantizes it unless told)
    claims.append(func("engine.kv_dtype", KV_DEFAULTS))
    if case.engine == "vllm":
        claims.append(func("vllm.defaults", VLLM_DEFAULTS))
        return arbitrate(claims, rules=VLLM_RULES)
    return arbitrate(claims)


def test_at_least_twenty_cases_with_sources():
    assert len(CASES) >= 20 and len({c.id for c in CASES}) == len(CASES)
    assert all(c.source for c in CASES)
    assert {c.runs for c in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_our_verdict_is_the_engines(case):
    from constraints.facts import ModelSpec

    spec = ModelSpec.from_hf_config(case.model)
    if not case.runs:
        with pytest.raises(ConflictError) as err:
            solve(case)
        assert "memory" in str(err.value)
        return
    resolution = solve(case)
    v = resolution.values
    # the checkpoint's quantization is kept, and no GPU appeared
    assert v["quant_config.quant_algo"] == (spec.quant.quant_algo if spec.quant else None)
    gpus = v["device.count"] * v["device.nodes"]
    assert (
        v["parallel_config.tensor_parallel_size"] * v["parallel_config.pipeline_parallel_size"]
        <= gpus
    )
