"""How close arbiter's KV capacity for the vllm-0.33 profile comes to vLLM's own.

vLLM sizes its KV cache as `total x gpu_memory_utilization - (weights + peak activations +
non-torch memory, profiled) - CUDA-graph estimate` (vllm/v1/worker/gpu_worker.py
determine_available_memory, v0.33.0); arbiter computes `total x gpu_memory_utilization -
weights - activation workspace` (constraints/shared/rules/memory.py). The reference figures are
vLLM's own start-up lines ("Available KV cache memory", or the profiler's "the rest of
the memory reserved for KV Cache") from public logs, each run with the same command:

    PYTHONPATH=$PWD python benchmarks/vllm_memory.py
"""

from __future__ import annotations

import json
from pathlib import Path

from arbiter import verdict_of

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
GIB = 1 << 30


def _gpt_oss_20b() -> dict:
    # gpt-oss-20b is gpt-oss-120b's architecture with 24 layers and 32 experts
    # (OpenAI gpt-oss model card, table 1: 20.91B total, 3.61B active parameters)
    cfg = json.loads((MODELS / "gpt-oss-120b.json").read_text())
    cfg.update(num_hidden_layers=24, num_local_experts=32)
    cfg["_provenance"] = {**cfg["_provenance"], "params": 20_910_000_000}
    cfg["_provenance"]["active_params"] = 3_610_000_000
    if "layer_types" in cfg:
        cfg["layer_types"] = cfg["layer_types"][:24]
    return cfg


def _distill_qwen_14b() -> dict:
    # deepseek-ai/DeepSeek-R1-Distill-Qwen-14B config.json (Qwen2.5-14B shape)
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 5120,
        "intermediate_size": 13824,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "vocab_size": 152064,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    }


def _qwen3_235b_fp8() -> dict:
    cfg = json.loads((MODELS / "qwen3-235b-a22b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    return cfg


# (name, model, device, gpus, vllm serve arguments, vLLM's KV GiB per GPU, where, release)
CASES = [
    (
        "gpt-oss-20b, A100-80GB",
        _gpt_oss_20b(),
        "A100-80GB",
        1,
        {"max-model-len": 131072, "gpu-memory-utilization": 0.65},
        36.56,
        "myoceane.fr/index.php/ai-vllm-a100-gemma-4 (start-up log)",
        "0.19.0",
    ),
    (
        "DeepSeek-R1-Distill-Qwen-14B, 2 x RTX 4090, TP 2",
        _distill_qwen_14b(),
        "RTX-4090",
        2,
        # the logged run refused the model's 131072 tokens ("larger than the maximum number
        # of tokens that can be stored in KV cache"), as arbiter does; a shorter length
        # leaves the pool's size unchanged
        {"tensor-parallel-size": 2, "gpu-memory-utilization": 0.98, "max-model-len": 32768},
        8.69,
        "vllm-project/vllm#13061 (profiler line)",
        "0.7",
    ),
    (
        "Qwen3-235B-A22B-FP8, 4 x H100, TP 4",
        _qwen3_235b_fp8(),
        "H100-80GB",
        4,
        {"tensor-parallel-size": 4, "gpu-memory-utilization": 0.9},
        8.11,
        "vllm-project/vllm#21348 (start-up log)",
        "0.9/0.10",
    ),
]


def rows() -> list[dict]:
    out = []
    for name, model, device, gpus, args, theirs, where, release in CASES:
        verdict = verdict_of("vllm", args, model=model, device=device, gpus=gpus)
        if verdict.resolution is None:
            out.append({"case": name, "verdict": verdict.verdict, "reasons": verdict.reasons})
            continue
        cap = verdict.resolution.capacity
        ours = cap.kv_pool / GIB
        out.append(
            {
                "case": name,
                "weights_gib": round(cap.weights / GIB, 2),
                "workspace_gib": round(cap.activations / GIB, 2),
                "budget_gib": round(cap.budget / GIB, 2),
                "arbiter_kv_gib": round(ours, 2),
                "arbiter_kv_tokens_per_gpu": cap.kv_tokens,
                "vllm_kv_gib": theirs,
                "difference": f"{(ours - theirs) / theirs:+.0%}",
                "vllm_release": release,
                "source": where,
            }
        )
    return out


if __name__ == "__main__":
    for row in rows():
        print(json.dumps(row))
