"""The defaults SGLang 0.5 derives from GPU memory, re-authored from
`python/sglang/srt/arg_groups/memory_hook.py` (`handle_gpu_memory_settings`,
`reserve_for_graph_mb`, v0.5.23; 0.5.16's `server_args.py _handle_gpu_memory_settings`
where it differs, by `release`): the chunked prefill size and the decode CUDA-graph batch
ceiling by memory tier, then `mem_fraction_static = round((gpu - reserved) / gpu, 3)`
with, in MiB,

    reserved = 512 + 1.5 x activation tokens + tp x pp / 8 x 1024 + graph reserve
    activation tokens = max(chunk, 2048)  (chunk <= 0: max(max_prefill_tokens, 2048);
                        a PD decode server: max(running requests x draft tokens, 2048))
    decode max_bs = the tier's, or an explicit --cuda-graph-max-bs-decode, or the largest of
                    explicit --cuda-graph-bs-decode sizes (0.5.16's --cuda-graph-bs)
    graph reserve = 2 x decode max_bs (unless a PD prefill server or graphs are off)
                    + with attention DP: 3 x max_bs x attn_dp_size (+1.5 x ... above 300)
                    + the prefill graphs on a CUDA GPU (not a PD decode server, no pipeline
                      stages, no vision tower): 8 x the captured sizes up to the chunk,
                      1.5 GiB under MLA (constraints/engines/sglang/memory.py); with
                      them, 1 GiB more under DeepEP (--moe-a2a-backend deepep)
    reserved >= 10 GiB on a GPU above 60 GiB, then + 2 GiB under DeepEP with the decode
    graphs on (reserve_for_deepep_a2a_mb; not a PD prefill server).

The memory hook runs before the speculative hook, so EAGLE's max_running_requests of 48
does not cap the graph ceiling here (the oracle's derived values agree).

A multimodal model (not `language_only`, not a PD decode server) then gets a smaller
fraction for its vision tower (`adjust_mem_fraction_for_vlm`, same file): x 0.95 x
clamp(1 - 0.1 x (layers x hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05), from the
`vision_config`'s layers and hidden size (`vlm_fraction`).

When `max_running_requests` is unset, SGLang sizes it from the KV pool once the pool is
known (`mem_cache/kv_cache_configurator.py resolve_max_num_reqs`): per DP worker
min(clamp(pool tokens / context length x 512, 2048, 4096), pool tokens / 2); an explicit
value becomes min(value // attn_dp_size, pool tokens / 2) (`pool_running_requests`).

The KV pool SGLang then sizes is `free after weights - pre-load free x (1 - fraction)`
(`mem_cache/kv_cache_configurator.py _profile_available_bytes`), roughly
`total x fraction - weights`: the "sglang" memory terms of the memory model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constraints.engines.sglang.memory import prefill_graph_reserve_mib, prefill_graphs_on
from constraints.engines.sglang.rules.sglang import chunk_for_memory
from constraints.facts.model import ModelSpec, load_json
from constraints.rules.base import release_key

GIB_MIB = 1024


def decode_graph_max_bs(
    memory_mib: float, tp: int, max_running_requests: int | None, release: str = "0.5.23"
) -> int:
    """The decode CUDA-graph batch ceiling SGLang derives (capped at an explicit
    max_running_requests from 0.5.23 on). SGLang 0.5.16 (server_args.py
    `_handle_gpu_memory_settings`, v0.5.16) gave the 20-35 GiB tier 24 / 80 (tp >= 4) and
    did not cap the ceiling at max_running_requests."""
    old = bool(release) and release_key(release) < release_key("0.5.23")
    if memory_mib < 20 * GIB_MIB:
        bs = 8
    elif memory_mib < 35 * GIB_MIB:
        bs = (24 if tp < 4 else 80) if old else (48 if tp < 4 else 160)
    elif memory_mib < 60 * GIB_MIB:
        bs = 32 if tp < 4 else 160
    elif memory_mib < 160 * GIB_MIB:
        bs = 256 if tp < 4 else 512
    else:
        bs = 512
    if not old and max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests
    return bs


@dataclass(frozen=True)
class MemoryDefaults:
    """What SGLang derives for one GPU and argument set, and the reserve behind the fraction."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    reserved_mib: float
    mem_fraction_static: float
    vision: tuple[int, int] | None = None  # the vision tower that lowered the fraction
    vlm_factor: float = 1.0  # the fraction after / before that adjustment


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
    vision: tuple[int, int] | None = None,
    prefill_graphs: bool | None = None,
    mla: bool = False,
    release: str = "0.5.23",
    attn_cp: int = 1,
    prefill_cuda_graphs: bool = True,
    decode_max_bs: int | None = None,
    multimodal: bool | None = None,
    max_total_tokens: int | None = None,
    deepep: bool = False,
    lora: bool = False,
    dp_attention: bool | None = None,
    context_length: int | None = None,
) -> MemoryDefaults:
    """SGLang's memory-derived defaults for a GPU of `memory_mib` MiB; `vision` is the
    (layers, hidden size) of a multimodal model's vision tower (`vision_tower`), None for
    a language model or one served language-only. `cuda_graphs`: the decode graphs are
    on (not `disable_cuda_graph` / `disable_decode_cuda_graph`); `prefill_cuda_graphs`:
    the prefill graphs are not disabled by a flag; `prefill_graphs` None decides them as
    SGLang does on a CUDA GPU (`prefill_graphs_on`), a bool forces them. `decode_max_bs`:
    a decode graph ceiling the user gave (`cuda_graph_max_bs_decode`, or the largest of
    `cuda_graph_bs_decode`), kept as given, not capped at max_running_requests
    (handle_gpu_memory_settings caps only the ceiling it derived). `multimodal`: the
    model has a vision tower even where it is served language-only (the prefill graphs
    stay off for it: disable_breakable_cudagraph_if_incompatible reads the model config);
    None: `vision` says. `max_total_tokens` caps the prefill graphs' largest capture.
    `deepep`: the MoE all-to-all runs DeepEP (`--moe-a2a-backend deepep`, expert
    parallelism): 0.5.23 reserves 1 GiB for it beside the breakable prefill graphs
    (`reserve_for_graph_mb`) and 2 GiB for the buffers the decode graphs capture, on top
    of the 10 GiB floor (`reserve_for_deepep_a2a_mb`, memory_hook.py); not modelled
    before 0.5.23.
    `lora`: LoRA is on (SGLang 0.5.16 keeps the prefill graphs off with it).
    `dp_attention`: 0.5.16's `--enable-dp-attention` as written (None: attn_dp > 1).
    SGLang 0.5.16 derives the fraction (`_handle_gpu_memory_settings`) before
    `_handle_data_parallelism` turns the switch off for dp_size 1, so the switch alone
    adds the padding (x dp_size) and keeps the prefill graphs off (server_args.py
    `reserve_for_graph_mb`, `_disable_breakable_cudagraph_if_incompatible`, v0.5.16).
    `context_length`: an explicit one, which caps 0.5.16's prefill graphs too."""
    chunk = chunked_prefill_size
    if chunk is None:
        chunk = chunk_for_memory(int(memory_mib), release)
    max_bs = (
        decode_graph_max_bs(memory_mib, tp, max_running_requests, release)
        if decode_max_bs is None
        else decode_max_bs  # an explicit ceiling is kept (not capped, not tiered)
    )
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
    # attention DP's padding: by attn_dp_size from 0.5.23; 0.5.16 by the switch as written
    # (`dp_attention`), read before _handle_data_parallelism turns it off for one DP group
    dp_padding = attn_dp > 1 if dp_attention is None else dp_attention
    if dp_padding and disaggregation_mode != "prefill":
        reserved += max_bs * attn_dp * 3
        if max_bs > 300:
            reserved += max_bs * attn_dp * 1.5
    # the prefill CUDA graphs, on by default on a CUDA GPU (None: as SGLang decides there;
    # False: off, as where torch sees no GPU): constraints/engines/sglang/memory.py
    if prefill_graphs is None and release and release_key(release) < release_key("0.5.23"):
        prefill_graphs = prefill_graphs_on_0_5_16(
            cuda_graphs=prefill_cuda_graphs,
            disaggregation_mode=disaggregation_mode,
            multimodal=vision is not None if multimodal is None else multimodal,
            attn_cp=attn_cp,
            dp_attention=attn_dp > 1 if dp_attention is None else dp_attention,
            mla=mla,
            lora=lora,
        )
    if prefill_graphs is None:
        prefill_graphs = prefill_graphs_on(
            cuda_graphs=prefill_cuda_graphs,
            pp=pp,
            disaggregation_mode=disaggregation_mode,
            multimodal=vision is not None if multimodal is None else multimodal,
            attn_cp=attn_cp,
        )
    deepep = deepep and bool(release) and release_key(release) >= release_key("0.5.23")
    if prefill_graphs:
        cap = max_total_tokens
        if context_length is not None and release and release_key(release) < release_key("0.5.23"):
            # 0.5.16 clamps the prefill graphs' largest capture to an explicit context
            # length (server_args.py _handle_gpu_memory_settings, v0.5.16)
            cap = context_length if cap is None else min(cap, context_length)
        reserved += prefill_graph_reserve_mib(chunk, mla=mla, max_total_tokens=cap)
        if deepep:  # the breakable prefill graphs' DeepEP bridge pool
            reserved += GIB_MIB
    if memory_mib > 60 * GIB_MIB:
        reserved = max(reserved, 10 * GIB_MIB)
    if deepep and cuda_graphs and disaggregation_mode != "prefill":
        reserved += 2 * GIB_MIB  # DeepEP buffers captured in the decode graphs
    fraction = round((memory_mib - reserved) / memory_mib, 3)
    if vision is None or disaggregation_mode == "decode":
        return MemoryDefaults(chunk, max_bs, reserved, fraction)
    adjusted = vlm_fraction(fraction, *vision)
    return MemoryDefaults(chunk, max_bs, reserved, adjusted, vision, adjusted / fraction)


def prefill_graphs_on_0_5_16(
    *,
    cuda_graphs: bool = True,
    disaggregation_mode: str = "null",
    multimodal: bool = False,
    attn_cp: int = 1,
    dp_attention: bool = False,
    mla: bool = False,
    lora: bool = False,
) -> bool:
    """Whether SGLang 0.5.16 captures prefill graphs by default on a CUDA GPU (breakable,
    `model_executor/cuda_graph_config.py default_prefill_backend`): not with the prefill
    graphs disabled by a flag, not on a PD decode server
    (`_apply_cuda_graph_disaggregation_roles`), and not where
    `_disable_breakable_cudagraph_if_incompatible` turns them off: an MLA model, attention
    context parallelism, LoRA, attention DP, a multimodal model outside its allowlist
    (not modelled: every multimodal model counts as outside it); server_args.py, v0.5.16.
    Unlike 0.5.23, pipeline stages keep them on."""
    return (
        cuda_graphs
        and disaggregation_mode != "decode"
        and not mla
        and attn_cp <= 1
        and not dp_attention
        and not lora
        and not multimodal
    )


# adjust_mem_fraction_for_vlm: the reference tower (ViT-L/14) and its defaults
VIT_LAYERS, VIT_HIDDEN = 24, 1024
# a config.json's vision_config spells its depth either way (Qwen2-VL: depth, which
# transformers' config class answers num_hidden_layers with)
VISION_LAYER_KEYS = ("num_hidden_layers", "depth")
# what transformers' vision config classes fill in when a checkpoint leaves the size out
# (transformers 5.x Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig: depth 32, hidden 3584;
# Qwen2.5-VL's published config.json gives hidden_size 1280 and no depth)
VISION_CLASS_DEFAULTS = {"qwen2_vl": (32, 3584), "qwen2_5_vl": (32, 3584)}


def vlm_fraction(fraction: float, layers: int, hidden: int) -> float:
    """The static fraction SGLang keeps for a multimodal model with this vision tower
    (`adjust_mem_fraction_for_vlm`; the same operations, so the same float)."""
    ratio = (layers * hidden**2) / (VIT_LAYERS * VIT_HIDDEN**2)
    factor = 1.0 - 0.1 * (ratio - 1.0)
    factor = max(0.8, min(1.05, factor))
    return fraction * (0.95 * factor)


def vision_tower(
    config: str | Path | Mapping[str, Any] | ModelSpec | None,
) -> tuple[int, int] | None:
    """(layers, hidden size) of a multimodal model's vision tower from its config.json (a
    path, a folder or the dict, or the ModelSpec read from it), or None for a language
    model.

    SGLang treats a model as multimodal by its architecture (`configs/model_config.py
    is_multimodal_model`, a list of ~100 classes) or a text sub-config; arbiter takes a
    config with a `vision_config` and either a `text_config` or an architecture of the
    `...ForConditionalGeneration` / `...VL...` kind. Sizes the config leaves out take the
    vision config class's defaults where known (`VISION_CLASS_DEFAULTS`), else SGLang's
    (24 layers, 1024 hidden)."""
    if config is None:
        return None
    if isinstance(config, ModelSpec):
        if config.hf_config is None:
            return None
        data: Mapping[str, Any] = config.hf_config
    else:
        try:
            data, _ = load_json(config, "config.json")
        except Exception:  # an unreadable config is reported where the model facts are read
            return None
    tower = data.get("vision_config")
    if not isinstance(tower, Mapping):
        return None
    arch = " ".join(str(a) for a in data.get("architectures") or ())
    if not (
        isinstance(data.get("text_config"), Mapping)
        or "ForConditionalGeneration" in arch
        or "VL" in arch
    ):
        return None
    default_layers, default_hidden = VISION_CLASS_DEFAULTS.get(
        str(tower.get("model_type") or ""), (VIT_LAYERS, VIT_HIDDEN)
    )
    layers = next((tower[k] for k in VISION_LAYER_KEYS if tower.get(k)), default_layers)
    return int(layers), int(tower.get("hidden_size") or default_hidden)


def pool_running_requests(
    pool_tokens: int,
    context_len: int,
    max_running_requests: int | None = None,
    attn_dp: int = 1,
) -> int:
    """The running requests SGLang allows per DP worker once its KV pool holds
    `pool_tokens` (`resolve_max_num_reqs`)."""
    if max_running_requests is not None:
        return min(max(1, max_running_requests // attn_dp), pool_tokens // 2)
    estimated = int(pool_tokens / context_len * 512)
    estimated = max(min(estimated, 4096), 2048)
    return min(estimated, pool_tokens // 2)


def kv_tokens(
    memory_mib: float, fraction: float, weight_bytes: float, kv_bytes_per_token: float
) -> int:
    """SGLang's own sizing of the KV pool in tokens, per rank: `total x fraction -
    weights`, over the bytes one token takes in every layer's K and V."""
    pool = memory_mib * 2**20 * fraction - weight_bytes
    return max(0, int(pool // kv_bytes_per_token))


__all__ = [
    "MemoryDefaults",
    "decode_graph_max_bs",
    "derive",
    "kv_tokens",
    "pool_running_requests",
    "vision_tower",
    "vlm_fraction",
]
