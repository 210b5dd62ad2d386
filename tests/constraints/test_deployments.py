"""Real deployments: a model, a machine and an engine configuration, re-authored from
public repositories, with the engine's own verdict (it serves the model, or it runs out
of memory / refuses). Our verdict must equal the engine's, and a solve that succeeds keeps
the checkpoint's quantization and the GPUs it was given.

Every case names its provenance: the repository, the file and the commit it was read at
(each checked with the reference index: `find_files` / `read_file`), and what that file
says. Sources:

- TensorRT-LLM `docs/source/performance/perf-overview.md`: the GPUs and TP x PP each
  model was benchmarked on (trtllm-bench, PyTorch backend; the longest ISL/OSL row that
  has a figure gives max_seq_len);
- TensorRT-LLM `examples/models/core/deepseek_v3/README.md`: the minimum GPUs per GPU
  type for DeepSeek-V3/R1 FP8 (H100 16, H200 8, H20 8);
- TensorRT-LLM's DeepSeek-R1 best-performance blog: its max-throughput runs with
  `enable_attention_dp` at tp 8 x ep 8 on 8 H200 (FP8) and 8 B200 (NVFP4);
- vLLM recipes (`vllm-project/recipes`): the serve commands per model and GPU (DeepSeek's
  also with data parallelism and expert parallelism: DP8+EP on 8 H200, DP4+EP on 4 B200;
  gpt-oss on A100 through Marlin; Qwen3-235B-A22B-Instruct-2507 bf16 "requires 4x H200");
- Meta's Llama 4 model card: Scout's bf16 weights fit one H100 only with int4;
- the engines' own code for the one-sequence check (vLLM refuses, TensorRT-LLM clamps);
- SGLang's server-arguments page and its data-parallel launcher: `--dp 2 --tp 2` uses 4
  GPUs (each replica starts tp x pp GPUs after the last one), so 2 GPUs cannot hold it.
- SGLang's DeepSeek page: the machines it recommends for DeepSeek V3/R1 in FP8 and in BF16
  (FP8 weights cast to bf16), and its data-parallel attention commands.

`vllm` cases are read by the vLLM dialect (`vllm serve` flags, with the defaults vLLM 0.33
derives for the device: its batch tier, gpu_memory_utilization 0.92, the CUDA-graph
memory) and arbitrated under the `vllm-0.33` profile; `sglang` cases are read by the
SGLang dialect and arbitrated under the `sglang-0.5` profile; `trtllm` cases by the
TensorRT-LLM reader with its defaults. A refused case names what refuses it (`conflict`:
a memory conflict unless said otherwise)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from arbiter import ConflictError, arbitrate, func
from arbiter.dialects import machine_claims, sglang, trtllm, vllm
from constraints.profiles import get_profile
from constraints.rules import every_rule

FIXTURES = Path(__file__).parent.parent / "fixtures" / "models"
KV_DEFAULTS = {"quant_config.kv_cache_quant_algo": None, "kv_cache_config.dtype": "auto"}
# TensorRT-LLM's defaults for what a deployment leaves unset: the KV fraction, and the
# batch and token budget it runs (BuildConfig / TorchLlmArgs max_batch_size 2048 and
# max_num_tokens 8192), which size the workspace its fraction of the free memory is
# taken after (the solver may not shrink them to make room: the engine would not)
TRT_DEFAULTS = {
    "kv_cache_config.free_gpu_memory_fraction": 0.9,
    "build_config.max_batch_size": 2048,
    "build_config.max_num_tokens": 8192,
}
# "vllm-rules" (the memory-report tests, not a deployment case): vLLM's hard rules with the
# parallel layout left open, which `vllm serve` itself never does (it runs tp 1 unless
# told); the batch at vLLM's long-standing EngineArgs defaults and a memory fraction 0.9
VLLM_RULES_DEFAULTS = {
    "kv_cache_config.free_gpu_memory_fraction": 0.9,
    "build_config.max_batch_size": 256,
    "build_config.max_num_tokens": 8192,
    "kv_cache_config.max_attention_window": None,
}
VLLM_RULES = [r for r in every_rule() if r.kind == "hard" and r.scope.applies("vllm")]
# ... under the engine-neutral memory terms (the workspace estimate against the whole device
# x the fraction), not the default profile's (TensorRT-LLM's fraction of the memory left
# after loading: constraints/engines/trtllm/memory.py)
ESTIMATE = replace(get_profile(None), memory_terms="estimate")
# the cases' arguments in arbiter's names, and the `vllm serve` flag each one is
VLLM_FLAGS = {
    "tensor_parallel_size": "tensor-parallel-size",
    "pipeline_parallel_size": "pipeline-parallel-size",
    "data_parallel_size": "data-parallel-size",
    "enable_expert_parallel": "enable-expert-parallel",
    "max_seq_len": "max-model-len",
    "max_batch_size": "max-num-seqs",
    "max_num_tokens": "max-num-batched-tokens",
}
VLLM_KV_FLAGS = {"dtype": "kv-cache-dtype", "free_gpu_memory_fraction": "gpu-memory-utilization"}


def model(name: str, **extra: Any) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.pop("_provenance")
    return {**data, **extra}


def modelopt(name: str, algo: str) -> dict[str, Any]:
    """An NVIDIA ModelOpt checkpoint of a fixture's shape (nvidia/<model>-FP8 / -FP4)."""
    return model(name, quantization_config={"quant_method": "modelopt", "quant_algo": algo})


@dataclass(frozen=True)
class Provenance:
    repo: str  # owner/name on GitHub
    path: str
    ref: str  # the commit the file was read at
    says: str  # what the file says that decides the verdict


TRT = "NVIDIA/TensorRT-LLM"
PERF = Provenance(
    TRT,
    "docs/source/performance/perf-overview.md",
    "00f37686aa854010d68bcbd0f4ab000221541ca6",
    "throughput tables per model: GPU, TP (x PP) and precision benchmarked",
)
DSV3 = Provenance(
    TRT,
    "examples/models/core/deepseek_v3/README.md",
    "010892fdde1a42c958a99be2b4e39181b5e7656c",
    "Hardware Requirements: DeepSeek-V3/R1 FP8 needs at least 16 H100 80GB, 8 H200, 8 H20",
)
R1_BEST_PERF = Provenance(
    TRT,
    "docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md",
    "f0c873f5ffdd170c9f5b70c844c02ecca9860b8f",
    "max-throughput runs with enable_attention_dp: true, trtllm-bench --tp 8 --ep 8 (ISL 1K,"
    " OSL 2K): H200 deepseek-ai/DeepSeek-R1 --max_batch_size 128 --max_num_tokens 1151"
    " --kv_cache_free_gpu_mem_fraction 0.8; B200 nvidia/DeepSeek-R1-0528-FP4 with fp8 KV"
    " --max_batch_size 896 --max_num_tokens 2048 fraction 0.93; B200 nvidia/DeepSeek-R1-FP4"
    " --max_batch_size 384 --max_num_tokens 1536 fraction 0.85",
)
QWEN3_2507 = Provenance(
    "vllm-project/recipes",
    "models/Qwen/Qwen3-235B-A22B-Instruct-2507.yaml",
    "440fcdeab55a40d4aef77ce161ac9d6f96067011",
    "variants.default: bf16, vram_minimum_gb 564, 'Full precision BF16 - requires 4x H200';"
    " hardware h200 verified (the 2507 model: Qwen3-235B-A22B's shape, 262,144 positions)",
)
RECIPES = "vllm-project/recipes"
QWEN3_THREAD = Provenance(
    "vllm-project/vllm",
    "issues/17327",
    "comment by Silencezjl, 2025-04-30",
    "vLLM 0.8.5 on 4x H20 96GB: vllm serve ./Qwen3-235B-A22B --tensor-parallel-size 4 runs"
    " out of memory (gpu-memory-utilization does not help); with default arguments 8x H20"
    " run it, 440 GB in use",
)
SGLANG_DOCS = Provenance(
    "sgl-project/sglang",
    "docs/advanced_features/server_arguments.md",
    "b36e8e198b71553316b55bce53de6ecf9b3a9a47",
    "Common launch commands: --dp 2 --tp 2 on Meta-Llama-3-8B-Instruct 'uses 4 GPUs in total'",
)
SGLANG_DP = Provenance(
    "sgl-project/sglang",
    "python/sglang/srt/managers/data_parallel_controller.py",
    "fdd9edee7a8faeaeeef5d0f77af7a673b4c06297",
    "DataParallelController starts dp_size tensor-parallel groups, the next one tp_size GPUs"
    " after the last (base_gpu_id += tp_size; tp_size x pp_size at v0.5.23): dp 2 x tp 2"
    " asks for GPUs 0-3",
)


SGLANG_DEEPSEEK = Provenance(
    "sgl-project/sglang",
    "docs/basic_usage/deepseek.md",
    "0a9fc02a54238037b0ea7406ff5031492c5c4b33",
    "recommended settings for DeepSeek V3.1/V3/R1: FP8 on 8 x H200 or 2 x 8 x H100/800/20;"
    " BF16 on 2 x 8 x H200 or 4 x 8 x A100/A800; function calling example: DeepSeek-V3-0324"
    " --tp 8 --mem-fraction-static 0.9 on 1 x H20 node",
)


SGLANG_DP_ATTENTION = Provenance(
    "sgl-project/sglang",
    "docs/basic_usage/deepseek.md",
    "0a9fc02a54238037b0ea7406ff5031492c5c4b33",
    "Data Parallelism Attention: append --enable-dp-attention --tp 8 --dp 8 when using 8 H200"
    " GPUs; DeepSeek-V3/R1 on 2 nodes of 8 H100 with --enable-dp-attention --tp 16 --dp 2"
    " (SGLang 0.5.23 reads the deprecated flag as --attn-dp-size N with dp_size 1:"
    " handle_deprecated_dp_attention, so the cases give attn_dp_size)",
)


SGLANG_ONE_H20 = Provenance(
    "sgl-project/sglang",
    "issues/10736",
    "description by derwalldrose, 2025-09-22",
    "gpt-oss-120b runs on a single H20; sglang.launch_server --model-path qwen3-next-80b on"
    " it raises torch.OutOfMemoryError (95.08 GiB GPU, 92.83 GiB allocated while loading;"
    " the post's --torchao-config int8dq, no field of SGLang 0.5.23 (0.5.16 had it), quantizes only after"
    " loading, and --disable-cuda-graph saves no weights)",
)


def bf16(name: str) -> dict[str, Any]:
    """A fixture's shape with its weights in bf16 (DeepSeek's FP8 weights cast to bf16)."""
    data = model(name)
    data.pop("quantization_config", None)
    return {**data, "torch_dtype": "bfloat16"}


def recipe(path: str, ref: str, says: str) -> Provenance:
    return Provenance(RECIPES, path, ref, says)


@dataclass(frozen=True)
class Case:
    id: str
    model: dict[str, Any]
    device: str
    engine: str  # trtllm, vllm or sglang (vllm-rules: the memory-report tests' open layout)
    args: dict[str, Any]
    runs: bool  # the engine's verdict
    source: Provenance
    extra: dict[str, Any] = field(default_factory=dict)  # device count per node, nodes
    conflict: str = "memory"  # what the report of a refused case names


def tp(n: int, **more: Any) -> dict[str, Any]:
    return {"tensor_parallel_size": n, **more}


CASES = [
    # --- TensorRT-LLM perf overview: what it benchmarked runs ---------------------------
    Case(
        "llama-3.3-70b-fp8-1xh200",
        modelopt("llama-3.1-70b", "FP8"),
        "H200",
        "trtllm",
        tp(1, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.3-70b-fp8-2xh100",
        modelopt("llama-3.1-70b", "FP8"),
        "2xH100",
        "trtllm",
        tp(2, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.3-70b-nvfp4-1xb200",
        model("llama-3.3-70b-nvfp4"),
        "B200",
        "trtllm",
        tp(1, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.3-70b-nvfp4-1xrtx-pro-6000",
        model("llama-3.3-70b-nvfp4"),
        "RTX-PRO-6000",
        "trtllm",
        tp(1, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.1-405b-fp8-8xh100",
        modelopt("llama-3.1-405b", "FP8"),
        "8xH100",
        "trtllm",
        tp(8, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.1-405b-nvfp4-4xb200",
        modelopt("llama-3.1-405b", "NVFP4"),
        "4xB200",
        "trtllm",
        tp(4, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "llama-3.1-405b-nvfp4-8xrtx-pro-6000-pp8",
        modelopt("llama-3.1-405b", "NVFP4"),
        "8xRTX-PRO-6000",
        "trtllm",
        tp(1, pipeline_parallel_size=8, max_seq_len=4096),
        True,
        PERF,
    ),
    Case(
        "qwen3-235b-fp8-8xh100",
        modelopt("qwen3-235b-a22b", "FP8"),
        "8xH100",
        "trtllm",
        tp(8, max_seq_len=5500),
        True,
        PERF,
    ),
    Case(
        "llama-4-scout-fp8-4xh100",
        modelopt("llama-4-scout", "FP8"),
        "4xH100",
        "trtllm",
        tp(4, max_seq_len=5500),
        True,
        PERF,
    ),
    Case(
        "llama-3.1-8b-fp8-1xh100",
        modelopt("llama-3.1-8b", "FP8"),
        "H100",
        "trtllm",
        tp(1, max_seq_len=22000),
        True,
        PERF,
    ),
    Case(
        "qwen3-30b-a3b-nvfp4-1xrtx-pro-6000",
        modelopt("qwen3-30b-a3b", "NVFP4"),
        "RTX-PRO-6000",
        "trtllm",
        tp(1, max_seq_len=22000),
        True,
        PERF,
    ),
    # --- TensorRT-LLM DeepSeek-V3/R1 minimum hardware ------------------------------------
    Case("deepseek-r1-fp8-1xh200", model("deepseek-r1-0528-fp8"), "H200", "trtllm", tp(1), False, DSV3),
    Case("deepseek-r1-fp8-8xh100", model("deepseek-r1-0528-fp8"), "8xH100", "trtllm", tp(8), False, DSV3),
    Case(
        "deepseek-r1-fp8-8xh200",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "trtllm",
        tp(8, max_seq_len=16384),
        True,
        DSV3,
    ),
    Case(
        "deepseek-r1-fp8-8xh20",
        model("deepseek-r1-0528-fp8"),
        "8xH20",
        "trtllm",
        tp(8, max_seq_len=16384),
        True,
        DSV3,
    ),
    Case(
        "deepseek-r1-fp8-16xh100",
        model("deepseek-r1-0528-fp8"),
        "H100",
        "trtllm",
        tp(16, max_seq_len=16384),
        True,
        DSV3,
        extra={"count": 8, "nodes": 2},
    ),
    # --- vLLM recipes --------------------------------------------------------------------
    Case(
        "deepseek-r1-fp8-8xh200-vllm",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "vllm",
        tp(8),
        True,
        recipe(
            "DeepSeek/DeepSeek-V3.md",
            "9301ae044be7d93dc2cf393d75eac58d32563573",
            "8xH200 with fp8: vllm serve deepseek-ai/DeepSeek-R1-0528 --tensor-parallel-size 8",
        ),
    ),
    Case(
        "gpt-oss-120b-mxfp4-1xa100-vllm",
        model("gpt-oss-120b"),
        "A100-80GB",
        "vllm",
        {},
        True,
        recipe(
            "OpenAI/GPT-OSS.md",
            "c033a835ef28b28a857f199ac43044dd4cf06077",
            "gpt-oss-120b will fit on a single A100 (80GB): vllm serve openai/gpt-oss-120b",
        ),
    ),
    Case(
        "gpt-oss-120b-mxfp4-2xa100-tp2-vllm",
        model("gpt-oss-120b"),
        "2xA100-80GB",
        "vllm",
        tp(2),
        True,
        recipe(
            "OpenAI/GPT-OSS.md",
            "c033a835ef28b28a857f199ac43044dd4cf06077",
            "A100 (Marlin MXFP4 MoE): vllm serve openai/gpt-oss-120b --tensor-parallel-size 2",
        ),
    ),
    Case(
        "gpt-oss-120b-mxfp4-4xa100-tp4-vllm",
        model("gpt-oss-120b"),
        "4xA100-80GB",
        "vllm",
        tp(4),
        True,
        recipe(
            "OpenAI/GPT-OSS.md",
            "c033a835ef28b28a857f199ac43044dd4cf06077",
            "A100 (Marlin MXFP4 MoE): vllm serve openai/gpt-oss-120b --tensor-parallel-size 4",
        ),
    ),
    Case(
        "gpt-oss-20b-mxfp4-1xa100-40gb-vllm",
        model("gpt-oss-20b"),
        "A100-40GB",
        "vllm",
        {},
        True,
        recipe(
            "OpenAI/GPT-OSS.md",
            "c033a835ef28b28a857f199ac43044dd4cf06077",
            "A100: 'openai/gpt-oss-20b should run on a single A100': vllm serve"
            " openai/gpt-oss-20b (the smaller A100 is one too)",
        ),
    ),
    Case(
        "qwen3-next-80b-bf16-4xh200-vllm",
        model("qwen3-next-80b-a3b"),
        "4xH200",
        "vllm",
        tp(4),
        True,
        recipe(
            "Qwen/Qwen3-Next.md",
            "accc1728eabe3d7a24cea781b143dc2c5325c20e",
            "4x H200/H20 or 4x A100/A800: vllm serve ... --tensor-parallel-size 4",
        ),
    ),
    Case(
        "qwen3-next-80b-bf16-4xh20-vllm",
        model("qwen3-next-80b-a3b"),
        "4xH20",
        "vllm",
        tp(4),
        True,
        recipe(
            "Qwen/Qwen3-Next.md",
            "accc1728eabe3d7a24cea781b143dc2c5325c20e",
            "4x H200/H20 or 4x A100/A800: vllm serve ... --tensor-parallel-size 4",
        ),
    ),
    Case(
        "llama-3.3-70b-fp8-1xh200-vllm",
        modelopt("llama-3.1-70b", "FP8"),
        "H200",
        "vllm",
        tp(1, max_num_tokens=8192, kv_cache_config={"dtype": "fp8"}),
        True,
        recipe(
            "Llama/Llama3.3-70B.md",
            "a3d63429f34092acabfbe175f1c3824ea35f6694",
            "Hopper: nvidia/Llama-3.3-70B-Instruct-FP8, --tensor-parallel-size 1,"
            " Llama3.3_Hopper.yaml (kv-cache-dtype fp8, max-num-batched-tokens 8192)",
        ),
    ),
    Case(
        "kimi-k2-fp8-8xh800-vllm",
        model("kimi-k2"),
        "8xH800",
        "vllm",
        tp(8, max_seq_len=2048),
        False,
        recipe(
            "moonshotai/Kimi-K2.md",
            "71aa84974d32d7508fffac966bbfa65bc5b094e7",
            "the smallest deployment unit for Kimi-K2 FP8 weights on H800 is 16 GPUs",
        ),
    ),
    Case(
        "kimi-k2-fp8-16xh800-tp8-pp2-vllm",
        model("kimi-k2"),
        "H800",
        "vllm",
        tp(8, pipeline_parallel_size=2, max_seq_len=2048, max_batch_size=1, max_num_tokens=1024),
        True,
        recipe(
            "moonshotai/Kimi-K2.md",
            "71aa84974d32d7508fffac966bbfa65bc5b094e7",
            "two H800 nodes: vllm serve ... --tensor-parallel-size 8 --pipeline-parallel-size 2"
            " --max-model-len 2048 --max-num-seqs 1 --max-num-batched-tokens 1024",
        ),
        extra={"count": 8, "nodes": 2},
    ),
    Case(
        "llama-3.3-70b-nvfp4-1xb200-vllm",
        model("llama-3.3-70b-nvfp4"),
        "B200",
        "vllm",
        tp(1, max_num_tokens=8192, kv_cache_config={"dtype": "fp8"}),
        True,
        recipe(
            "Llama/Llama3.3-70B.md",
            "a3d63429f34092acabfbe175f1c3824ea35f6694",
            "Blackwell: nvidia/Llama-3.3-70B-Instruct-FP4, --tensor-parallel-size 1,"
            " Llama3.3_Blackwell.yaml (kv-cache-dtype fp8, max-num-batched-tokens 8192);"
            " accuracy shown on one B200",
        ),
    ),
    Case(
        "llama-4-scout-nvfp4-1xb200-vllm",
        modelopt("llama-4-scout", "NVFP4"),
        "B200",
        "vllm",
        tp(1, max_seq_len=10240, max_batch_size=512, max_num_tokens=8192,
           kv_cache_config={"dtype": "fp8"}),
        True,
        recipe(
            "Llama/Llama4-Scout.md",
            "07a41636fa3138153f4003433189100bbc7f1404",
            "nvidia/Llama-4-Scout-17B-16E-Instruct-FP4 on one B200: --tensor-parallel-size 1"
            " --max-num-seqs 512 --max-model-len 10240, kv-cache-dtype fp8,"
            " max-num-batched-tokens 8192",
        ),
    ),
    Case(
        "deepseek-r1-nvfp4-4xb200-tp4-vllm",
        model("deepseek-r1-0528-fp8",
              quantization_config={"quant_method": "modelopt", "quant_algo": "NVFP4"}),
        "4xB200",
        "vllm",
        tp(4),
        True,
        recipe(
            "DeepSeek/DeepSeek-V3.md",
            "9301ae044be7d93dc2cf393d75eac58d32563573",
            "4xB200 with fp4: vllm serve nvidia/DeepSeek-R1-FP4 --tensor-parallel-size 4"
            " --enable-expert-parallel ('runnable on 4 or 8 GPUs')",
        ),
    ),
    Case(
        "deepseek-r1-fp8-8xh200-dp8-ep-vllm",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "vllm",
        {"data_parallel_size": 8, "enable_expert_parallel": True},
        True,
        recipe(
            "DeepSeek/DeepSeek-V3.md",
            "9301ae044be7d93dc2cf393d75eac58d32563573",
            "8xH200 with fp8, Data Parallel + Expert Parallel (DP8+EP): vllm serve"
            " deepseek-ai/DeepSeek-R1-0528 --data-parallel-size 8 --enable-expert-parallel",
        ),
    ),
    Case(
        "deepseek-r1-nvfp4-4xb200-dp4-ep-vllm",
        model("deepseek-r1-0528-fp8",
              quantization_config={"quant_method": "modelopt", "quant_algo": "NVFP4"}),
        "4xB200",
        "vllm",
        {"data_parallel_size": 4, "enable_expert_parallel": True},
        True,
        recipe(
            "DeepSeek/DeepSeek-V3.md",
            "9301ae044be7d93dc2cf393d75eac58d32563573",
            "4xB200, Data Parallel + Expert Parallel (DP4+EP): vllm serve nvidia/DeepSeek-R1-FP4"
            " --data-parallel-size 4 --enable-expert-parallel ('runnable on 4 or 8 GPUs')",
        ),
    ),
    Case(
        "gpt-oss-120b-mxfp4-1xh100-vllm",
        model("gpt-oss-120b"),
        "H100",
        "vllm",
        {"kv_cache_config": {"free_gpu_memory_fraction": 0.95}, "max_num_tokens": 1024},
        True,
        recipe(
            "OpenAI/GPT-OSS.md",
            "c033a835ef28b28a857f199ac43044dd4cf06077",
            "Known limitations: on H100 at TP 1, vllm serve openai/gpt-oss-120b"
            " --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024",
        ),
    ),
    # --- Meta's model card ---------------------------------------------------------------
    Case(
        "llama-4-scout-bf16-1xh100",
        model("llama-4-scout"),
        "H100",
        "trtllm",
        tp(1),
        False,
        Provenance(
            "meta-llama/llama-models",
            "models/llama4/MODEL_CARD.md",
            "038acb9fe1e1ddc5cf1b3989fb07b311a0ffcae4",
            "Scout is released as BF16 weights, but can fit within a single H100 GPU with"
            " on-the-fly int4 quantization",
        ),
    ),
    # --- the engines' one-sequence check: vLLM refuses, TensorRT-LLM clamps --------------
    Case(
        "llama-3.1-8b-bf16-1xl4-128k-vllm",
        model("llama-3.1-8b"),
        "L4",
        "vllm",
        {"max_seq_len": 131072},
        False,
        Provenance(
            "vllm-project/vllm",
            "vllm/v1/core/kv_cache_utils.py",
            "bbf906a88ba1a39104884c88c9811a4f968e4659",
            "check_enough_kv_cache_memory raises when the KV cache cannot hold one request of"
            " max_model_len (131072 tokens x 128 KiB > what an L4 has after 16 GB of weights)",
        ),
    ),
    Case(
        "llama-3.1-8b-bf16-1xl4-128k-trtllm",
        model("llama-3.1-8b"),
        "L4",
        "trtllm",
        {"max_seq_len": 131072},
        True,
        Provenance(
            TRT,
            "cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp",
            "b35ac1b64368513d215c57d2ed01d62d910df8da",
            "clampWindowSizesToFitAtLeastOneSequence: the attention window is clamped to what"
            " fits (an error only with failFastOnAttentionWindowTooLarge)",
        ),
    ),
    # --- out of memory: users' runs in the engines' issue threads, and vendors' minimums ---
    Case(
        "mixtral-8x7b-bf16-1xl4",
        model("mixtral-8x7b"),
        "L4",
        "vllm",
        {},
        False,
        Provenance(
            "mistralai/platform-docs-public",
            "docs/getting-started/models/weights.md",
            "a8d3613a8691833f3ba5c79942718658598f1bb7",
            "Sizes: Mixtral-8x7B-v0.1, 46.7B parameters, min. GPU RAM for inference 100 GB"
            " (an L4 has 24 GB)",
        ),
    ),
    Case(
        "mixtral-8x7b-bf16-1xa100-40gb-vllm",
        model("mixtral-8x7b"),
        "A100-40GB",
        "vllm",
        {},
        False,
        Provenance(
            "vllm-project/vllm",
            "issues/2363",
            "description by Hobrus, 2024-01-06",
            "python -m vllm.entrypoints.openai.api_server --model mistralai/Mixtral-8x7B-v0.1:"
            " torch.cuda.OutOfMemoryError on a GPU with a total capacity of 39.39 GiB",
        ),
    ),
    Case(
        "mixtral-8x7b-bf16-4xrtx-4090-tp4-vllm",
        model("mixtral-8x7b"),
        "4xRTX-4090",
        "vllm",
        tp(4, max_seq_len=1000),
        False,
        Provenance(
            "vllm-project/vllm",
            "issues/3285",
            "description by SinanAkkoyun, 2024-03-08",
            "Mixtral on a 4x 4090 rig: TP 4, model len 1000, enforce eager, several"
            " gpu_memory_utilization values: always an OOM error (fp16 weights)",
        ),
    ),
    Case(
        "llama-3-70b-bf16-1xa100-80gb-vllm",
        model("llama-3-70b-instruct"),
        "A100-80GB",
        "vllm",
        {},
        False,
        Provenance(
            "vllm-project/vllm",
            "issues/5711",
            "comment by mgoin, 2024-06-20",
            "Llama 3 70B in BF16 needs about 140 GB for its weights alone, so at least 2x A100"
            " 80GB; the reporter's single A100 80GB PCIe ran out of memory",
        ),
    ),
    Case(
        "qwen3-235b-bf16-4xh20-tp4-vllm",
        model("qwen3-235b-a22b"),
        "4xH20",
        "vllm",
        tp(4),
        False,
        QWEN3_THREAD,
    ),
    Case(
        "qwen3-235b-bf16-8xh20-tp8-vllm",
        model("qwen3-235b-a22b"),
        "8xH20",
        "vllm",
        tp(8),
        True,
        QWEN3_THREAD,
    ),
    # --- TensorRT-LLM's DeepSeek-R1 blog: attention DP replicates all but the experts ---
    Case(
        "deepseek-r1-fp8-8xh200-attention-dp",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "trtllm",
        tp(8, moe_expert_parallel_size=8, enable_attention_dp=True, max_batch_size=128,
           max_num_tokens=1151, max_seq_len=3072,
           kv_cache_config={"free_gpu_memory_fraction": 0.8}),
        True,
        R1_BEST_PERF,
    ),
    Case(
        "deepseek-r1-0528-nvfp4-8xb200-attention-dp-fp8-kv",
        model("deepseek-r1-0528-fp8", quantization_config={
            "quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}),
        "8xB200",
        "trtllm",
        tp(8, moe_expert_parallel_size=8, enable_attention_dp=True, max_batch_size=896,
           max_num_tokens=2048, max_seq_len=3072,
           kv_cache_config={"free_gpu_memory_fraction": 0.93}),
        True,
        R1_BEST_PERF,
    ),
    Case(
        "deepseek-r1-nvfp4-8xb200-attention-dp",
        modelopt("deepseek-r1-0528-fp8", "NVFP4"),
        "8xB200",
        "trtllm",
        tp(8, moe_expert_parallel_size=8, enable_attention_dp=True, max_batch_size=384,
           max_num_tokens=1536, max_seq_len=3072,
           kv_cache_config={"free_gpu_memory_fraction": 0.85}),
        True,
        R1_BEST_PERF,
    ),
    # --- vLLM recipes: Qwen3-235B-A22B-Instruct-2507 in BF16 needs 4 H200 ----------------
    Case(
        "qwen3-235b-2507-bf16-1xh200-vllm",
        model("qwen3-235b-a22b", max_position_embeddings=262144),
        "H200",
        "vllm",
        {},
        False,
        QWEN3_2507,
    ),
    Case(
        "qwen3-235b-2507-bf16-4xh200-tp4-vllm",
        model("qwen3-235b-a22b", max_position_embeddings=262144),
        "4xH200",
        "vllm",
        tp(4),
        True,
        QWEN3_2507,
    ),
    # --- SGLang: data-parallel replicas are GPUs of their own -----------------------------
    Case(
        "llama-3-8b-bf16-dp2-tp2-4xh100-sglang",
        model("llama-3-8b-instruct"),
        "4xH100",
        "sglang",
        {"tp_size": 2, "dp_size": 2},
        True,
        SGLANG_DOCS,
    ),
    # --- SGLang's DeepSeek page: the recommended machines serve it ----------------------
    Case(
        "deepseek-r1-fp8-8xh200-sglang",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "sglang",
        {"tp_size": 8},
        True,
        SGLANG_DEEPSEEK,
    ),
    Case(
        "deepseek-r1-fp8-8xh200-dp-attention-sglang",
        model("deepseek-r1-0528-fp8"),
        "8xH200",
        "sglang",
        {"tp_size": 8, "attn_dp_size": 8},
        True,
        SGLANG_DP_ATTENTION,
    ),
    Case(
        "deepseek-r1-fp8-16xh100-tp16-dp2-attention-sglang",
        model("deepseek-r1-0528-fp8"),
        "H100",
        "sglang",
        {"tp_size": 16, "attn_dp_size": 2, "nnodes": 2},
        True,
        SGLANG_DP_ATTENTION,
        extra={"count": 8, "nodes": 2},
    ),
    Case(
        "deepseek-r1-fp8-16xh20-tp16-sglang",
        model("deepseek-r1-0528-fp8"),
        "H20",
        "sglang",
        {"tp_size": 16, "nnodes": 2},
        True,
        SGLANG_DEEPSEEK,
        extra={"count": 8, "nodes": 2},
    ),
    Case(
        "deepseek-v3-bf16-16xh200-tp16-sglang",
        bf16("deepseek-v3"),
        "H200",
        "sglang",
        {"tp_size": 16, "nnodes": 2},
        True,
        SGLANG_DEEPSEEK,
        extra={"count": 8, "nodes": 2},
    ),
    Case(
        "deepseek-v3-bf16-32xa100-tp32-sglang",
        bf16("deepseek-v3"),
        "A100-80GB",
        "sglang",
        {"tp_size": 32, "nnodes": 4},
        True,
        SGLANG_DEEPSEEK,
        extra={"count": 8, "nodes": 4},
    ),
    Case(
        "deepseek-v3-fp8-8xh20-sglang",
        model("deepseek-v3"),
        "8xH20",
        "sglang",
        {"tp_size": 8, "mem_fraction_static": 0.9},
        True,
        SGLANG_DEEPSEEK,
    ),
    # --- SGLang issue 10736: one H20 holds gpt-oss-120b, not Qwen3-Next-80B in bf16 --------
    Case(
        "gpt-oss-120b-mxfp4-1xh20-sglang",
        model("gpt-oss-120b"),
        "H20",
        "sglang",
        {},
        True,
        SGLANG_ONE_H20,
    ),
    Case(
        "qwen3-next-80b-bf16-1xh20-sglang",
        model("qwen3-next-80b-a3b"),
        "H20",
        "sglang",
        {},
        False,
        SGLANG_ONE_H20,
    ),
    Case(
        "llama-3-8b-bf16-dp2-tp2-2xh100-sglang",
        model("llama-3-8b-instruct"),
        "2xH100",
        "sglang",
        {"tp_size": 2, "dp_size": 2},
        False,
        SGLANG_DP,
        conflict="machine.sglang-dp-replicas-fit-devices",
    ),
]  # fmt: skip


def solve(case: Case):
    from constraints.facts import DeviceSpec

    dev = DeviceSpec.named(case.device)
    if case.extra:
        dev = DeviceSpec.named(case.device, case.extra["count"], case.extra["nodes"])
    if case.engine == "sglang":
        read = sglang.read(dict(case.args))
        facts = machine_claims(case.model, dev, read.claims)
        return arbitrate([*read.claims, *facts], profile=read.profile)
    if case.engine == "vllm":
        read = vllm.read(vllm_args(case.args), device=dev, model=case.model)
        facts = machine_claims(case.model, dev, read.claims)
        return arbitrate([*read.claims, *facts], profile=read.profile)
    parsed = trtllm.read(dict(case.args), defaults=case.engine == "trtllm")
    claims = [*parsed.claims, *machine_claims(case.model, dev, parsed.claims)]
    # what the deployment left unset runs at the engine's default: a KV cache in the
    # model's dtype (it is not quantized unless told) and the memory fraction
    given = {p for c in claims for p in c.expr.paths()}  # the checkpoint's KV quantization too
    defaults = {
        **KV_DEFAULTS,
        **(VLLM_RULES_DEFAULTS if case.engine == "vllm-rules" else TRT_DEFAULTS),
    }
    claims.append(func("engine.defaults", {p: v for p, v in defaults.items() if p not in given}))
    if case.engine == "vllm-rules":
        return arbitrate(claims, rules=VLLM_RULES, profile=ESTIMATE)
    return arbitrate(claims)


def vllm_args(args: dict[str, Any]) -> dict[str, Any]:
    """A case's arguments as `vllm serve` flags."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key == "kv_cache_config":
            out.update({VLLM_KV_FLAGS[k]: v for k, v in value.items()})
        else:
            out[VLLM_FLAGS[key]] = value
    return out


def test_at_least_twenty_cases_with_checked_provenance():
    assert len(CASES) >= 20 and len({c.id for c in CASES}) == len(CASES)
    for case in CASES:
        src = case.source
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", src.repo), case.id
        assert src.path and src.says, case.id
        if re.fullmatch(r"issues/\d+", src.path):  # a thread: the post that says it
            assert re.fullmatch(r"(description|comment) by [\w-]+, \d{4}-\d\d-\d\d", src.ref)
        else:
            assert re.fullmatch(r"[0-9a-f]{40}", src.ref), case.id  # a commit, not a branch
    assert {c.runs for c in CASES} == {True, False}
    assert {c.engine for c in CASES} == {"trtllm", "vllm", "sglang"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_our_verdict_is_the_engines(case):
    from constraints.facts import ModelSpec

    spec = ModelSpec.from_hf_config(case.model)
    if not case.runs:
        with pytest.raises(ConflictError) as err:
            solve(case)
        assert case.conflict in str(err.value)
        return
    resolution = solve(case)
    v = resolution.values
    # the checkpoint's quantization is kept, and no GPU appeared
    assert v["quant_config.quant_algo"] == (spec.quant.quant_algo if spec.quant else None)
    gpus = v["device.count"] * v["device.nodes"]
    # (a resolution holds the options of its profile's engine: the other's count is 1)
    replicas = v.get("sglang_config.dp_size", 1) * v.get("vllm_config.data_parallel_size", 1)
    assert replicas == case.args.get("dp_size", 1) * case.args.get("data_parallel_size", 1)
    assert (
        v["parallel_config.tensor_parallel_size"]
        * v["parallel_config.pipeline_parallel_size"]
        * replicas
        <= gpus
    )


def _with_fix(case: Case, fix: str) -> Case:
    """The case changed as a fix of its memory report says."""

    from constraints.facts import DeviceSpec

    sgl = case.engine == "sglang"  # SGLang's own field names
    gpus = re.match(r"(\d+) GPUs \(tensor_parallel_size (\d+)", fix)
    if gpus:
        n = int(gpus[1])
        layout = (
            {"tp_size": n, "pp_size": 1}
            if sgl
            else {"tensor_parallel_size": n, "pipeline_parallel_size": 1}
        )
        name = DeviceSpec.named(case.device).name
        return replace(
            case, device=name, args={**case.args, **layout}, extra={"count": n, "nodes": 1}
        )
    if fix.startswith("FP8 KV cache"):
        kv = {"kv_cache_dtype": "fp8_e4m3"} if sgl else {"kv_cache_config": {"dtype": "fp8"}}
        return replace(case, args={**case.args, **kv})
    shorter = re.match(r"max_seq_len <= (\d+) tokens", fix)
    assert shorter, fix
    key = "context_length" if sgl else "max_seq_len"
    return replace(case, args={**case.args, key: int(shorter[1])})


OUT_OF_MEMORY = [c for c in CASES if not c.runs and c.conflict == "memory"]


@pytest.mark.parametrize("case", OUT_OF_MEMORY, ids=lambda c: c.id)
def test_an_out_of_memory_report_gives_the_numbers_and_fixes_that_work(case):
    from arbiter.errors import MemoryConflictError

    with pytest.raises(MemoryConflictError) as err:
        solve(case)
    memory = err.value.memory
    # weights, workspace (activations; none under SGLang's static fraction) and KV of one
    # sequence (or block) vs memory x fraction
    kv = (
        r"KV of (one block \(\d+ tokens?\)|one \d+-token sequence|\d+ beams x \d+ tokens)"
        r"( and one sequence's recurrent state)? [\d.]+ [GM]iB"
    )
    # TensorRT-LLM takes its fraction of the memory left free once the model is loaded
    # (tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory): its report
    # shows what is free and the KV against that fraction of it; the others weights,
    # workspace and KV against the whole device x the fraction
    assert re.fullmatch(
        rf"weights [\d.]+ GiB( \+ workspace [\d.]+ [GM]iB)? \+ {kv}"
        r" = [\d.]+ GiB > [\d.]+ GiB x 0\.\d+ = [\d.]+ GiB",
        memory,
    ) or re.fullmatch(
        r"[\d.]+ GiB - weights [\d.]+ GiB - workspace [\d.]+ [GM]iB = -?[\d.]+ GiB free after"
        rf" loading; {kv} > -?[\d.]+ GiB x 0\.\d+ = -?[\d.]+ GiB",
        memory,
    ), memory
    assert err.value.fixes, case.id
    for fix in err.value.fixes:  # each fix, applied, is accepted (solve raises otherwise)
        fixed = _with_fix(case, fix)
        values = solve(fixed).values
        tp_asked = fixed.args.get(
            "tp_size" if case.engine == "sglang" else "tensor_parallel_size", 1
        )
        assert values["parallel_config.tensor_parallel_size"] == tp_asked, fix
