"""What the two engine oracles share: local model folders, argument spellings, a seeded
generator of interacting argument combinations, and the verdict record.

Runs in the throwaway engine virtual environment (no arbiter import), so it stays
self-contained: standard library and PyYAML only.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import yaml

# Model configs the oracles resolve against: small config.json folders written locally
# (no hub access here). Shapes are the published ones of each family (Llama-3.1-8B,
# Qwen2.5-7B style GQA, a Mixtral-style MoE); values that change no verdict are omitted.
MODELS: dict[str, dict[str, Any]] = {
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "bos_token_id": 128000,
        "eos_token_id": 128001,
    },
    "qwen2.5-7b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "sliding_window": 131072,
        "use_sliding_window": False,
    },
    "mixtral-8x7b": {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    },
}
# DeepSeek-V3 (MLA, MoE, FP8 checkpoint, one MTP layer) as in tests/fixtures/models, and a
# variant with two MTP layers for vLLM's n_predict divisibility check
_FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "models"
MODELS["deepseek-v3"] = {
    k: v
    for k, v in json.loads((_FIXTURE / "deepseek-v3.json").read_text()).items()
    if not k.startswith("_")
}
MODELS["deepseek-v3-mtp2"] = {**MODELS["deepseek-v3"], "num_nextn_predict_layers": 2}
# DeepSeek-V3's layout cut to 4 layers (3 dense, 1 MoE) and 16 routed experts, so that its
# weights fit one GPU: the configuration checks the generator exercises read its heads,
# MLA, experts and MTP layers, not its depth (generate --batch targets)
MODELS["deepseek-v3-4l"] = {**MODELS["deepseek-v3"], "num_hidden_layers": 4, "n_routed_experts": 16}
MODELS["deepseek-v3-4l-mtp2"] = {**MODELS["deepseek-v3-4l"], "num_nextn_predict_layers": 2}
# vLLM reads an encoder-decoder model off config.json's is_encoder_decoder (ModelConfig);
# a Llama shape with the flag set is enough for its configuration stage
MODELS["llama-3.1-8b-encdec"] = {**MODELS["llama-3.1-8b"], "is_encoder_decoder": True}
# an EAGLE-3 draft head in the published shape of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's
# config.json (one decoder layer over Llama-3.1-8B's hidden size, the target's vocabulary
# and a 32000-token draft vocabulary)
MODELS["eagle3-llama-3.1-8b"] = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 1,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
    "max_position_embeddings": 2048,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}
MODELS["llama-3.1-8b-fp8"] = {
    **MODELS["llama-3.1-8b"],
    "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
}

# draft models for `method: draft_model`, in the published shapes of meta-llama/Llama-3.2-1B
# (Llama-3.1-8B's 128256-token vocabulary) and Qwen/Qwen2.5-0.5B (151936 tokens): vLLM
# compares the two configs' vocab_size (SpeculativeConfig.verify_equal_vocab_size_if_draft_model)
MODELS["llama-3.2-1b"] = {
    **MODELS["llama-3.1-8b"],
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "head_dim": 64,
    "tie_word_embeddings": True,
}
MODELS["qwen2.5-0.5b"] = {
    **MODELS["qwen2.5-7b"],
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "num_hidden_layers": 24,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
# Qwen3.5's layout as published in Qwen/Qwen3.6-27B's config.json (model_type qwen3_5, the
# language model under text_config with its one MTP layer, text_config.mtp_num_hidden_layers
# 1; the vision tower's config is left out), and a variant with two MTP layers, for vLLM's
# reading of n_predict off the text config when the top config has none
_QWEN3_5_TEXT = {
    "model_type": "qwen3_5_text",
    "attention_bias": False,
    "attn_output_gate": True,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 16,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144,
    "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": False,
    "num_attention_heads": 24,
    "num_hidden_layers": 64,
    "num_key_value_heads": 4,
    "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "vocab_size": 248320,
    "dtype": "bfloat16",
}
MODELS["qwen3.6-27b"] = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": _QWEN3_5_TEXT,
    "tie_word_embeddings": False,
}
MODELS["qwen3.6-27b-mtp2"] = {
    **MODELS["qwen3.6-27b"],
    "text_config": {**_QWEN3_5_TEXT, "mtp_num_hidden_layers": 2},
}
# Qwen3-235B-A22B's block-scaled FP8 checkpoint (moe_intermediate_size 1536, blocks of
# [128, 128]), as in tests/fixtures/models; and Llama-3.1-8B with a ModelOpt NVFP4
# quantization_config in the form of nvidia/Llama-3.1-8B-Instruct-FP4's hf_quant_config
MODELS["qwen3-235b-a22b-fp8"] = {
    k: v
    for k, v in json.loads((_FIXTURE / "qwen3-235b-a22b-fp8.json").read_text()).items()
    if not k.startswith("_")
}
# Qwen3-Coder-480B-A35B's block-scaled FP8 checkpoint (160 experts of 2560), as in
# tests/fixtures/models: the DP 8 + EP memory cases of tests/corpus/vllm
MODELS["qwen3-coder-480b-a35b-fp8"] = {
    k: v
    for k, v in json.loads((_FIXTURE / "qwen3-coder-480b-a35b-fp8.json").read_text()).items()
    if not k.startswith("_")
}
MODELS["llama-3.1-8b-nvfp4"] = {
    **MODELS["llama-3.1-8b"],
    "quantization_config": {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "group_size": 16,
        "kv_cache_quant_algo": None,
    },
}


def oracle_model(case: dict[str, Any]) -> str:
    """The local model an oracle resolves a corpus case against: the case's own when
    MODELS has it, else Llama-3.1-8B (for cases whose verdict does not hang on shape)."""
    return case.get("model") if case.get("model") in MODELS else "llama-3.1-8b"


def model_folder(name: str, root: Path | None = None) -> Path:
    """A folder holding `config.json` for one of MODELS (created once per root)."""
    root = root or Path(tempfile.gettempdir()) / "arbiter-oracle-models"
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(MODELS[name], indent=1))
    return folder


def norm_key(key: str) -> tuple[str, bool]:
    """`--no-enable-prefix-caching` -> ("enable_prefix_caching", negated=True)."""
    name = key.strip().lstrip("-").replace("-", "_")
    if name.startswith("no_"):
        return name[3:], True
    return name, False


def seeded_combinations(
    axes: dict[str, list[Any]], count: int, seed: int, base: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """`count` argument sets: each picks 1-4 axes at random and a value for each.
    Deterministic for a seed; duplicates are dropped."""
    rng = random.Random(seed)
    names = sorted(axes)
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    attempts = 0
    while len(out) < count and attempts < count * 20:
        attempts += 1
        args = dict(base or {})
        for name in rng.sample(names, k=rng.randint(1, min(4, len(names)))):
            value = rng.choice(axes[name])
            if isinstance(value, dict):  # a bundle of related arguments
                args.update(value)
            else:
                args[name] = value
        key = json.dumps(args, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(args)
    return out


def first_line(message: str, limit: int = 300) -> str:
    line = " ".join(str(message).split())
    return line[:limit]


def error_line(stderr: str) -> str:
    """argparse's own complaint (the `error:` line) out of its usage text."""
    for line in reversed(stderr.splitlines()):
        if "error:" in line:
            return first_line(line.split("error:", 1)[1])
    return first_line(stderr)


def write_results(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=False, default=str) + "\n")


def write_compact(path: Path, payload: dict[str, Any]) -> None:
    """The same record as `write_results`, one result per line (no indentation)."""
    head = {k: v for k, v in payload.items() if k != "results"}
    lines = [json.dumps(r, separators=(",", ":"), default=str) for r in payload["results"]]
    text = json.dumps(head, separators=(",", ":"), default=str)[:-1]
    body = ",\n".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{text},"results":[\n{body}\n]}}\n')


def load_cases(folder: Path) -> list[dict[str, Any]]:
    """Corpus cases (one YAML each) under a folder, sorted by id."""
    cases = [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))]
    return sorted(cases, key=lambda c: c["id"])


def skipped(case: dict[str, Any]) -> dict[str, Any] | None:
    """The result row of a corpus case the oracle cannot run (`oracle_skip` says why)."""
    if not case.get("oracle_skip"):
        return None
    return {
        "id": case["id"],
        "expected": case["verdict"],
        "verdict": "skipped",
        "message": case["oracle_skip"],
    }
