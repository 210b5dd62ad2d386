"""vLLM's key vocabulary: what detection reads (`vocabulary`) and the field names the
service's fuzzer writes (`config_keys`), both from the vLLM 0.33 release surface;
the spellings of its parallel sizes (`PARALLEL`, which a check's GPU count reads) and the
environment variables that change what it does with its arguments (`VARIABLES`).

vLLM's --attention-backend takes an AttentionBackendEnum member's name, in any case
(vllm/config/attention.py AttentionConfig.validate_backend_before: "auto" is None, any
other string is `AttentionBackendEnum[value.upper()]`); the members as listed in
vllm/v1/attention/backends/registry.py (vllm-project/vllm, the stored version at
0033bf03, read 2026-12-02). The field list's type names the enum without its members, so
they are written here.
"""

from __future__ import annotations

from ...dialects.surface import load_surface
from ...sources.envvars import EngineVariable
from ...sources.vocab import Vocabulary, surface_vocabulary
from .fields import QUANTIZATION_METHODS, literals

SURFACE = "vllm-0.33"
ATTENTION_BACKENDS = frozenset(
    name.lower()
    for name in (
        "FLASH_ATTN",
        "FLASH_ATTN_DIFFKV",
        "TRITON_ATTN",
        "ROCM_ATTN",
        "ROCM_AITER_MLA",
        "ROCM_AITER_TRITON_MLA",
        "ROCM_AITER_FA",
        "ROCM_AITER_MLA_SPARSE",
        "XPU_MLA_SPARSE",
        "TORCH_SDPA",
        "FLASHINFER",
        "FLASHINFER_MLA",
        "FLASHINFER_MLA_SPARSE",
        "TRITON_MLA",
        "TRITON_MLA_SPARSE",
        "CUTLASS_MLA",
        "FLASHMLA",
        "FLASHMLA_SPARSE",
        "FLASH_ATTN_MLA",
        "NO_ATTENTION",
        "FLEX_ATTENTION",
        "TREE_ATTN",
        "ROCM_AITER_UNIFIED_ATTN",
        "CPU_ATTN",
        "TURBOQUANT",
        "CUSTOM",
        "AUTO",
    )
)
# the speculative-config keys the fuzzer writes beside the surface's fields
SPECULATIVE_KEYS = ("speculative-config.method", "speculative-config.num_speculative_tokens")

# the parallel sizes in the spellings vLLM accepts (dashes read as underscores): GPUs are
# tp x pp x dp (vllm/config/parallel.py, world_size x data_parallel_size)
PARALLEL = {
    "tp": ("tensor_parallel_size", "tp"),
    "pp": ("pipeline_parallel_size", "pp"),
    "dp": ("data_parallel_size", "dp"),
}

# the environment variables that change what vLLM does with its arguments
VARIABLES = (
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
        "vllm-project/vllm v0.33.0 vllm/v1/worker/gpu_worker.py Worker.determine_available_memory",
    ),
)


def _extra() -> dict[str, frozenset[str]]:
    """Values the field list types without listing them as choices: the attention
    backends (above); `kv_cache_dtype`, whose `Literal[...] | str` the parser takes as any
    string while `CacheConfig` refuses all but the literals; `quantization`, a string the
    release checks against its quantization methods (both as the dialect does: `fields`)."""
    kv = load_surface(SURFACE).fields["kv_cache_dtype"]
    return {
        "attention_backend": ATTENTION_BACKENDS,
        "kv_cache_dtype": frozenset(literals(kv.type)),
        "quantization": frozenset(QUANTIZATION_METHODS),
    }


def vocabulary() -> Vocabulary:
    """vLLM's keys for detection: the release surface, in any case for the backend."""
    return surface_vocabulary("vllm", SURFACE, _extra(), any_case=("attention_backend",))


def config_keys() -> tuple[str, ...]:
    """Every field of the release in vLLM's own spelling (dashes), and the speculative
    config's two keys as dotted paths."""
    fields = load_surface(SURFACE).fields
    return (*(name.replace("_", "-") for name in fields), *SPECULATIVE_KEYS)
