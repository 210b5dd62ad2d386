"""SGLang dialect: `ServerArgs` fields (SGLang's `--config` YAML and launch command line)
-> claims; a resolution -> the same YAML shape.

Release lines 0.5.23 (profile `sglang-0.5.23`, alias `sglang-0.5`) and 0.5.16
(`sglang-0.5.16`), each read against its own field list. Reading (`serve.read_arguments`) names every unknown key and bad value at once. Then:

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

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.errors import SchemaError
from constraints.profiles import ALIASES, PROFILES, Profile, surface_line
from constraints.specs import DeviceSpec, ModelSpec, read_model

from ...check import verdict_of
from ...claims import AnyClaim, func, perf
from ...dialects._base import DialectError, DialectInput, KeyProblem, Verdict
from ...resolution import Resolution
from .defaults import algo, derived_claims, unset_claims
from .map import ADJUSTABLE, OWN, SHARED, S, field_value, requirement_for
from .record import NativeSglang
from .serve import Arguments, SglangArgsError, read_arguments

PROFILE = "sglang-0.5.23"


# ---------------------------------------------------------------------------- reading
def read(
    config: str | Path | Mapping[str, Any] | None = None,
    serve_args: str | None = None,
    profile: str | Profile = PROFILE,
) -> DialectInput[NativeSglang]:
    """Claims for an SGLang `--config` YAML (a path or a mapping) and/or a launch command
    line. `DialectInput.native` (a `NativeSglang`): the parsed `Arguments`, the merged
    arguments in the user's spelling, the fields not arbitrated (with the reason)."""
    prof = _profile(profile)
    args = read_arguments(config, serve_args, line=field_line(prof))
    where = args.file
    claims: list[AnyClaim] = []
    carried: dict[str, str] = {}
    problems: list[KeyProblem] = []
    for name, value in args.values.items():
        key = args.spelled.get(name, name)
        try:
            requirement = requirement_for(name, value, args.values, prof.release or prof.version)
        except (SchemaError, ValueError) as exc:
            problems.append(KeyProblem(key, str(exc), value))
            continue
        if requirement is None:
            carried[key] = "no option of arbiter: carried through unchanged"
            continue
        source = f"{where}: {key}"
        if name in ADJUSTABLE or (name == "speculative_eagle_topk" and algo(args) == "NGRAM"):
            claims.append(perf(f"sglang.{name}", requirement, weight=8, priority=1, source=source))
        else:
            claims.append(func(f"sglang.{name}", requirement, source=source))
    if problems:
        raise SglangArgsError(problems, file=where)
    lora = _lora_claim(args)
    if lora is not None:
        claims.append(lora)
    topk = args.values.get("speculative_eagle_topk")
    claims.append(
        func(
            "sglang.speculative_eagle_topk_given",
            {S + "speculative_eagle_topk_given": topk is not None},
            source=f"{where}: "
            + (args.spelled["speculative_eagle_topk"] if topk is not None else "no ")
            + ("" if topk is not None else "speculative-eagle-topk"),
        )
    )
    backend_given = args.values.get("attention_backend") is not None
    claims.append(
        func(
            "sglang.attention_backend_given",
            {S + "attention_backend_given": backend_given},
            source=f"{where}: "
            + (args.spelled["attention_backend"] if backend_given else "no attention-backend"),
        )
    )
    record = NativeSglang(args, dict(args.given), carried)
    profile_ref: Any = prof.name if PROFILES.get(prof.name) is prof else prof
    return DialectInput(claims, profile=profile_ref, source=where, native=record)


LORA_FIELDS = ("enable_lora", "lora_paths", "max_lora_rank", "lora_target_modules")


def _lora_claim(args: Arguments) -> AnyClaim | None:
    """What LoRA starts from, as the rule `sglang.lora-needs-adapters-or-shape` reads it:
    adapters named in `lora_paths`, or both `max_lora_rank` and `lora_target_modules`."""
    v = args.values
    if not any(v.get(name) is not None for name in LORA_FIELDS):
        return None
    given = [args.spelled[n] for n in LORA_FIELDS[1:] if v.get(n)]
    return func(
        "sglang.lora_adapters",
        {
            S + "lora_paths_given": bool(v.get("lora_paths")),
            S + "lora_shape_given": bool(v.get("max_lora_rank") and v.get("lora_target_modules")),
        },
        source=f"{args.file}: "
        + (", ".join(given) if given else "no lora-paths, max-lora-rank or lora-target-modules"),
    )


def field_line(prof: Profile) -> str:
    """The field list a profile reads against: its own where its release has one (a
    registered line), else the registered SGLang line nearest its release."""
    return surface_line(prof).name if prof.engine == "sglang" else PROFILE


def _profile(profile: str | Profile | None) -> Profile:
    if isinstance(profile, Profile):
        prof = profile
    else:
        name = profile or PROFILE
        prof = PROFILES.get(ALIASES.get(name, name))  # type: ignore[assignment]
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


# ---------------------------------------------------------------------------- writing
def write(
    resolution: Resolution, parsed: DialectInput[NativeSglang] | None = None
) -> dict[str, Any]:
    """The solved configuration as SGLang `--config` YAML (a dict): the user's fields in
    their own spelling (as written: SGLang resolves them again), a rewritten explicit value
    where a rule overrode it, and any SGLang field the solve set away from SGLang's own
    defaults that the user left unset; carried fields unchanged."""
    record = parsed.native if parsed is not None else NativeSglang()
    args: Arguments = record.arguments
    out: dict[str, Any] = dict(record.input)
    values = resolution.values
    changed = {c.path for c in resolution.changes}
    dashes = not out or any("-" in k for k in out)
    rewritten = record.rewritten
    for name in (*SHARED, *OWN):
        path = SHARED.get(name, S + name)
        value = field_value(name, values)
        if name in args.values:
            if name in ADJUSTABLE and value != args.values[name]:
                out[args.spelled[name]] = value
            elif name in rewritten:
                out[args.spelled[name]] = rewritten[name]
            continue
        if path in changed and _asked_for(resolution, path):
            out[name.replace("_", "-") if dashes else name] = value
    return out


def _asked_for(resolution: Resolution, path: str) -> bool:
    """Whether a claim other than SGLang's own derivations set this option (a value SGLang
    derives itself, or a default rule's, is left for SGLang to derive again)."""
    prov = resolution.provenance(path)
    return prov.kind == "claim" and any(not c.startswith("sglang.derived.") for c in prov.claims)


def not_arbitrated(parsed: DialectInput[NativeSglang]) -> dict[str, str]:
    return dict(parsed.native.carried)


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
    command line in `serve_args`) the way SGLang 0.5 resolves it: `arbiter.check` with
    the SGLang dialect.

    `model` is a Hugging Face config.json (path or dict) or a ModelSpec, `device` a catalog
    device name, `gpus` the GPUs available (tp x pp x dp replicas must fit). Returns a
    Verdict: "accept", "adjust" (explicit values SGLang rewrites, each with the rule behind
    it) or "reject" (every bad key and value, or the conflicting claims and their rules);
    `warnings` lists what SGLang derives for the fields left unset. Never raises for bad
    input."""
    return verdict_of(
        "sglang",
        config,
        serve_args=serve_args,
        model=model,
        device=device,
        gpus=gpus,
        profile=profile,
    )


def _model_spec(model: Any) -> ModelSpec | None:
    if model is None or isinstance(model, ModelSpec):
        return model
    try:
        return read_model(model)
    except Exception as exc:  # a typed error for every unreadable model config
        raise DialectError(f"the model config cannot be read: {exc}", file="config.json") from None


def _nodes(args: Arguments) -> int:
    """The nodes the launch spans: SGLang's `nnodes` (default 1)."""
    return int(args.values.get("nnodes") or 1)


def _gpus_source(nodes: int) -> str:
    per_node = "GPUs per node (--gpus)"
    return per_node if nodes == 1 else f"{per_node} on nnodes = {nodes} nodes"


def _device_spec(device: Any, gpus: int, nodes: int = 1) -> DeviceSpec | None:
    """The machine the launch runs on: `gpus` GPUs of `device` on each of `nodes` nodes
    (SGLang's `nnodes`: the launch spans that many nodes, so the machine has them)."""
    if device is None:
        return None
    if isinstance(device, DeviceSpec):
        return device if nodes == 1 else dataclasses.replace(device, nodes=nodes)
    name = str(device)
    if gpus > 1 and not re.match(r"\d+x", name, re.I):
        name = f"{gpus}x{name}"
    try:
        return DeviceSpec.named(name, nodes=nodes)
    except Exception as exc:
        raise DialectError(str(exc), key="device", value=device) from None


__all__ = [
    "PROFILE",
    "check_sglang",
    "derived_claims",
    "not_arbitrated",
    "read",
    "unset_claims",
    "write",
]
