"""Environment variables that change what an engine does with its arguments.

Only variables with a source are listed; each says which setting it changes. A manifest's
container `env` is matched against this table so that a check can say what the engine
will read besides its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineVariable:
    """One variable: the engine that reads it, what it changes, and where that is written."""

    name: str
    engine: str  # a dialect name, or "cuda" for the CUDA runtime every engine uses
    effect: str
    source: str
    truthy: tuple[str, ...] = ()  # the values that switch it on ("" : any value counts)


VARIABLES: dict[str, EngineVariable] = {
    v.name: v
    for v in (
        EngineVariable(
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
            "vllm",
            "lets max-model-len exceed the model's max_position_embeddings "
            "(rule vllm.model.len-within-positions no longer holds)",
            "vllm-project/vllm v0.33.0 vllm/envs.py; vllm/config/model.py "
            "ModelConfig.get_and_verify_max_len",
            truthy=("1", "true"),
        ),
        EngineVariable(
            "VLLM_USE_V2_MODEL_RUNNER",
            "vllm",
            "chooses the model runner (V2 or V1); arbiter's V1 fallbacks assume it unset",
            "vllm-project/vllm v0.33.0 vllm/config/vllm.py "
            "VllmConfig._get_v2_model_runner_unsupported_features",
        ),
        EngineVariable(
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
            "vllm",
            "whether CUDA-graph memory is taken from the KV budget (on by default since 0.21)",
            "vllm-project/vllm v0.33.0 vllm/v1/worker/gpu_worker.py "
            "Worker.determine_available_memory",
        ),
        EngineVariable(
            "CUDA_VISIBLE_DEVICES",
            "cuda",
            "the GPUs the process sees: their count bounds tensor x pipeline parallelism",
            "NVIDIA CUDA C++ Programming Guide, CUDA Environment Variables",
        ),
    )
}


def engine_variables(env: dict[str, str | None], dialect: str) -> dict[str, str]:
    """{name: what it changes} for the variables of `env` that `dialect` (or CUDA) reads;
    a variable given by reference (`valueFrom`, value None) is named as such."""
    out: dict[str, str] = {}
    for name, value in env.items():
        var = VARIABLES.get(name)
        if var is None or var.engine not in (dialect, "cuda"):
            continue
        if value is None:
            out[name] = f"{var.effect}; its value comes from a reference, not the manifest"
        elif var.truthy and value.strip().lower() not in var.truthy:
            out[name] = f"set to {value!r}, which leaves it off ({var.effect})"
        else:
            out[name] = f"{var.effect} [{var.source}]"
    return out


def visible_gpus(env: dict[str, str | None]) -> int | None:
    """The number of GPUs CUDA_VISIBLE_DEVICES lists, when the manifest sets it."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    ids = [part for part in value.split(",") if part.strip()]
    return len(ids)
