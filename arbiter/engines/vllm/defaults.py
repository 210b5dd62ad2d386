"""The defaults vLLM 0.33 derives from the machine and from other fields.

Re-authored from vllm-project/vllm v0.33.0 (the `derived` rows of the field list were
obtained by running the same code, and tests/arbiter/test_vllm_defaults.py checks these
functions against them):

- `batch_tier`: `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py). For `vllm
  serve` (the OpenAI API server usage context): 16384 tokens / 1024 sequences at 160 GiB
  of device memory or more; 8192 / 1024 at 70 GiB or more when the device name has no
  "a100" and it is not a GB10 (compute capability 12.1); 2048 / 256 otherwise. A machine
  vLLM cannot query gets the last tier.
- `batch_defaults`: `EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`:
  performance_mode throughput doubles both defaults; with chunked prefill off a default
  budget is raised to max_model_len; a default budget is capped at max_num_seqs x
  max_model_len; a default max_num_seqs is capped at the budget. A value the user gave is
  never touched.
- `cudagraph_sizes`: `VllmConfig._set_cudagraph_sizes` (vllm/config/vllm.py): none under
  enforce_eager; otherwise the ceiling is the user's max_cudagraph_capture_size, or the
  largest of an explicit cudagraph_capture_sizes list, or min(2 x max_num_seqs x decode
  query length, 512) (1024 on a compute-capability-10.x device), then capped at
  max_num_batched_tokens; the ladder is 1, 2, 4, then every 8 below 256 and every 16 from
  256 up to the ceiling.
- `cudagraph_memory`: what vLLM subtracts from the KV budget for those graphs
  (`GPUModelRunner.profile_cudagraph_memory`), estimated, since vLLM measures it.

What vLLM runs for the fields an input leaves open, in the common form
(`arbiter.dialects.open_defaults`): `OPEN_DEFAULTS` holds the fixed rows (no speculation,
no quantization method, the draft at the target's tensor-parallel size, no redundant
experts, no NUMA binding lists); the dialect adds the field list's own defaults and the
rows it derives from the model and the other fields (`vllm.native._open_defaults`). All
are facts of the run: one setup claim, `LEFT_OPEN`, never blamed (vLLM's defaults are
what it runs; the fields to set are named by the rules they meet).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from ...dialects.open_defaults import EngineDefault

GIB_MIB = 1024
LEFT_OPEN = "vLLM defaults of the fields left open"
# vllm/engine/arg_utils.py EngineArgs and vllm/config/ (vllm-project/vllm v0.33.0)
ARGS = "vllm/engine/arg_utils.py EngineArgs (v0.33.0)"


def _open(field: str, path: str, value: object) -> EngineDefault:
    return EngineDefault(field, path, value, ARGS, LEFT_OPEN)


OPEN_DEFAULTS = (
    _open("speculative_config", "speculative_config.decoding_type", "none"),
    _open("speculative_config", "vllm_config.speculative_method", "none"),
    _open("quantization", "vllm_config.quantization_method", "none"),
    _open(
        "speculative_config.draft_tensor_parallel_size",
        "vllm_config.draft_tensor_parallel_size",
        0,  # the target's: no solve sets it
    ),
    _open("eplb_config", "vllm_config.num_redundant_experts", 0),
    _open("numa_bind_nodes", "vllm_config.numa_bind_lists", False),  # or numa_bind_cpus
)


def open_defaults(given: Set[str], read: Set[str]) -> list[EngineDefault]:
    """The rows of `OPEN_DEFAULTS` an input leaves open: `given` its fields, `read` the
    keys its reading maps onto options ("speculative_config.<key>" included). The
    quantization method is pinned unless given (the dialect drops a pin it reads)."""
    left_open = {
        "speculative_config": "speculative_config" not in given,
        "quantization": True,
        "speculative_config.draft_tensor_parallel_size": (
            "speculative_config.draft_tensor_parallel_size" not in read
        ),
        "eplb_config": "eplb_config" not in given,
        "numa_bind_nodes": "numa_bind_nodes" not in given and "numa_bind_cpus" not in given,
    }
    return [row for row in OPEN_DEFAULTS if left_open[row.field]]


@dataclass(frozen=True)
class Tier:
    """The batch defaults of one device tier, and why it applies."""

    max_num_batched_tokens: int
    max_num_seqs: int
    why: str


def batch_tier(
    memory_mib: int | None, name: str = "", sm: int | None = None, release: str = "0.33"
) -> Tier:
    """vLLM's batch defaults for `vllm serve` on one device (None: not known). vLLM 0.24
    (`EngineArgs.get_batch_defaults`, v0.24.0; the `derived` rows of fields-0.24.yaml)
    has two tiers only: 8192 / 1024 at 70 GiB or more on a device whose name has no
    "a100", 2048 / 256 otherwise (no 160 GiB tier, no GB10 exception)."""
    if memory_mib is None:
        return Tier(2048, 256, "a device vLLM cannot query")
    gib = memory_mib / GIB_MIB
    if release == "0.24":
        if gib >= 70 and "a100" not in name.lower():
            return Tier(8192, 1024, f"{name}: {gib:.0f} GiB >= 70 GiB, not an A100 (vLLM 0.24)")
        reason = "an A100" if "a100" in name.lower() else f"{gib:.0f} GiB < 70 GiB"
        return Tier(2048, 256, f"{name}: {reason} (vLLM 0.24)")
    if gib >= 160:
        return Tier(16384, 1024, f"{name}: {gib:.0f} GiB >= 160 GiB")
    if gib >= 70 and "a100" not in name.lower() and sm != 121:
        return Tier(8192, 1024, f"{name}: {gib:.0f} GiB >= 70 GiB, not an A100 or GB10")
    reason = "an A100" if "a100" in name.lower() else f"{gib:.0f} GiB < 70 GiB"
    if sm == 121:
        reason = "a GB10"
    return Tier(2048, 256, f"{name}: {reason}")


@dataclass(frozen=True)
class BatchDefaults:
    """The budget and sequence limit vLLM runs with, each with its derivation."""

    max_num_batched_tokens: int
    max_num_seqs: int
    steps: tuple[str, ...]


def batch_defaults(
    tier: Tier,
    *,
    max_model_len: int,
    chunked_prefill: bool,
    budget: int | None = None,
    seqs: int | None = None,
    throughput: bool = False,
) -> BatchDefaults:
    """The values of max_num_batched_tokens and max_num_seqs after vLLM's defaulting
    (`budget` / `seqs`: what the user gave, or None)."""
    steps: list[str] = []
    b = budget if budget is not None else tier.max_num_batched_tokens
    s = seqs if seqs is not None else tier.max_num_seqs
    if budget is None or seqs is None:
        steps.append(
            f"device tier ({tier.why}): {tier.max_num_batched_tokens} tokens, {tier.max_num_seqs} sequences"
        )
    if throughput:
        if budget is None:
            b *= 2
        if seqs is None:
            s *= 2
        steps.append("performance_mode throughput doubles the defaults")
    if budget is None:
        if not chunked_prefill and b < max_model_len:
            b = max_model_len
            steps.append(
                f"chunked prefill off: the default budget is raised to max_model_len ({max_model_len})"
            )
        if s * max_model_len < b:
            b = s * max_model_len
            steps.append(f"the default budget is capped at max_num_seqs x max_model_len ({b})")
    if seqs is None and b < s:
        s = b
        steps.append(f"the default max_num_seqs is capped at the budget ({b})")
    return BatchDefaults(b, s, tuple(steps))


def cudagraph_ceiling(
    *,
    enforce_eager: bool,
    max_num_seqs: int,
    budget: int,
    given: int | None = None,
    sizes: list[int] | None = None,
    decode_query_len: int = 1,
    sm: int | None = None,
) -> int:
    """The largest CUDA-graph capture size vLLM uses (0: no CUDA graphs)."""
    if enforce_eager:
        return 0
    if given is None and sizes:
        given = max(sizes)
    if given is None:
        default = 1024 if sm is not None and 100 <= sm < 110 else 512
        given = min(max_num_seqs * decode_query_len * 2, default)
    return min(budget, given)


def cudagraph_ladder(ceiling: int) -> list[int]:
    """vLLM's default capture sizes up to a ceiling."""
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, ceiling + 1, 16)]
    return [s for s in sizes if s <= ceiling]


# vLLM's floor on a captured graph's own memory ("at least 1 MiB per graph for driver
# overhead", GPUModelRunner.profile_cudagraph_memory)
PER_GRAPH_BYTES = 1 << 20


def kept_capture_sizes(sizes: list[int], budget: int) -> list[int]:
    """Explicit capture sizes as vLLM captures them: deduplicated, sorted, those above
    the token budget dropped (`VllmConfig._set_cudagraph_sizes`, v0.24.0 and v0.33.0:
    `[i for i in dedup_sizes if i <= max_num_tokens]`); the ceiling is the last."""
    return sorted({int(s) for s in sizes if int(s) <= budget})


def cudagraph_memory(
    ceiling: int, decode_ceiling: int, act_per_token: int, sizes: list[int] | None = None
) -> int:
    """The CUDA-graph memory vLLM 0.33 subtracts from its KV budget, per GPU (0: no
    graphs).

    vLLM measures it (`GPUModelRunner.profile_cudagraph_memory`, vllm/v1/worker/
    gpu_model_runner.py; subtracted in `Worker.determine_available_memory` while
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is on, its default since 0.21): per capture
    mode, the memory of the first (largest) capture plus (graphs - 1) x the second
    capture's, at least 1 MiB; the modes share one pool, so the largest first capture
    counts once. With the default FULL_AND_PIECEWISE mode, PIECEWISE graphs cover the
    ladder up to `ceiling` and FULL graphs the uniform decode sizes up to
    `decode_ceiling`. We cannot measure: the first capture is taken as one forward's
    activations at the largest size (`act_per_token` x ceiling, arbiter's per-token
    workspace), every further graph as vLLM's 1 MiB floor. `sizes`: the capture sizes
    when the user gave them (`kept_capture_sizes`), instead of the default ladder."""
    if ceiling <= 0:
        return 0

    def ladder(top: int) -> list[int]:
        return [s for s in sizes if s <= top] if sizes else cudagraph_ladder(top)

    graphs = max(len(ladder(ceiling)) - 1, 0)
    if decode_ceiling > 0:
        graphs += max(len(ladder(decode_ceiling)) - 1, 0)
    return act_per_token * ceiling + graphs * PER_GRAPH_BYTES


__all__ = [
    "LEFT_OPEN",
    "OPEN_DEFAULTS",
    "BatchDefaults",
    "open_defaults",
    "Tier",
    "batch_defaults",
    "batch_tier",
    "cudagraph_ceiling",
    "cudagraph_ladder",
    "cudagraph_memory",
    "kept_capture_sizes",
]
