"""The defaults SGLang 0.5 derives from GPU memory, re-authored from
`python/sglang/srt/arg_groups/memory_hook.py` (`handle_gpu_memory_settings`,
`reserve_for_graph_mb`, v0.5.23): the chunked prefill size and the decode CUDA-graph batch
ceiling by memory tier, then `mem_fraction_static = round((gpu - reserved) / gpu, 3)`
with, in MiB,

    reserved = 512 + 1.5 x activation tokens + tp x pp / 8 x 1024 + graph reserve
    activation tokens = max(chunk, 2048)  (chunk <= 0: max(max_prefill_tokens, 2048);
                        a PD decode server: max(running requests x draft tokens, 2048))
    graph reserve = 2 x decode max_bs (unless a PD prefill server or graphs are off)
                    + with attention DP: 3 x max_bs x attn_dp_size (+1.5 x ... above 300)
    reserved >= 10 GiB on a GPU above 60 GiB.

The memory hook runs before the speculative hook, so EAGLE's max_running_requests of 48
does not cap the graph ceiling here (the oracle's derived values agree).

The KV pool SGLang then sizes is `free after weights - pre-load free x (1 - fraction)`
(`mem_cache/kv_cache_configurator.py _profile_available_bytes`), roughly
`total x fraction - weights`: the "sglang" memory terms of the memory model.
"""

from __future__ import annotations

from dataclasses import dataclass

from constraints.rules.sglang import chunk_for_memory

GIB_MIB = 1024


def decode_graph_max_bs(memory_mib: float, tp: int, max_running_requests: int | None) -> int:
    """The decode CUDA-graph batch ceiling SGLang derives (capped at an explicit
    max_running_requests)."""
    if memory_mib < 20 * GIB_MIB:
        bs = 8
    elif memory_mib < 35 * GIB_MIB:
        bs = 48 if tp < 4 else 160
    elif memory_mib < 60 * GIB_MIB:
        bs = 32 if tp < 4 else 160
    elif memory_mib < 160 * GIB_MIB:
        bs = 256 if tp < 4 else 512
    else:
        bs = 512
    if max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests
    return bs


@dataclass(frozen=True)
class MemoryDefaults:
    """What SGLang derives for one GPU and argument set, and the reserve behind the fraction."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    reserved_mib: float
    mem_fraction_static: float


def derive(
    memory_mib: float,
    *,
    chunked_prefill_size: int | None = None,
    tp: int = 1,
    pp: int = 1,
    attn_dp: int = 1,
    max_running_requests: int | None = None,
    max_prefill_tokens: int = 16384,
    disaggregation_mode: str = "null",
    draft_tokens: int | None = None,
    cuda_graphs: bool = True,
) -> MemoryDefaults:
    """SGLang's memory-derived defaults for a GPU of `memory_mib` MiB."""
    chunk = chunked_prefill_size
    if chunk is None:
        chunk = chunk_for_memory(int(memory_mib))
    max_bs = decode_graph_max_bs(memory_mib, tp, max_running_requests)
    if disaggregation_mode == "decode":
        running = max_running_requests or max_bs or 1
        activation = max(running * (draft_tokens or 1), 2048)
    elif chunk > 0:
        activation = max(chunk, 2048)
    else:
        activation = max(max_prefill_tokens, 2048)
    reserved = 512 + activation * 1.5 + tp * pp / 8 * 1024
    if cuda_graphs and disaggregation_mode != "prefill":
        reserved += max_bs * 2
    if attn_dp > 1 and disaggregation_mode != "prefill":
        reserved += max_bs * attn_dp * 3
        if max_bs > 300:
            reserved += max_bs * attn_dp * 1.5
    if memory_mib > 60 * GIB_MIB:
        reserved = max(reserved, 10 * GIB_MIB)
    fraction = round((memory_mib - reserved) / memory_mib, 3)
    return MemoryDefaults(chunk, max_bs, reserved, fraction)


def kv_tokens(
    memory_mib: float, fraction: float, weight_bytes: float, kv_bytes_per_token: float
) -> int:
    """SGLang's own sizing of the KV pool in tokens, per rank: `total x fraction -
    weights`, over the bytes one token takes in every layer's K and V."""
    pool = memory_mib * 2**20 * fraction - weight_bytes
    return max(0, int(pool // kv_bytes_per_token))


__all__ = ["MemoryDefaults", "decode_graph_max_bs", "derive", "kv_tokens"]
