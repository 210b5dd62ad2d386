"""SGLang's memory terms: `mem_fraction_static` of the whole device holds the weights and
the KV pool only (the activations and the CUDA graphs live in the rest), and the reserve
behind the fraction SGLang derives when none is given.

- The pool: `free after weights - pre-load free x (1 - fraction)`
  (mem_cache/kv_cache_configurator.py `_profile_available_bytes`, v0.5.23), roughly
  `total x fraction - weights`: no workspace term.
- Pipeline stages: the extra layers of an uneven split go to the last stages
  (get_pp_indices, python/sglang/srt/distributed/utils.py, v0.5.23).
- Attention DP (`attn_dp_size`, `SGLANG_ATTN_DP`) splits the tp ranks into groups that
  each hold the attention weights (`SglangMemoryTerms.attention_copies`).
- The CUDA-graph reserve of the derived fraction (`graph_reserve_mib`): SGLang 0.5.23's
  `reserve_for_graph_mb` (python/sglang/srt/arg_groups/memory_hook.py) adds, besides the
  decode graphs, the prefill graphs, which are on by default on a CUDA GPU
  (model_executor/cuda_graph_config.py `default_prefill_backend`: breakable when
  `is_cuda()`, i.e. torch sees a GPU; disabled elsewhere, so a CPU-only resolution of the
  same arguments leaves this term out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...facts.memory import Coefficients, MemoryTerms

SGLANG_ATTN_DP = "sglang_config.attn_dp_size"

# prefill_cuda_graph_config.bs when none is given: the captured token counts up to max_bs
# (arg_groups/cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes, v0.5.23)
_PREFILL_STEPS = ((4, 32, 4), (48, 256, 16), (288, 512, 32), (576, 1024, 64), (1280, 4096, 256))
PREFILL_GRAPH_MIB = 8  # MiB of non-torch memory per captured prefill size (non-MLA)
PREFILL_GRAPH_MLA_MIB = 1536  # the MLA backends' whole prefill-graph overhead
MLA_PREFILL_MAX_BS = 8192  # an MLA backend captures at most this many tokens


def prefill_capture_sizes(max_bs: int) -> tuple[int, ...]:
    """The prefill CUDA-graph token counts SGLang captures up to `max_bs`."""
    sizes = [s for lo, hi, step in _PREFILL_STEPS for s in range(lo, hi + 1, step)]
    sizes += list(range(4608, max_bs + 1, 512))
    return tuple(s for s in sizes if s <= max_bs)


def prefill_graph_max_bs(chunk: int, *, mla: bool, max_total_tokens: int | None = None) -> int:
    """The prefill graphs' largest capture when none is given: the chunked prefill size,
    at most 8192 under an MLA backend, capped at max_total_tokens when that is set
    (memory_hook.py handle_gpu_memory_settings, v0.5.23)."""
    top = min(MLA_PREFILL_MAX_BS, chunk) if mla else chunk
    return top if max_total_tokens is None else min(top, max_total_tokens)


def prefill_graph_reserve_mib(
    chunk: int, *, mla: bool = False, max_total_tokens: int | None = None
) -> float:
    """MiB SGLang reserves for the prefill CUDA graphs (reserve_for_graph_mb): 8 per
    captured size, or 1.5 GiB under an MLA backend."""
    if mla:
        return float(PREFILL_GRAPH_MLA_MIB)
    max_bs = prefill_graph_max_bs(chunk, mla=mla, max_total_tokens=max_total_tokens)
    return float(PREFILL_GRAPH_MIB * len(prefill_capture_sizes(max_bs)))


def prefill_graphs_on(
    *,
    cuda_graphs: bool = True,
    pp: int = 1,
    disaggregation_mode: str = "null",
    multimodal: bool = False,
    attn_cp: int = 1,
) -> bool:
    """Whether SGLang 0.5.23 captures prefill graphs by default on a CUDA GPU: not with
    the prefill graphs disabled (`disable_cuda_graph` or `disable_prefill_cuda_graph`:
    cuda_graph_hook.py handle_cuda_graph_config), not on a PD decode server
    (reserve_for_graph_mb), not with pipeline stages (apply_cuda_graph_compatibility:
    opt-in under PP), not with attention context parallelism and not for a multimodal
    model outside its allowlist (disable_breakable_cudagraph_if_incompatible; the
    allowlist is not modelled: every multimodal model counts as outside it)."""
    return (
        cuda_graphs
        and pp <= 1
        and attn_cp <= 1
        and disaggregation_mode != "decode"
        and not multimodal
    )


class SglangMemoryTerms(MemoryTerms):
    """SGLang 0.5: weights + KV pool within the whole device x mem_fraction_static."""

    name = "sglang"
    engine = "sglang"
    workspace_counted = False
    layouts = "attention-copies"
    layout_path = SGLANG_ATTN_DP
    # `--dp-size` replicas, each a model of its own on tp x pp GPUs (ServerArgs dp_size;
    # rule machine.sglang-dp-replicas-fit-devices, rules/parallel.py)
    replicas_path = "sglang_config.dp_size"
    replicas_rule = "machine.sglang-dp-replicas-fit-devices"
    source = "sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py v0.5.23"

    def coefficients(self, facts: Mapping[str, Any]) -> Coefficients:
        return Coefficients(0, 0, 0, 0)

    def stage_layers(self, layers: int, pp: int) -> tuple[int, ...]:
        pp = max(1, pp)
        base, extra = divmod(layers, pp)
        return tuple(base + (1 if i >= pp - extra else 0) for i in range(pp))

    def attention_copies(self, values: Mapping[str, Any]) -> int:
        """SGLang's attention data parallelism (`attn_dp_size`, `--enable-dp-attention
        --dp N`) splits the tp ranks into N attention groups of tp / N ranks, each holding
        the attention weights over its own ranks (attn_tp_size = tp_size // attn_dp_size
        // attn_cp_size: derive_attn_tp_size, python/sglang/srt/runtime_context.py,
        v0.5.23)."""
        return max(1, int(values.get(SGLANG_ATTN_DP) or 1))


TERMS = SglangMemoryTerms()
