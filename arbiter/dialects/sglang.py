"""SGLang dialect: `ServerArgs` fields (SGLang's `--config` YAML and launch command line)
-> claims; a resolution -> the same YAML shape.

Release line 0.5 (field list of 0.5.23, profile `sglang-0.5`). Reading
(`sglang_args.read_arguments`) names every unknown key and bad value at once. Then:

- a field with a shared counterpart becomes a **func** claim on it (`max_running_requests`
  -> `build_config.max_batch_size`, `context_length` -> `build_config.max_seq_len`,
  `mem_fraction_static` -> `kv_cache_config.free_gpu_memory_fraction`, `tp_size`,
  `pp_size`, `kv_cache_dtype`, `quantization`, `enable_lora`, `max_total_tokens`);
- a field with none is a func claim on `sglang_config` as written (`chunked_prefill_size`,
  `page_size`, `disable_radix_cache`, `disable_overlap_schedule`, attention DP, PD roles,
  the speculative fields); SGLang resolves some of those into the shared option, and the
  `sglang.*` rules say how (per-rank chunk, forced page size, radix cache of a decode
  server, overlap schedule under pipeline parallelism);
- a field SGLang rewrites even when given (`speculative_num_draft_tokens` of an EAGLE
  chain, `enable_mixed_chunk` under n-gram speculation, the n-gram draft breadth) is a
  **perf** claim: the rule that overrides it drops it, with the rule as the reason;
- what SGLang derives for an unset field is a **func** claim `sglang.derived.<field>`
  (`mem_fraction_static` by GPU memory, EAGLE's automatic steps / topk / draft tokens,
  the n-gram defaults) or a default rule of the pack (the chunk by GPU memory, 48 running
  requests under speculation);
- every other field is carried through untouched and written back unchanged.

`check_sglang()` answers SGLang's way: accept, adjust (an explicit value SGLang rewrites,
each change with the rule behind it) or reject (bad keys or values, or the conflicting
claims with their rule ids). `Verdict.warnings` lists what SGLang derives for the fields
left unset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.errors import SchemaError
from constraints.profiles import PROFILES, Profile
from constraints.rules import get_rule
from constraints.schema import lookup
from constraints.specs import DeviceSpec, ModelSpec

from ..claims import AnyClaim, func, perf, setup
from ..errors import ArbiterError, ConflictError
from ..resolution import Resolution
from ._base import DialectError, DialectInput, Verdict, machine_claims
from .sglang_args import Arguments, Problem, SglangArgsError, read_arguments
from .sglang_memory import derive

PROFILE = "sglang-0.5"
S = "sglang_config."
# SGLang field -> our option path (same meaning)
SHARED = {
    "tp_size": "parallel_config.tensor_parallel_size",
    "pp_size": "parallel_config.pipeline_parallel_size",
    "max_running_requests": "build_config.max_batch_size",
    "context_length": "build_config.max_seq_len",
    "mem_fraction_static": "kv_cache_config.free_gpu_memory_fraction",
    "max_total_tokens": "kv_cache_config.max_tokens",
    "enable_lora": "runtime_config.enable_lora",
    "kv_cache_dtype": "quant_config.kv_cache_quant_algo",
    "quantization": "quant_config.quant_algo",
}
# SGLang fields kept as written on sglang_config
OWN = (
    "attn_dp_size",
    "dp_size",
    "attn_cp_size",
    "chunked_prefill_size",
    "page_size",
    "disable_radix_cache",
    "disable_overlap_schedule",
    "enable_hierarchical_cache",
    "disaggregation_mode",
    "disaggregation_decode_enable_radix_cache",
    "disaggregation_transfer_backend",
    "attention_backend",
    "speculative_algorithm",
    "speculative_eagle_topk",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "enable_multi_layer_eagle",
    "enable_mixed_chunk",
)
# written field -> (the option SGLang resolves it into, the rules that decide it)
RESOLVED = {
    "chunked_prefill_size": ("build_config.max_num_tokens", ("sglang.attn-dp-divides-chunk",)),
    "page_size": ("kv_cache_config.tokens_per_block", ("sglang.backend-page-size",)),
    "disable_radix_cache": ("kv_cache_config.enable_block_reuse", ("sglang.pd-decode-radix",)),
    "disable_overlap_schedule": (
        "runtime_config.disable_overlap_scheduler",
        ("sglang.pp-disables-overlap",),
    ),
}
# explicit values SGLang rewrites: perf claims a rule may override
ADJUSTABLE = ("speculative_num_draft_tokens", "enable_mixed_chunk")
KV_DTYPES = {
    "auto": None,
    "bf16": None,
    "bfloat16": None,
    "fp8_e4m3": "FP8",
    "fp8_e5m2": "FP8",
    "nvfp4": "NVFP4",
}
QUANTIZATION = {
    "fp8": "FP8",
    "w8a8_fp8": "FP8",
    "modelopt_fp8": "FP8",
    "awq": "W4A16_AWQ",
    "awq_marlin": "W4A16_AWQ",
    "gptq": "W4A16_GPTQ",
    "gptq_marlin": "W4A16_GPTQ",
    "modelopt_fp4": "NVFP4",
    "mxfp4": "MXFP4",
}
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
# _auto_choose_speculative_params: (steps, topk, draft tokens)
EAGLE_AUTO_WIDE = ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")
HOOKS = "python/sglang/srt/arg_groups"
NGRAM_BREADTH = 10  # speculative_ngram_max_bfs_breadth default
# SGLang's defaults (ServerArgs 0.5.23) of the fields it does not derive: pinned when unset
PINNED = {
    "tp_size": ("parallel_config.tensor_parallel_size", 1),
    "pp_size": ("parallel_config.pipeline_parallel_size", 1),
    "dp_size": (S + "dp_size", 1),
    "attn_dp_size": (S + "attn_dp_size", 1),
    "attn_cp_size": (S + "attn_cp_size", 1),
    "page_size": (S + "page_size", 1),
    "attention_backend": (S + "attention_backend", None),
    "speculative_algorithm": (S + "speculative_algorithm", None),
    "disable_radix_cache": (S + "disable_radix_cache", False),
    "disable_overlap_schedule": (S + "disable_overlap_schedule", False),
    "enable_hierarchical_cache": (S + "enable_hierarchical_cache", False),
    "disaggregation_mode": (S + "disaggregation_mode", "null"),
    "disaggregation_decode_enable_radix_cache": (
        S + "disaggregation_decode_enable_radix_cache",
        False,
    ),
    "disaggregation_transfer_backend": (S + "disaggregation_transfer_backend", "mooncake"),
    "enable_multi_layer_eagle": (S + "enable_multi_layer_eagle", False),
    "enable_mixed_chunk": (S + "enable_mixed_chunk", False),
    "enable_lora": ("runtime_config.enable_lora", False),
    "kv_cache_dtype": ("quant_config.kv_cache_quant_algo", None),
}


# ---------------------------------------------------------------------------- reading
def read(
    config: str | Path | Mapping[str, Any] | None = None,
    serve_args: str | None = None,
    profile: str | Profile = PROFILE,
) -> DialectInput:
    """Claims for an SGLang `--config` YAML (a path or a mapping) and/or a launch command
    line. `DialectInput.extra`: `arguments` (the parsed `Arguments`), `input` (the merged
    arguments in the user's spelling), `carried` (fields not arbitrated, with the reason)."""
    prof = _profile(profile)
    args = read_arguments(config, serve_args)
    where = args.file
    claims: list[AnyClaim] = []
    carried: dict[str, str] = {}
    problems: list[Problem] = []
    for name, value in args.values.items():
        key = args.spelled.get(name, name)
        try:
            requirement = requirement_for(name, value, args.values)
        except (SchemaError, ValueError) as exc:
            problems.append(Problem(key, str(exc), value))
            continue
        if requirement is None:
            carried[key] = "no option of arbiter: carried through unchanged"
            continue
        source = f"{where}: {key}"
        if name in ADJUSTABLE or (name == "speculative_eagle_topk" and _algo(args) == "NGRAM"):
            claims.append(perf(f"sglang.{name}", requirement, weight=8, priority=1, source=source))
        else:
            claims.append(func(f"sglang.{name}", requirement, source=source))
    if problems:
        raise SglangArgsError(problems, file=where)
    extra = {"arguments": args, "input": dict(args.given), "carried": carried}
    profile_ref: Any = prof.name if PROFILES.get(prof.name) is prof else prof
    return DialectInput(claims, profile=profile_ref, source=where, extra=extra)


def requirement_for(name: str, value: Any, values: Mapping[str, Any]) -> dict[str, Any] | None:
    """{option path: value} for one SGLang field, or None when arbiter has no option for
    it (the field is carried through)."""
    if value is None:
        return None
    if name == "kv_cache_dtype":
        if value not in KV_DTYPES:
            return None
        return {SHARED[name]: KV_DTYPES[value]}
    if name == "quantization":
        return {SHARED[name]: QUANTIZATION[value]} if value in QUANTIZATION else None
    if name == "speculative_algorithm":
        value = str(value).upper()
        if value == "NEXTN":
            value = "EAGLE"  # _resolve_speculative_algorithm_alias
    if name == "mem_fraction_static" and isinstance(value, float):
        value = round(value, 3)
    if name in SHARED:
        path = SHARED[name]
    elif name in OWN:
        path = S + name
    else:
        return None
    return {path: lookup(path).check(value)}


def _algo(args: Arguments) -> str | None:
    algo = args.values.get("speculative_algorithm")
    if algo is None:
        return None
    algo = str(algo).upper()
    return "EAGLE" if algo == "NEXTN" else algo


def _profile(profile: str | Profile | None) -> Profile:
    if isinstance(profile, Profile):
        prof = profile
    else:
        prof = PROFILES.get(profile or PROFILE)  # type: ignore[assignment]
        if prof is None:
            raise DialectError(
                "unknown profile", key="profile", value=profile, suggestions=(PROFILE,)
            )
    if prof.engine != "sglang":
        raise DialectError(
            f"profile {prof.name!r} is for {prof.engine_name}, not SGLang",
            key="profile",
            value=prof.name,
            suggestions=(PROFILE,),
        )
    return prof


# ---------------------------------------------------------------------------- derived
def derived_claims(
    parsed: DialectInput, model: ModelSpec | None, device: DeviceSpec | None
) -> list[AnyClaim]:
    """What SGLang derives for the fields left unset, as func claims named
    `sglang.derived.<field>` (the defaults that need no facts are default rules)."""
    args: Arguments = parsed.extra["arguments"]
    v = args.values
    claims: list[AnyClaim] = []
    algo = _algo(args)
    arch = model.architecture if model is not None else "LlamaForCausalLM"
    if algo in EAGLE_FAMILY and v.get("speculative_num_steps") is None:
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
        wide = algo != "STANDALONE" and arch in EAGLE_AUTO_WIDE
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
    if algo == "NGRAM":
        breadth = v.get("speculative_ngram_max_bfs_breadth") or NGRAM_BREADTH
        fixes: dict[str, Any] = {S + "speculative_eagle_topk": breadth}
        draft = v.get("speculative_num_draft_tokens")
        if draft is None:
            draft = 12
            fixes[S + "speculative_num_draft_tokens"] = draft
        if v.get("speculative_num_steps") is None:
            fixes[S + "speculative_num_steps"] = max(1, draft // breadth)
        claims.append(
            func("sglang.derived.ngram", fixes, source=f"{HOOKS}/speculative_hook.py _handle_ngram")
        )
    if v.get("mem_fraction_static") is None:
        memory = device.memory_mib if device is not None else lookup("device.memory_mib").default
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
        )
        claims.append(
            func(
                "sglang.derived.mem_fraction_static",
                {SHARED["mem_fraction_static"]: defaults.mem_fraction_static},
                source=(
                    f"{HOOKS}/memory_hook.py handle_gpu_memory_settings: "
                    f"({memory:g} - {defaults.reserved_mib:g}) / {memory:g} MiB"
                ),
            )
        )
    return claims


def unset_claims(parsed: DialectInput) -> list[AnyClaim]:
    """SGLang's own defaults for the fields the user left unset and SGLang does not derive:
    checking a configuration is checking what SGLang runs, so they are no choice for the
    solver (`tp_size` 1, no attention DP, `attention_backend` auto, ...). One func claim,
    `sglang.unset`: a conflict through it says which field to set."""
    args: Arguments = parsed.extra["arguments"]
    fixes = {
        path: value
        for name, (path, value) in PINNED.items()
        if name not in args.values and not (name == "dp_size" and "attn_dp_size" in args.values)
    }
    if not fixes:
        return []
    return [func("sglang.unset", fixes, source="SGLang's defaults of the fields left unset")]


# ---------------------------------------------------------------------------- writing
def write(resolution: Resolution, parsed: DialectInput | None = None) -> dict[str, Any]:
    """The solved configuration as SGLang `--config` YAML (a dict): the user's fields in
    their own spelling (as written: SGLang resolves them again), a rewritten explicit value
    where a rule overrode it, and any SGLang field the solve set away from SGLang's own
    defaults that the user left unset; carried fields unchanged."""
    args: Arguments = parsed.extra["arguments"] if parsed is not None else Arguments()
    out: dict[str, Any] = dict(parsed.extra["input"]) if parsed is not None else {}
    values = resolution.values
    changed = {c.path for c in resolution.changes}
    dashes = not out or any("-" in k for k in out)
    for name in (*SHARED, *OWN):
        path = SHARED.get(name, S + name)
        value = _field_value(name, values)
        if name in args.values:
            if name in ADJUSTABLE and value != args.values[name]:
                out[args.spelled[name]] = value
            continue
        if path in changed and _asked_for(resolution, path):
            out[name.replace("_", "-") if dashes else name] = value
    return out


def _asked_for(resolution: Resolution, path: str) -> bool:
    """Whether a claim other than SGLang's own derivations set this option (a value SGLang
    derives itself, or a default rule's, is left for SGLang to derive again)."""
    prov = resolution.provenance(path)
    return prov.kind == "claim" and any(not c.startswith("sglang.derived.") for c in prov.claims)


def _field_value(name: str, values: Mapping[str, Any]) -> Any:
    if name in SHARED:
        value = values[SHARED[name]]
        if name == "kv_cache_dtype":
            return {None: "auto", "FP8": "fp8_e4m3", "NVFP4": "nvfp4"}.get(value, value)
        if name == "quantization":
            back = {
                "FP8": "fp8",
                "W4A16_AWQ": "awq",
                "W4A16_GPTQ": "gptq",
                "NVFP4": "modelopt_fp4",
                "MXFP4": "mxfp4",
            }
            return back.get(value, value)
        return value
    return values[S + name]


def not_arbitrated(parsed: DialectInput) -> dict[str, str]:
    return dict(parsed.extra.get("carried", {}))


# ---------------------------------------------------------------------------- checking
def check_sglang(
    config: Mapping[str, Any] | str | Path | None,
    *,
    serve_args: str | None = None,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile = PROFILE,
) -> Verdict:
    """Check an SGLang configuration (a `--config` YAML path or mapping, and/or a launch
    command line in `serve_args`) the way SGLang 0.5 resolves it.

    `model` is a Hugging Face config.json (path or dict) or a ModelSpec, `device` a catalog
    device name, `gpus` the GPUs available (tp x pp x dp replicas must fit). Returns a
    Verdict: "accept", "adjust" (explicit values SGLang rewrites, each with the rule behind
    it) or "reject" (every bad key and value, or the conflicting claims and their rules);
    `warnings` lists what SGLang derives for the fields left unset. Never raises for bad
    input."""
    try:
        resolution, parsed = solve(
            config, serve_args=serve_args, model=model, device=device, gpus=gpus, profile=profile
        )
    except SglangArgsError as exc:
        return Verdict("reject", tuple(str(p) for p in exc.problems), unknown_keys=exc.unknown_keys)
    except ConflictError as exc:
        rules = tuple(dict.fromkeys(r for c in exc.conflicts for r in c.rules))
        carried = getattr(exc, "not_arbitrated", {})
        return Verdict(
            "reject", tuple(str(c) for c in exc.conflicts), rules=rules, not_arbitrated=carried
        )
    except ArbiterError as exc:
        return Verdict("reject", (str(exc),))
    args: Arguments = parsed.extra["arguments"]
    adjusted = parsed.extra["adjustments"]
    return Verdict(
        "adjust" if adjusted else "accept",
        changes=(*args.notes, *adjusted),
        warnings=(*args.warnings, *parsed.extra["derivations"]),
        not_arbitrated=not_arbitrated(parsed),
        config=write(resolution, parsed),
        resolution=resolution,
    )


def solve(
    config: Mapping[str, Any] | str | Path | None,
    *,
    serve_args: str | None = None,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile = PROFILE,
    time_limit_s: float | None = None,
) -> tuple[Resolution, DialectInput]:
    """Read, add what SGLang derives and the machine facts, arbitrate: (resolution, parsed).
    `parsed.extra` gains `adjustments` (explicit values SGLang rewrites, with the rule),
    `derivations` (what it derives for unset fields) and `notes` (both, for reports).
    Raises SglangArgsError / DialectError for bad input and ConflictError when the
    configuration cannot hold (its `not_arbitrated` lists the carried fields)."""
    from ..solve import arbitrate

    parsed = read(config, serve_args=serve_args, profile=profile)
    spec = _model_spec(model)
    dev = _device_spec(device, gpus)
    derived = derived_claims(parsed, spec, dev)
    parsed.extra["derived"] = derived
    claims = [
        *parsed.claims,
        *derived,
        *unset_claims(parsed),
        *machine_claims(spec, dev, requested=parsed.claims),
    ]
    if dev is None and gpus > 1:
        claims.append(setup("gpus", {"device.count": gpus}))
    args: Arguments = parsed.extra["arguments"]
    ranks = 1
    for key in ("tp_size", "pp_size", "dp_size"):
        ranks *= args.values.get(key, 1) or 1
    if ranks > gpus:
        raise DialectError(
            f"tp_size x pp_size x dp_size = {ranks} GPUs needed; {gpus} given",
            key="tp_size",
            file=args.file,
            value=ranks,
        )
    try:
        resolution = arbitrate(claims, profile=parsed.profile, time_limit_s=time_limit_s)
    except ConflictError as exc:
        exc.not_arbitrated = not_arbitrated(parsed)  # type: ignore[attr-defined]
        raise
    parsed.extra["adjustments"] = _adjustments(resolution, args)
    parsed.extra["derivations"] = derivations(resolution, args)
    parsed.extra["notes"] = [*args.notes, *parsed.extra["adjustments"]]
    return resolution, parsed


def _model_spec(model: Any) -> ModelSpec | None:
    if model is None or isinstance(model, ModelSpec):
        return model
    try:
        return ModelSpec.from_hf_config(model)
    except Exception as exc:  # a typed error for every unreadable model config
        raise DialectError(f"the model config cannot be read: {exc}", file="config.json") from None


def _device_spec(device: Any, gpus: int) -> DeviceSpec | None:
    if device is None or isinstance(device, DeviceSpec):
        return device
    name = str(device)
    if gpus > 1 and not re.match(r"\d+x", name, re.I):
        name = f"{gpus}x{name}"
    try:
        return DeviceSpec.named(name)
    except Exception as exc:
        raise DialectError(str(exc), key="device", value=device) from None


def _adjustments(resolution: Resolution, args: Arguments) -> list[str]:
    """Explicit values SGLang rewrites: "SGLang would change X from A to B because ..."."""
    out: list[str] = []
    values = resolution.values
    for dropped in resolution.dropped:
        name = dropped.name.removeprefix("sglang.")
        if name not in args.values:
            continue
        new = values[S + name]
        reason = dropped.reason
        rules = ", ".join(reason.rules) or ", ".join(c for c in reason.claims if c != dropped.name)
        out.append(
            f"{args.spelled[name]}: {args.values[name]!r} -> {new!r} "
            f"(SGLang would change it because {_why(rules)})"
        )
    for name, (path, rule_ids) in RESOLVED.items():
        if name not in args.values:
            continue
        written = args.values[name]
        effective = _effective(name, values[path], written)
        if effective != written:
            out.append(
                f"{args.spelled[name]}: {written!r} -> {effective!r} "
                f"(SGLang would change it because {_why(', '.join(rule_ids))})"
            )
    return out


def _why(ids: str) -> str:
    texts = []
    for rule_id in (i.strip() for i in ids.split(",") if i.strip()):
        try:
            texts.append(f"{rule_id}: {get_rule(rule_id).text}")
        except Exception:
            texts.append(rule_id)
    return "; ".join(texts) or "a rule of SGLang"


def _effective(name: str, value: Any, written: Any) -> Any:
    if name == "chunked_prefill_size":
        return value if written > 0 else written
    if name == "disable_radix_cache":
        return not value
    return value


def derivations(resolution: Resolution, args: Arguments) -> list[str]:
    """What SGLang derives for the fields left unset, as SGLang would log it."""
    v = resolution.values
    out = []
    unset = [
        n
        for n in (
            "chunked_prefill_size",
            "mem_fraction_static",
            "max_running_requests",
            "page_size",
            "disable_radix_cache",
            "disable_overlap_schedule",
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
        )
        if n not in args.values
    ]
    algo = v[S + "speculative_algorithm"]
    for name in unset:
        if name in RESOLVED:
            path = RESOLVED[name][0]
            value = _effective(name, v[path], v[S + name])
            plain = {
                "page_size": 1,
                "disable_radix_cache": False,
                "disable_overlap_schedule": False,
            }
            if name in plain and value == plain[name]:
                continue
        elif name in SHARED:
            value = v[SHARED[name]]
            if name == "max_running_requests" and algo is None:
                continue
        else:
            if algo is None:
                continue
            value = v[S + name]
        out.append(f"SGLang derives {name} = {value!r} (unset)")
    if not v["cuda_graph_config.enabled"]:
        out.append(
            f"SGLang runs without CUDA graphs (attention backend {v[S + 'attention_backend']})"
        )
    return out


__all__ = [
    "PROFILE",
    "check_sglang",
    "derived_claims",
    "not_arbitrated",
    "read",
    "solve",
    "unset_claims",
    "write",
]
