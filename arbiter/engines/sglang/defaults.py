"""What SGLang 0.5 decides for the fields a user leaves unset, as claims: its derivations
(`derived_claims`: the static memory fraction by GPU memory, EAGLE's automatic steps /
top-k / draft tokens, the n-gram defaults) and its plain defaults (`unset_claims`), which
checking a configuration pins because they are what SGLang runs."""

from __future__ import annotations

from typing import Any

from constraints.engines.sglang.rules.backend import default_attention_backend
from constraints.engines.sglang.rules.models import HOOK_FILES, hook_backend
from constraints.engines.sglang.rules.sglang import (
    EAGLE_FAMILY,
    chunk_for_memory,
    deterministic_fallback,
)
from constraints.profiles import Profile, get_profile
from constraints.rules.base import release_key
from constraints.schema import lookup
from constraints.specs import DeviceSpec, ModelSpec

from ...claims import AnyClaim, func
from ...dialects._base import DialectError, DialectInput
from ...dialects.open_defaults import EngineDefault, open_default_claims
from .map import SHARED, S, fa3_runs_triton, split_fa3_runs_triton, split_same
from .memory import derive
from .record import NativeSglang
from .serve import Arguments

# _auto_choose_speculative_params: (steps, topk, draft tokens)
EAGLE_AUTO_WIDE = ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")
HOOKS = "python/sglang/srt/arg_groups"
NGRAM_BREADTH = 10  # speculative_ngram_max_bfs_breadth default
# SGLang's defaults (ServerArgs, python/sglang/srt/server_args.py, sgl-project/sglang
# v0.5.23) of the fields it does not derive: what it runs when they are left unset. One
# blamable claim, `sglang.unset`, so that a conflict through one says which field to set.
UNSET_SOURCE = "python/sglang/srt/server_args.py ServerArgs defaults (v0.5.23)"


def _unset(name: str, path: str, value: Any) -> EngineDefault:
    return EngineDefault(name, path, value, UNSET_SOURCE, "sglang.unset", blame=True)


OPEN_DEFAULTS = (
    _unset("tp_size", "parallel_config.tensor_parallel_size", 1),
    _unset("pp_size", "parallel_config.pipeline_parallel_size", 1),
    _unset("dp_size", S + "dp_size", 1),
    _unset("attn_dp_size", S + "attn_dp_size", 1),
    _unset("attn_cp_size", S + "attn_cp_size", 1),
    _unset("page_size", S + "page_size", 1),
    _unset("attention_backend", S + "attention_backend", None),
    _unset("prefill_attention_backend", S + "prefill_attention_backend", None),
    _unset("decode_attention_backend", S + "decode_attention_backend", None),
    _unset("speculative_algorithm", S + "speculative_algorithm", None),
    _unset("disable_radix_cache", S + "disable_radix_cache", False),
    _unset("disable_overlap_schedule", S + "disable_overlap_schedule", False),
    _unset("enable_hierarchical_cache", S + "enable_hierarchical_cache", False),
    _unset("enable_deterministic_inference", S + "enable_deterministic_inference", False),
    _unset("disaggregation_mode", S + "disaggregation_mode", "null"),
    _unset(
        "disaggregation_decode_enable_radix_cache",
        S + "disaggregation_decode_enable_radix_cache",
        False,
    ),
    _unset("disaggregation_transfer_backend", S + "disaggregation_transfer_backend", "mooncake"),
    _unset("enable_multi_layer_eagle", S + "enable_multi_layer_eagle", False),
    _unset("enable_mixed_chunk", S + "enable_mixed_chunk", False),
    _unset("enable_lora", "runtime_config.enable_lora", False),
    _unset("kv_cache_dtype", "quant_config.kv_cache_quant_algo", None),
    _unset("kv_cache_dtype", S + "kv_cache_dtype", "auto"),
)


def algo(args: Arguments) -> str | None:
    algo = args.values.get("speculative_algorithm")
    if algo is None:
        return None
    algo = str(algo).upper()
    return "EAGLE" if algo == "NEXTN" else algo


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def profile_release(profile: str | Profile | None) -> str:
    """The SGLang release of a reading's profile (a name, an alias or a Profile)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile or "sglang-0.5.23")
    return prof.release or prof.version


def derived_claims(
    parsed: DialectInput[NativeSglang],
    model: ModelSpec | None,
    device: DeviceSpec | None,
    vision: tuple[int, int] | None = None,
) -> list[AnyClaim]:
    """What SGLang derives for the fields left unset, as func claims named
    `sglang.derived.<field>` (the defaults that need no facts are default rules).
    `vision`: a multimodal model's vision tower (layers, hidden size), which lowers the
    derived static fraction unless the model is served language-only."""
    args: Arguments = parsed.native.arguments
    v = args.values
    claims: list[AnyClaim] = []
    spec_algo = algo(args)
    arch = model.architecture if model is not None else "LlamaForCausalLM"
    if spec_algo in EAGLE_FAMILY and v.get("speculative_num_steps") is None:
        if (
            v.get("speculative_eagle_topk") is not None
            or v.get("speculative_num_draft_tokens") is not None
        ):
            raise DialectError(
                "SGLang derives speculative_num_steps, speculative_eagle_topk and "
                "speculative_num_draft_tokens together: with speculative_num_steps unset the "
                "other two must be unset too (_handle_eagle_family asserts it)",
                key="speculative_num_steps",
                file=args.file,
            )
        wide = spec_algo != "STANDALONE" and arch in EAGLE_AUTO_WIDE
        steps, topk, draft = (5, 4, 8) if wide else (3, 1, 4)
        claims.append(
            func(
                "sglang.derived.speculative_params",
                {
                    S + "speculative_num_steps": steps,
                    S + "speculative_eagle_topk": topk,
                    S + "speculative_num_draft_tokens": draft,
                },
                source=f"{HOOKS}/speculative_hook.py _auto_choose_speculative_params ({arch})",
            )
        )
    if spec_algo == "NGRAM":
        breadth = v.get("speculative_ngram_max_bfs_breadth") or NGRAM_BREADTH
        fixes: dict[str, Any] = {S + "speculative_eagle_topk": breadth}
        given = v.get("speculative_num_draft_tokens")
        ngram_draft: int = 12 if given is None else int(given)
        if given is None:
            fixes[S + "speculative_num_draft_tokens"] = ngram_draft
        if v.get("speculative_num_steps") is None:
            fixes[S + "speculative_num_steps"] = max(1, ngram_draft // breadth)
        claims.append(
            func("sglang.derived.ngram", fixes, source=f"{HOOKS}/speculative_hook.py _handle_ngram")
        )
    if v.get("lora_paths") and v.get("enable_lora") is None:
        claims.append(
            func(
                "sglang.derived.enable_lora",
                {"runtime_config.enable_lora": True},
                source=f"{HOOKS}/lora_hook.py check_lora_server_args (lora_paths given)",
            )
        )
    # 0.5.16 has no NVFP4 phase split: its _handle_kv4_compatibility checks the backends
    # as resolved (server_args.py, v0.5.16; sglang.kv4-mha-backends / kv4-mla-backends)
    new_phases = release_key(profile_release(parsed.profile)) >= release_key("0.5.23")
    phases = nvfp4_phases(args, model, device) if new_phases else {}
    if phases:
        claims.append(
            func(
                "sglang.derived.nvfp4_phases",
                phases,
                source=f"{HOOKS}/kv_cache_hook.py handle_nvfp4_prefill_kv_dequant_dtype",
            )
        )
    backend = derived_backend(args, model, device, profile_release(parsed.profile))
    if backend is not None:
        chosen, source = backend
        claims.append(
            func(
                "sglang.derived.attention_backend", {S + "attention_backend": chosen}, source=source
            )
        )
    memory = device.memory_mib if device is not None else lookup("device.memory_mib").default
    release = profile_release(parsed.profile)
    memory_source = (
        f"{HOOKS}/memory_hook.py handle_gpu_memory_settings"
        if release_key(release) >= release_key("0.5.23")
        else f"sglang {release}: python/sglang/srt/server_args.py _handle_gpu_memory_settings"
    )
    if v.get("chunked_prefill_size") is None:
        # what SGLang derives is no choice: a page size that does not divide it is refused
        # (sglang.chunk-multiple-of-page), not met by another chunk
        claims.append(
            func(
                "sglang.derived.chunked_prefill_size",
                {S + "chunked_prefill_size": chunk_for_memory(int(memory), release)},
                source=f"{memory_source} ({memory:g} MiB)",
            )
        )
    if v.get("mem_fraction_static") is None:
        chunk = v.get("chunked_prefill_size")
        defaults = derive(
            memory,
            chunked_prefill_size=chunk,
            tp=v.get("tp_size", 1),
            pp=v.get("pp_size", 1),
            attn_dp=v.get("attn_dp_size", 1),
            max_running_requests=v.get("max_running_requests"),
            max_prefill_tokens=v.get("max_prefill_tokens", 16384),
            disaggregation_mode=v.get("disaggregation_mode", "null"),
            draft_tokens=v.get("speculative_num_draft_tokens"),
            vision=None if v.get("language_only") or v.get("language_model_only") else vision,
            release=release,
            # the graphs as SGLang decides them on a CUDA GPU: the decode graphs unless a
            # flag turns them off, the prefill graphs (cuda_graph_config.py
            # default_prefill_backend: breakable under CUDA) by prefill_graphs_on
            cuda_graphs=not (v.get("disable_cuda_graph") or v.get("disable_decode_cuda_graph")),
            prefill_cuda_graphs=not (
                v.get("disable_cuda_graph") or v.get("disable_prefill_cuda_graph")
            ),
            prefill_graphs=None,
            mla=model is not None and model.family == "mla",
            attn_cp=int(v.get("attn_cp_size") or 1),
            decode_max_bs=_decode_max_bs(v),
            multimodal=vision is not None,
            max_total_tokens=v.get("max_total_tokens"),
            deepep=v.get("moe_a2a_backend") == "deepep",
            lora=bool(v.get("enable_lora") or v.get("lora_paths")),
            dp_attention=args.dp_attention,
            context_length=v.get("context_length"),
        )
        source = f"{memory_source}: ({memory:g} - {defaults.reserved_mib:g}) / {memory:g} MiB"
        if defaults.vision is not None:
            source += (
                f", x {defaults.vlm_factor:.4f} for a vision tower of "
                f"{defaults.vision[0]} layers x {defaults.vision[1]} (adjust_mem_fraction_for_vlm)"
            )
        fraction = round(defaults.mem_fraction_static, 3)
        if fraction < 0:
            # the reserve exceeds the GPU (a large chunk on a small GPU): SGLang's
            # configuration stage takes the negative fraction, its model load finds no
            # memory for the weights; as 0 the memory rules name that refusal
            source += f" = {fraction:g}, below 0: nothing left for the weights or the KV pool"
            fraction = 0.0
        claims.append(
            func(
                "sglang.derived.mem_fraction_static",
                # fixed point of three decimals, as the option's domain holds it
                {SHARED["mem_fraction_static"]: fraction},
                source=source,
            )
        )
    return claims


def _decode_max_bs(values: dict[str, Any]) -> int | None:
    """The decode CUDA-graph ceiling the user gave: the largest of `cuda_graph_bs_decode`
    (SGLang takes max(bs) over an explicit list), else `cuda_graph_max_bs_decode`
    (arg_groups/memory_hook.py handle_gpu_memory_settings, v0.5.23)."""
    sizes = values.get("cuda_graph_bs_decode")
    if isinstance(sizes, (list, tuple)) and sizes:
        return max(int(b) for b in sizes)  # a command line gives them as strings
    given = values.get("cuda_graph_max_bs_decode")
    return None if given is None else int(given)


def derived_backend(
    args: Arguments,
    model: ModelSpec | None,
    device: DeviceSpec | None,
    release: str = "0.5.23",
) -> tuple[str, str] | None:
    """The attention backend SGLang runs for an unset attention_backend, with its source
    (None: written, or decided by a model override hook arbiter does not model); the
    backend both phases name when they name one. fa3 with an fp8_e5m2 KV cache runs
    triton instead, unless the phases name it."""
    v = args.values
    if v.get("attention_backend") is not None:
        return None
    sm = device.sm if device is not None else int(lookup("device.sm").default)
    arch = model.architecture if model is not None else str(lookup("model.architecture").default)
    if split_same(v) and hook_backend(arch, sm, phase_written=True) is not None:
        # a model hook (Llama 4) sets attention_backend first and its check reads that;
        # the phases naming one backend replace it afterwards, outside the checked value
        return None
    if split_same(v):
        # prefill and decode name one backend: SGLang runs it as attention_backend
        # (overrides._attention_backend_default, before its default backend is picked)
        both = str(v["prefill_attention_backend"])
        source = (
            f"{HOOKS}/overrides.py _attention_backend_default: prefill_attention_backend"
            f" and decode_attention_backend both name {both}"
        )
        if split_fa3_runs_triton(v):
            # the fa3 fallback runs after the split override and rewrites the resolved
            # attention_backend (the phases, named, still run fa3): server_args.py
            # _handle_attention_backend_compatibility, v0.5.16 and v0.5.23
            return "triton", source + ", then _attention_backend_fa3_fp8_fallback: triton"
        return both, source
    mla = model is not None and model.family == "mla"
    phase_written = (
        v.get("prefill_attention_backend") is not None
        or v.get("decode_attention_backend") is not None
    )
    if (
        v.get("enable_deterministic_inference")
        and hook_backend(arch, sm, phase_written=phase_written) is None
    ):
        fallback = deterministic_fallback(sm, arch)
        source = (
            f"{HOOKS}/overrides.py _deterministic_attention_backend (SM {sm}, {arch},"
            f" deterministic inference): {fallback}"
        )
        if fa3_runs_triton(fallback, v):
            fallback = "triton"
            source += ", then triton for an fp8_e5m2 KV cache"
        return fallback, source
    topk = v.get("speculative_eagle_topk")
    chosen = default_attention_backend(
        sm,
        mla,
        arch,
        algorithm=algo(args),
        topk=None if topk is None else int(topk),
        page_size=v.get("page_size"),
        phase_written=phase_written,
        asymmetric_kv=model is not None and model.asymmetric_kv,
        release=release,
    )
    if chosen is None:
        return None
    hooked = hook_backend(arch, sm, phase_written=phase_written)
    where = (
        f"model_overrides {HOOK_FILES[arch]}"
        if hooked is not None
        else "model_override_base.py get_default_attn_backend"
    )
    source = f"{HOOKS}/{where} (SM {sm}, {arch}{', MLA' if mla else ''}): {chosen}"
    if fa3_runs_triton(chosen, v):
        chosen = "triton"
        source += (
            ", then triton for an fp8_e5m2 KV cache (overrides._attention_backend_fa3_fp8_fallback)"
        )
    return chosen, source


# kv_cache_hook._NVFP4_PREFILL_BACKEND: what prefill reads an nvfp4 KV cache as -> its backend
NVFP4_PREFILL_BACKEND = {"fp8_e4m3": "flashinfer", "nvfp4": "trtllm_mha"}


def nvfp4_phases(
    args: Arguments, model: ModelSpec | None, device: DeviceSpec | None
) -> dict[str, str]:
    """The prefill and decode backends SGLang declares for an nvfp4 KV cache, for the
    phases left unset (kv_cache_hook.handle_nvfp4_prefill_kv_dequant_dtype: prefill on
    flashinfer over an FP8 workspace or on trtllm_mha over native NVFP4, decode on
    trtllm_mha). The handler runs after the model override hooks and before SGLang's
    default backend, so it reads the prefill backend as written, else attention_backend
    as written or as a hook sets it. Empty when the KV cache is not nvfp4, or when the
    backend it reads is neither of the two (refused: sglang.nvfp4-kv-phases)."""
    v = args.values
    if v.get("kv_cache_dtype") != "nvfp4":
        return {}
    sm = device.sm if device is not None else int(lookup("device.sm").default)
    arch = model.architecture if model is not None else str(lookup("model.architecture").default)
    prefill, decode = v.get("prefill_attention_backend"), v.get("decode_attention_backend")
    attention = v.get("attention_backend")
    if attention is None:
        attention = hook_backend(arch, sm, phase_written=prefill is not None or decode is not None)
    explicit = prefill or attention
    dequant = v.get("prefill_kv_cache_dequant_dtype") or "auto"
    if dequant == "auto":
        by_backend = {b: d for d, b in NVFP4_PREFILL_BACKEND.items()}
        if explicit is None:
            dequant = "nvfp4" if sm // 10 == 10 else "fp8_e4m3"
        elif str(explicit) in by_backend:
            dequant = by_backend[str(explicit)]
        else:
            return {}
    fixes = {}
    if prefill is None:
        fixes[S + "prefill_attention_backend"] = NVFP4_PREFILL_BACKEND[dequant]
    if decode is None:
        fixes[S + "decode_attention_backend"] = "trtllm_mha"
    return fixes


def unset_claims(parsed: DialectInput[NativeSglang]) -> list[AnyClaim]:
    """SGLang's own defaults for the fields the user left unset and SGLang does not derive
    (`open_defaults`), as claims: checking a configuration is checking what SGLang runs,
    so they are no choice for the solver (`tp_size` 1, no attention DP,
    `attention_backend` auto, ...)."""
    return open_default_claims(open_defaults(parsed))


def open_defaults(parsed: DialectInput[NativeSglang]) -> list[EngineDefault]:
    """The rows of `OPEN_DEFAULTS` the input leaves open: the field unset, the option not
    derived (`derived_claims`), `dp_size` not implied by `attn_dp_size`, LoRA not switched
    on by `lora_paths`."""
    args: Arguments = parsed.native.arguments
    derived = {p for c in parsed.native.derived for p in c.expr.paths()}
    return [
        row
        for row in OPEN_DEFAULTS
        if row.field not in args.values
        and row.path not in derived
        and not (row.field == "dp_size" and "attn_dp_size" in args.values)
        and not (row.field == "enable_lora" and args.values.get("lora_paths"))
    ]


__all__ = [
    "EAGLE_FAMILY",
    "NVFP4_PREFILL_BACKEND",
    "OPEN_DEFAULTS",
    "algo",
    "derived_backend",
    "derived_claims",
    "nvfp4_phases",
    "open_defaults",
    "unset_claims",
]
