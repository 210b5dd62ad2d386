"""vLLM dialect: `vllm serve` arguments (the `--config` YAML form and/or the command line)
-> claims on the `vllm-0.33` profile; a resolution -> the same YAML shape.

- every key is checked against the release's field list (`fields/vllm-0.33.yaml`) in any
  spelling vLLM accepts; all unknown keys and bad values are named at once
  (`VllmArgErrors`, exit 2 in the CLI);
- a field that shapes arbitration and that the user set becomes a **func** claim
  (`vllm.<field>`); every other field is carried through untouched and listed;
- what vLLM derives for a field the user left open becomes a **perf** claim
  `vllm.default.<field>` with vLLM's own value: the token budget and sequence limit of
  the device tier and the other fields (`vllm_defaults`), chunked prefill and prefix
  caching (off for an encoder-decoder model), the CUDA-graph ceiling. The verdict lists
  them ("vLLM would set ..."); when a rule makes one give way it says "vLLM would change
  ... because ...", except the budget and the sequence limit, which vLLM derives once
  and then checks against: a rule that would move them is vLLM's refusal;
- a field left open whose vLLM default is a fixed value, and every option vLLM has no
  field for, is pinned by a **setup** claim: no solve may move what vLLM would not;
- a value the user wrote that vLLM overwrites whatever else holds (chunked prefill and
  the long-prefill threshold on an encoder-decoder model) is pinned to vLLM's value and
  reported as an adjustment;
- what vLLM reads off the target for speculation (`vllm_target`) and the CUDA-graph
  memory it takes from the KV budget (`vllm_defaults.cudagraph_memory`) are setup facts.

`check_vllm()` runs all of it and answers the engine's way: accept, adjust or reject.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.engines.vllm.rules import V1_ASYNC_METHODS
from constraints.engines.vllm.schema import VLLM_CHECKPOINT_QUANT, VLLM_CONFIG
from constraints.errors import SchemaError
from constraints.facts.memory import estimate_coefficients
from constraints.paths import BUILD_CONFIG, KV_CACHE_CONFIG, MODEL, SCHEDULER_CONFIG
from constraints.profiles import PROFILES, Profile, UnknownProfile, get_profile
from constraints.schema import fact_defaults, lookup, options
from constraints.specs import DeviceSpec, ModelSpec, SpecError, read_model

from ...check import verdict_of
from ...claims import AnyClaim, func, perf, setup
from ...dialects._base import (
    DialectError,
    DialectInput,
    KeyProblem,
    Verdict,
    load_mapping,
    logging_fallback,
)
from ...dialects.open_defaults import EngineDefault, open_default_claims
from ...resolution import Resolution
from . import defaults as vllm_defaults
from . import serve as vllm_serve
from . import target as vllm_target
from .fields import SURFACE, Given, VllmArgErrors, ignored_false, read_args, surface
from .map import (
    EAGLE3,
    QUANT,
    SPEC,
    SPEC_AS_GIVEN,
    TOP,
    Reading,
    back,
    option_fields,
    reading,
)
from .record import Forced, NativeVllm

# fields whose None vLLM reads as a fixed value: block size 16 on CUDA (the platform's),
# max_cpu_loras = max_loras and max_num_active_seqs = max_num_seqs, mamba_block_size unset
# (0 here: "not given")
UNSET_AS = {
    "block_size": 16,
    "max_cpu_loras": 0,
    "max_num_active_seqs": 0,
    "mamba_block_size": 0,
    # unset, vLLM decides for itself and never refuses: not "set true"
    "async_scheduling": False,
    "enable_batch_sharded_sampling": False,
}

DEFAULT_PROFILE = "vllm-0.33"
BUDGET = BUILD_CONFIG.max_num_tokens
SEQS = BUILD_CONFIG.max_batch_size
CHUNKED = SCHEDULER_CONFIG.enable_chunked_context
REUSE = KV_CACHE_CONFIG.enable_block_reuse
GRAPH_MAX = VLLM_CONFIG.max_cudagraph_capture_size
DRAFT = BUILD_CONFIG.max_draft_len
GRAPH_BYTES = MODEL.vllm_cudagraph_bytes


def _profile(profile: str | Profile | None) -> Profile:
    try:
        prof = get_profile(profile or DEFAULT_PROFILE)
    except UnknownProfile as exc:
        raise DialectError(
            "unknown profile", key="profile", value=str(profile), suggestions=exc.known
        ) from None
    if prof.engine != "vllm":
        raise DialectError(
            f"profile {prof.name!r} is for {prof.engine_name}, not vLLM",
            key="profile",
            value=prof.name,
            suggestions=tuple(n for n, p in PROFILES.items() if p.engine == "vllm"),
        )
    return prof


def merged_input(
    config: str | Path | Mapping[str, Any] | None, serve_args: str | None
) -> tuple[dict[str, Any], str]:
    """The arguments as written: the `--config` mapping with the command line over it."""
    serve = vllm_serve.parse(serve_args) if serve_args else vllm_serve.ServeArgs()
    if config is None and serve.config:
        config = serve.config
    data: dict[str, Any] = {}
    where = "--serve-args" if serve_args else "<vllm>"
    if config is not None and not isinstance(config, (str, Path, Mapping)):
        raise DialectError(
            f"expected a mapping or a YAML path, got {type(config).__name__}", file=where
        )
    if config is not None:
        data, where = load_mapping(dict(config) if isinstance(config, Mapping) else config, "vllm")
    merged = dict(data)
    surf_keys = {_field_of(k): k for k in data}
    for key, value in serve.args.items():
        old = surf_keys.get(_field_of(key))
        if old is not None and old != key:
            merged.pop(old, None)  # the command line wins over the file
        merged[key] = value
    return merged, where


def _field_of(key: Any) -> str:
    if not isinstance(key, str):
        return str(key)
    head, dot, sub = key.partition(".")
    found = surface().resolve(head)
    name = found.field.name if found else head
    return name + (dot + sub if dot else "")


def read(
    config: str | Path | Mapping[str, Any] | None = None,
    serve_args: str | None = None,
    profile: str | Profile | None = DEFAULT_PROFILE,
    *,
    device: str | DeviceSpec | None = None,
    model: Any = None,
) -> DialectInput[NativeVllm]:
    """Claims for vLLM serve arguments (a mapping or YAML file, and/or a command line).

    `device` and `model` (optional) decide the defaults vLLM derives from them; without
    them the profile's (an H100-class device, the model's length unknown).
    `DialectInput.native` (a `NativeVllm`): the merged arguments as written, each field
    as given, the reading, and what vLLM derives (with the reason)."""
    prof = _profile(profile)
    model = _model_spec(model)  # the model's config.json is parsed once, here or before
    merged, where = merged_input(config, serve_args)
    given = read_args(merged, file=where)
    read_ = reading(given)
    _checkpoint_scheme(read_, model)
    _check_domains(given, read_, where)
    derived, notes, graph_bytes = _default_claims(given, read_, prof, device, model)
    forced = _forced(read_, model)
    claims: list[AnyClaim] = [
        func(f"vllm.{key}", {path: value}, source=f"{where}: {key}")
        for key, (path, value) in sorted(read_.values.items())
        if key not in forced
    ]
    for key, change in sorted(forced.items()):
        claims.append(setup(f"vLLM sets {key}", {change.path: change.after}, source=change.why))
    impl = given.get("model_impl")
    target = vllm_target.read_target(model, impl.value if impl is not None else None)
    derived += _speculative_defaults(given, read_)
    derived += _open_defaults(given, read_, model, target)
    derived.append(
        setup(
            "vLLM's CUDA-graph memory",
            {GRAPH_BYTES: graph_bytes},
            source="GPUModelRunner.profile_cudagraph_memory (estimated)",
        )
    )
    record = NativeVllm(
        input=merged,
        given=given,
        reading=read_,
        defaults=notes,
        notes=[
            *ignored_false(merged),
            *read_.notes,
            *_runner_notes(given, read_),
            *_draft_notes(given, read_, model),
            *_mtp_notes(read_, target),
        ],
        profile=prof.name,
        forced=forced,
    )
    return DialectInput([*claims, *derived], profile=prof.name, source=where, native=record)


# SchedulerConfig.__post_init__ (vllm/config/scheduler.py, v0.33.0): "Encoder-decoder models
# do not support chunked prefill nor prefix caching; disabling both." It sets
# enable_chunked_prefill False and long_prefill_token_threshold 0; prefix caching, off by
# default for such a model (ModelConfig.is_prefix_caching_supported), is left as given
ENCODER_DECODER_OFF = {"enable_chunked_prefill": False, "long_prefill_token_threshold": 0}


def _forced(read_: Reading, model: Any) -> dict[str, Forced]:
    """The user's values vLLM overwrites for this model (an encoder-decoder one)."""
    spec = _model_spec(model)
    if spec is None or not spec.is_encoder_decoder:
        return {}
    out = {}
    for key, after in ENCODER_DECODER_OFF.items():
        found = read_.values.get(key)
        if found is not None and found[1] != after:
            out[key] = Forced(
                found[0],
                found[1],
                after,
                "vLLM turns it off for an encoder-decoder model (SchedulerConfig.__post_init__)",
            )
    return out


def _check_domains(given: Mapping[str, Given], read_: Reading, where: str) -> None:
    """Every mapped value inside its option's domain, all problems at once."""
    problems = []
    for key, (path, value) in read_.values.items():
        try:
            lookup(path).check(value)
        except SchemaError as exc:
            head = key.partition(".")[0]
            written = given[head].key if head in given else key
            name = written + key[len(head) :] if "." in key else written
            problems.append(KeyProblem(name, f"out of range: {exc}", value=value))
    if problems:
        raise VllmArgErrors(problems, file=where)


def _checkpoint_quant(model: Any) -> str:
    """The checkpoint's quant_method as rule vllm.quant.matches-checkpoint reads it: none
    (unquantized), a method the rule models, or unknown (no model, or another method)."""
    spec = _model_spec(model)
    if spec is None:
        return "unknown"
    if spec.quant is None:
        return "none"
    method = spec.quant.method
    return method if method in VLLM_CHECKPOINT_QUANT else "unknown"


def _checkpoint_kv(pins: dict[str, Any], given: Mapping[str, Given], model: Any) -> None:
    """`kv-cache-dtype` left at `auto` on a checkpoint that declares its KV quantization
    (ModelOpt's `kv_cache_quant_algo: FP8`, as NVIDIA's FP8 and NVFP4 checkpoints do) is
    that quantization: vLLM resolves `auto` from the checkpoint
    (`resolve_kv_cache_dtype_string`, vllm/utils/torch_utils.py, called by
    EngineArgs.create_engine_config; read in the 0.24.0 wheel). So the KV cache is FP8 and
    the checkpoint's own fact decides `kv_cache_quant_algo`: no default pins them (nor
    `kv_cache_quant_algo` when `kv-cache-dtype` is written: the checkpoint declares it)."""
    spec = _model_spec(model)
    written = given.get("kv_cache_dtype")
    if spec is None or spec.quant is None or spec.quant.kv_cache_quant_algo is None:
        return
    # the checkpoint's declaration is a fact of the model whatever kv-cache-dtype says: a
    # default pinning it to None would contradict the checkpoint's setup, naming no rule
    pins.pop("quant_config.kv_cache_quant_algo", None)
    if written is not None and written.value not in (None, "auto"):
        return
    if str(spec.quant.kv_cache_quant_algo).upper().startswith("FP8"):
        pins["kv_cache_config.dtype"] = "fp8"
    else:  # a KV quantization arbiter's memory model has no width for: the engine decides
        pins.pop("kv_cache_config.dtype", None)


def _checkpoint_scheme(read_: Reading, model: Any) -> None:
    """`quantization` naming the checkpoint's own method loads the checkpoint's scheme:
    vLLM checks only that the two names agree (ModelConfig._verify_quantization,
    vllm/config/model.py, v0.33.0) and then reads the scales the checkpoint declares
    (Fp8Config.from_config takes `weight_block_size`, so `--quantization fp8` on a
    block-scaled FP8 checkpoint serves it block-scaled). The weights' precision is then
    the checkpoint's fact, not the method's online meaning: only the method is claimed."""
    written = read_.values.get("quantization")
    spec = _model_spec(model)
    if written is None or spec is None or spec.quant is None:
        return
    method = read_.values.get("quantization_method")
    if method is not None and method[1] == spec.quant.method:
        del read_.values["quantization"]


def _model_spec(model: Any) -> ModelSpec | None:
    if model is None:
        return None
    if isinstance(model, ModelSpec):
        return model
    try:
        return read_model(model)
    except (SpecError, OSError, ValueError, TypeError, KeyError, ArithmeticError):
        return None  # machine_claims names the problem


def _device_spec(device: Any) -> DeviceSpec | None:
    if device is None or isinstance(device, DeviceSpec):
        return device
    try:
        return DeviceSpec.named(str(device))
    except SpecError:
        return None  # machine_claims names the problem


def _default_claims(
    given: Mapping[str, Given],
    read_: Reading,
    prof: Profile,
    device: Any,
    model: Any,
) -> tuple[list[AnyClaim], list[str], int]:
    """Perf claims for what vLLM derives, the derivations in words, and the CUDA-graph
    memory vLLM would take for its capture sizes (bytes per GPU)."""
    claims: list[AnyClaim] = []
    notes: list[str] = []
    dev = _device_spec(device)
    spec = _model_spec(model)
    if dev is not None:
        tier = vllm_defaults.batch_tier(dev.memory_mib, dev.name, dev.sm, prof.release)
    else:
        tier = vllm_defaults.Tier(
            prof.defaults[BUDGET],
            prof.defaults[SEQS],
            "no device given: the profile's H100-class tier",
        )
    length = _value(read_, "max_model_len")
    if length is None:
        length = spec.max_position_embeddings if spec is not None else None
    chunked = _value(read_, "enable_chunked_prefill")
    # ModelConfig.is_chunked_prefill_supported / is_prefix_caching_supported: off for an
    # encoder-decoder model
    supported = not (spec is not None and spec.is_encoder_decoder)
    budget, seqs = _value(read_, "max_num_batched_tokens"), _value(read_, "max_num_seqs")
    mode = given.get("performance_mode")
    batch = vllm_defaults.batch_defaults(
        tier,
        max_model_len=length or (1 << 22),
        chunked_prefill=supported if chunked is None else bool(chunked),
        budget=budget,
        seqs=seqs,
        throughput=mode is not None and mode.value == "throughput",
    )
    why = "; ".join(batch.steps)
    if budget is None:
        claims.append(
            _default("max_num_batched_tokens", {BUDGET: batch.max_num_batched_tokens}, why)
        )
        notes.append(f"max_num_batched_tokens = {batch.max_num_batched_tokens} ({why})")
    if seqs is None:
        claims.append(_default("max_num_seqs", {SEQS: batch.max_num_seqs}, why))
        notes.append(f"max_num_seqs = {batch.max_num_seqs} ({why})")
    why_model = "on for a model that supports it" if supported else "off: an encoder-decoder model"
    for name, path in (("enable_chunked_prefill", CHUNKED), ("enable_prefix_caching", REUSE)):
        if _value(read_, name) is None:
            claims.append(_default(name, {path: supported}, why_model))
            if not supported:
                notes.append(f"{name} = False (an encoder-decoder model; ModelConfig)")
    eager = bool(_value(read_, "enforce_eager"))
    graph_given = _value(read_, "max_cudagraph_capture_size")
    if graph_given is None:
        graph_given = _value(read_, "compilation_config.max_cudagraph_capture_size")
    query_len = 1 + int(_value(read_, "speculative_config.num_speculative_tokens") or 0)
    top = 0 if eager else min(graph_given or 0, batch.max_num_batched_tokens)
    explicit = capture_sizes(given)
    kept: list[int] | None = None
    sizes_key = explicit[0] if explicit is not None else ""
    if explicit is not None and not eager:
        kept = vllm_defaults.kept_capture_sizes(explicit[1], batch.max_num_batched_tokens)
        _check_capture_ceiling(given, graph_given, kept, sizes_key)
    if graph_given is None and kept is not None:
        # VllmConfig._set_cudagraph_sizes (v0.24.0, v0.33.0): explicit sizes are captured
        # as given up to the budget, and the ceiling becomes the largest one kept
        top = kept[-1] if kept else 0
        claims.append(
            _default(
                "max_cudagraph_capture_size",
                {GRAPH_MAX: top},
                f"the largest of the given {sizes_key} within the budget",
            )
        )
        notes.append(
            f"CUDA graphs captured for the {len(kept)} given sizes up to {top} tokens"
            f" ({sizes_key}, those above max_num_batched_tokens"
            f" {batch.max_num_batched_tokens} dropped; VllmConfig._set_cudagraph_sizes)"
        )
    elif graph_given is None:
        ceiling = vllm_defaults.cudagraph_ceiling(
            enforce_eager=eager,
            max_num_seqs=batch.max_num_seqs,
            budget=batch.max_num_batched_tokens,
            decode_query_len=query_len,
            sm=dev.sm if dev is not None else None,
        )
        claims.append(_default("max_cudagraph_capture_size", {GRAPH_MAX: ceiling}, "derived"))
        top = ceiling
        if eager:
            notes.append("no CUDA graphs (enforce_eager)")
        else:
            ladder = vllm_defaults.cudagraph_ladder(ceiling)
            notes.append(
                f"CUDA graphs captured for {len(ladder)} sizes up to {ceiling} tokens"
                f" (min(2 x max_num_seqs {batch.max_num_seqs} x query length {query_len},"
                f" {1024 if dev is not None and 100 <= dev.sm < 110 else 512}), capped at the"
                " budget; VllmConfig._set_cudagraph_sizes)"
            )
    decode = min(batch.max_num_seqs * query_len, top)
    facts = spec.facts() if spec is not None else fact_defaults()
    # the engine-neutral per-token workspace (what every engine's terms start from; the
    # TensorRT-LLM terms this read before add nothing to it): no other pack is imported
    per_token = estimate_coefficients(facts).act_per_token
    graph_bytes = vllm_defaults.cudagraph_memory(top, decode, per_token, kept)
    if graph_bytes:
        notes.append(
            f"about {graph_bytes / (1 << 30):.2f} GiB of CUDA-graph memory taken from the KV"
            " budget (Worker.determine_available_memory; estimated)"
        )
    return claims, notes, graph_bytes


def capture_sizes(given: Mapping[str, Given]) -> tuple[str, list[int]] | None:
    """The CUDA-graph capture sizes the user gave (the key as written, the sizes):
    `cudagraph_capture_sizes` or `compilation_config.cudagraph_capture_sizes` (vLLM
    refuses both at once, fields._cross_problems). None: vLLM's default ladder."""
    top = given.get("cudagraph_capture_sizes")
    if top is not None and isinstance(top.value, (list, tuple)) and top.value:
        return top.key, [int(s) for s in top.value]
    comp = given.get("compilation_config")
    if comp is not None and isinstance(comp.value, Mapping):
        sizes = comp.value.get("cudagraph_capture_sizes")
        if isinstance(sizes, (list, tuple)) and sizes:
            return f"{comp.key}.cudagraph_capture_sizes", [int(s) for s in sizes]
    return None


def _check_capture_ceiling(
    given: Mapping[str, Given], ceiling: int | None, kept: list[int], key: str
) -> None:
    """An explicit capture ceiling beside explicit sizes must be the largest size vLLM
    keeps, else it refuses (`VllmConfig._set_cudagraph_sizes`, v0.24.0 and v0.33.0:
    "customized max_cudagraph_capture_size(=X) should be consistent with the max value
    of cudagraph_capture_sizes(=Y)")."""
    valid = kept[-1] if kept else 0
    if ceiling is None or ceiling == valid:
        return
    top = given.get("max_cudagraph_capture_size")
    name = top.key if top is not None else "compilation_config.max_cudagraph_capture_size"
    raise VllmArgErrors(
        [
            KeyProblem(
                name,
                f"customized max_cudagraph_capture_size (={ceiling}) should be consistent"
                f" with the max value of cudagraph_capture_sizes (={valid}, the largest of"
                f" {key} within max_num_batched_tokens; VllmConfig._set_cudagraph_sizes)",
                value=ceiling,
            )
        ]
    )


def _speculative_defaults(given: Mapping[str, Given], read_: Reading) -> list[AnyClaim]:
    """num_speculative_tokens left open is not given (0), and rule vllm.spec.tokens-given
    refuses, as vLLM does: SpeculativeConfig._verify_args, a validator, runs before
    __post_init__ could take the draft's n_predict (vLLM 0.33.0 refuses an MTP
    speculative_config without num_speculative_tokens, also on a model with MTP layers)."""
    if _value(read_, "speculative_config.method") in (None, "none"):
        return []
    if _value(read_, "speculative_config.num_speculative_tokens") is not None:
        return []
    return [setup("num_speculative_tokens not given", {DRAFT: 0}, source="speculative_config")]


def _open_defaults(
    given: Mapping[str, Given], read_: Reading, model: Any, target: vllm_target.Target
) -> list[AnyClaim]:
    """What vLLM runs for the fields the input leaves open, as `EngineDefault` rows
    turned into its one setup claim (`open_default_claims`): the field list's fixed
    defaults, `defaults.OPEN_DEFAULTS`' rows (`defaults.open_defaults`), and the values
    vLLM derives from the model and the other fields (max_model_len, left open, is the
    model's length). No solve may move them (setup, never blamed)."""
    surf = surface()
    fixed: dict[str, Given] = {}
    for name in TOP:
        written = given.get(name)
        if (written is not None and written.value is not None) or name in (
            "quantization",
            "max_num_seqs",
            "max_num_batched_tokens",
        ):
            continue
        if name not in surf.fields:  # a field of a later release than the one read
            continue
        default = surf.fields[name].default
        if name in UNSET_AS:
            default = UNSET_AS[name] if default is None else default
        if default is not None:
            fixed[name] = Given(name, default, name, default)
    pins = {path: value for path, value in reading(fixed).values.values()}
    fields = {p: name for name, (p, _) in reading(fixed).values.items()}
    for row in vllm_defaults.open_defaults(set(given), set(read_.values)):
        pins[row.path], fields[row.path] = row.value, row.field
    if "quantization" not in given and model is None:
        pins["quant_config.quant_algo"] = None  # with a model, its checkpoint decides
    pins["vllm_config.checkpoint_quant_method"] = _checkpoint_quant(model)
    pins.update(target.facts())
    vocab = _draft_vocab(given, model)
    pins["vllm_config.draft_vocab_differs"] = vocab.differs
    # a separate draft model's heads (ngram and MTP draft with none, or with the target's)
    method = _value(read_, "speculative_config.method_name")
    separate = method not in (None, "none", "ngram", "ngram_gpu", "mtp", "suffix")
    pins["model.vllm_draft_heads"] = vocab.heads if separate else 0
    for key in SPEC_AS_GIVEN:  # vLLM's defaults, so no solve turns one on to fit a rule
        if f"speculative_config.{key}" not in read_.values:
            pins[SPEC[key]] = lookup(SPEC[key]).default
    pins["vllm_config.model_runner_v1"] = bool(v1_fallback(given))
    if "max_model_len" not in given or _value(read_, "max_model_len") is None:
        spec = _model_spec(model)
        pins["build_config.max_seq_len"] = (
            spec.max_position_embeddings
            if spec is not None
            else lookup("model.max_position_embeddings").default
        )
    # options vLLM has no field for keep the profile's value: no solve may reach for them
    # (a TensorRT-LLM KV quantization, beam width or attention window would fit memory
    # that vLLM itself would not)
    mapped = set(option_fields()) | {p for p, _ in read_.values.values()} | {EAGLE3}
    # the ranks the MoE layers use follow from tp, dp and --enable-expert-parallel
    # (rule experts.vllm-expert-ranks-are-tensor-times-data-ranks), not from a field
    mapped |= {
        "parallel_config.moe_expert_parallel_used",
        "parallel_config.moe_tensor_parallel_used",
    }
    # (options outside the profile's surface are constants of the compiled model already:
    # only the release's own options the input leaves open need pinning here)
    prof = get_profile(DEFAULT_PROFILE)
    owned = prof.surface
    for spec_ in options([prof.engine]):
        path = spec_.path
        if not spec_.fact and path in owned and path not in mapped and path not in pins:
            pins[path] = prof.defaults.get(path, spec_.default)
    _checkpoint_kv(pins, given, model)
    for path in list(pins):
        if any(path == p for p, _ in read_.values.values()):
            del pins[path]
    # the field list's and the derived rows, in the common form: one setup claim
    source = f"fields/{SURFACE}.yaml"
    rows = [
        EngineDefault(fields.get(path, ""), path, value, source, vllm_defaults.LEFT_OPEN)
        for path, value in pins.items()
    ]
    return open_default_claims(rows)


# VllmConfig._get_v2_model_runner_unsupported_features (vllm/config/vllm.py, v0.33.0):
# what the V2 model runner, a GPU's choice (use_v2_model_runner: Triton present and
# VLLM_USE_V2_MODEL_RUNNER unset), does not serve, so vLLM falls back to V1.
V2_UNSUPPORTED_METHODS = ("suffix", "custom_class")
PARALLEL_DRAFTING_V2 = ("dflash", "dspark")


def v1_fallback(given: Mapping[str, Given]) -> list[str]:
    """Why vLLM would run these arguments on its V1 model runner (empty: V2)."""

    def value(name: str) -> Any:
        g = given.get(name)
        return g.value if g is not None else None

    out = []
    spec = value("speculative_config")
    if isinstance(spec, Mapping):
        method = spec.get("method")
        if method in V2_UNSUPPORTED_METHODS:
            out.append(f"speculative method {method!r}")
        if spec.get("parallel_drafting") and method not in PARALLEL_DRAFTING_V2:
            out.append("parallel drafting for EAGLE speculative decoding")
        # the V2 draft-model speculator has no token mapping between the vocabularies
        if spec.get("use_heterogeneous_vocab"):
            out.append("heterogeneous-vocabulary draft models")
    # ParallelConfig.use_ubatching; without VLLM_USE_V2_MODEL_RUNNER set, V2 takes no DBO
    if value("enable_dbo") or (value("ubatch_size") or 0) > 1:
        out.append("dual batch overlap")
    if (
        value("distributed_executor_backend") == "external_launcher"
        and (value("pipeline_parallel_size") or 1) > 1
    ):
        out.append("pipeline parallelism with external_launcher")
    return out


def _draft_vocab(given: Mapping[str, Given], model: Any) -> vllm_target.DraftVocab:
    spec = given.get("speculative_config")
    draft = spec.value.get("model") if spec is not None and isinstance(spec.value, dict) else None
    return vllm_target.draft_vocab(model, draft)


def _draft_notes(given: Mapping[str, Given], read_: Reading, model: Any) -> list[str]:
    """What vLLM compares of a draft model's vocabulary, when arbiter could not, or when
    use_heterogeneous_vocab lets them differ."""
    if _value(read_, "speculative_config.method") != "DraftTarget":
        return []
    vocab = _draft_vocab(given, model)
    if vocab.target is None or vocab.draft is None:
        return [
            "the draft model's vocabulary was not compared with the target's"
            f" ({vocab.where if vocab.draft is None else 'no target config.json'}): vLLM"
            " refuses a draft whose vocab_size differs unless use_heterogeneous_vocab is set"
            " (SpeculativeConfig.verify_equal_vocab_size_if_draft_model)"
        ]
    if vocab.differs and _value(read_, "speculative_config.use_heterogeneous_vocab"):
        return [
            f"the draft's vocabulary ({vocab.draft}) differs from the target's ({vocab.target}):"
            " vLLM drafts over the tokens both share (token-level intersection, greedy only)"
        ]
    return []


# SpeculativeConfig.__post_init__ (v0.33.0) warns for every MTP draft but these when more
# than one token is drafted
MTP_MULTI_STEP = ("step3p5_mtp", "step5_mtp", "inkling_mtp")


def _mtp_notes(read_: Reading, target: vllm_target.Target) -> list[str]:
    """How vLLM drafts k MTP tokens from the target's n MTP layers (n_predict)."""
    k = _value(read_, "speculative_config.num_speculative_tokens")
    if _value(read_, "speculative_config.method") != "MTP" or not k or not target.mtp:
        return []
    out = []
    n = target.mtp_layers
    if n and k > n and k % n == 0:
        out.append(
            f"num_speculative_tokens {k} runs the model's {n} MTP layer(s) {k // n} times"
            " (n_predict; SpeculativeConfig.__post_init__)"
        )
    if k > 1 and target.mtp_draft not in MTP_MULTI_STEP:
        out.append(
            "vLLM warns: num_speculative_tokens > 1 runs the same MTP layer several times,"
            " which may lower the acceptance rate (SpeculativeConfig.__post_init__)"
        )
    return out


def _runner_notes(given: Mapping[str, Given], read_: Reading) -> list[str]:
    why = v1_fallback(given)
    if not why:
        return []
    out = [
        "vLLM runs its V1 model runner: its V2 runner does not serve "
        f"{', '.join(why)} (VllmConfig.use_v2_model_runner)"
    ]
    blocker = v1_async_blocker(read_)
    if blocker is not None and _value(read_, "async_scheduling") is None:
        out.append(
            "vLLM would set async_scheduling = False: the V1 model runner does not support"
            f" it with {blocker} (VllmConfig.__post_init__)"
        )
    return out


def v1_async_blocker(read_: Reading) -> str | None:
    """What keeps the V1 model runner from scheduling asynchronously, in vLLM's order
    (VllmConfig.__post_init__), or None."""
    method = _value(read_, "speculative_config.method_name")
    if method is not None and method != "none" and method not in V1_ASYNC_METHODS:
        return f"{method}-based speculative decoding"
    if method is not None and _value(read_, "speculative_config.disable_padded_drafter_batch"):
        return "disable_padded_drafter_batch=True"
    if (_value(read_, "pipeline_parallel_size") or 1) > 1:
        return "pipeline parallelism"
    return None


def _default(name: str, requirement: dict[str, Any], why: str) -> AnyClaim:
    return perf(
        f"vllm.default.{name}",
        requirement,
        weight=4,
        fallback=logging_fallback(name),
        source=f"vLLM 0.33 default: {why}",
    )


def _value(read_: Reading, key: str) -> Any:
    found = read_.values.get(key)
    return found[1] if found is not None else None


# ---------------------------------------------------------------------------- writing
def write(resolution: Resolution, parsed: DialectInput[NativeVllm] | None = None) -> dict[str, Any]:
    """The solved configuration in vLLM's `--config` YAML shape, in the user's spelling:
    their keys with the solved values (a value meaning the same is kept as written),
    every other key as given, and any field the solve changed that vLLM would not derive
    itself added with its dashed name. Without `parsed`, the fields whose solved values
    differ from the vllm-0.33 profile's defaults."""
    values = resolution.values
    fields = option_fields()
    if parsed is None:
        defaults = get_profile(DEFAULT_PROFILE).defaults
        out: dict[str, Any] = {}
        for change in resolution.changes:
            name = fields.get(change.path)
            if name is None or "." in name:
                continue
            if defaults.get(change.path, change.old) != change.new or change.path not in defaults:
                out[name.replace("_", "-")] = back(name, change.path, change.new, None)
        return out
    out = copy.deepcopy(parsed.native.input)
    given: Mapping[str, Given] = parsed.native.given
    read_: Reading = parsed.native.reading
    forced: Mapping[str, Forced] = parsed.native.forced
    for key, (path, read_value) in read_.values.items():
        head, _, sub = key.partition(".")
        g = given.get(head)
        solved = values[path]
        if key in forced and g is not None:
            _put(out, g, forced[key].after)
            continue
        if g is None or solved == read_value:
            continue  # as written
        if not sub:
            _put(out, g, back(head, path, solved, g.value))
        elif head == "speculative_config" and sub in ("method", "method_name"):
            continue
        else:
            _put_sub(out, g, sub, solved)
    rewrite = _graph_rewrite(read_, values)
    if rewrite is not None:  # written as vLLM will use it, so that writing is a fixed point
        key, _, after, _ = rewrite
        head, _, sub = key.partition(".")
        g = given.get(head)
        if g is not None and not sub:
            if after is None:
                out.pop(g.key, None)
            else:
                out[g.key] = after
        elif g is not None and after is None:
            _drop_sub(out, g, sub)
        elif g is not None:
            _put_sub(out, g, sub, after)
    claimed = {p for c in parsed.claims for p in c.expr.paths()}
    for change in resolution.changes:
        name = fields.get(change.path)
        if name is None or "." in name or change.path in claimed or name in given:
            continue
        out[name.replace("_", "-")] = back(name, change.path, change.new, None)
    return out


def _put(out: dict[str, Any], g: Given, value: Any) -> None:
    if value == g.value and not g.subkeys:
        return  # as written
    if g.negated:
        if value is False:
            return
        out.pop(g.key, None)
        out[g.field.replace("_", "-")] = value
        return
    out[g.key] = value


def _put_sub(out: dict[str, Any], g: Given, sub: str, value: Any) -> None:
    current = g.value.get(sub) if isinstance(g.value, dict) else None
    if current == value:
        return
    if g.subkeys:  # written as dotted keys
        out[f"{g.key}.{sub}"] = value
        return
    raw = out.get(g.key)
    if isinstance(raw, str):
        data = json.loads(raw)
        data[sub] = value
        out[g.key] = json.dumps(data, separators=(",", ":"))
    elif isinstance(raw, dict):
        out[g.key] = {**raw, sub: value}


def _drop_sub(out: dict[str, Any], g: Given, sub: str) -> None:
    """Remove one key of a sub-config as written (dotted keys, a JSON string or a
    mapping); a sub-config left empty goes too."""
    if g.subkeys:
        out.pop(f"{g.key}.{sub}", None)
        return
    raw = out.get(g.key)
    data = json.loads(raw) if isinstance(raw, str) else dict(raw) if isinstance(raw, dict) else None
    if data is None:
        return
    data.pop(sub, None)
    if not data:
        out.pop(g.key, None)
    elif isinstance(raw, str):
        out[g.key] = json.dumps(data, separators=(",", ":"))
    else:
        out[g.key] = data


def not_arbitrated(parsed: DialectInput[NativeVllm]) -> dict[str, str]:
    """Fields carried through untouched, each with the reason."""
    return dict(parsed.native.reading.carried)


# ---------------------------------------------------------------------------- checking
def check_vllm(
    config: Mapping[str, Any] | str | Path | None,
    *,
    serve_args: str | None = None,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile = DEFAULT_PROFILE,
) -> Verdict:
    """Check `vllm serve` arguments (a `--config` mapping or YAML path, and/or a command
    line) the engine's way, for `model` (a config.json path or dict, or a ModelSpec) on
    `gpus` GPUs of `device` (a catalog name): `arbiter.check` with the vLLM dialect.

    Returns a Verdict: "accept" (vLLM runs the values the user wrote; `warnings` has what
    it would warn about), "adjust" (vLLM rewrites a value the user wrote: `changes` says
    which and why) or "reject" (bad keys or values, or claims that conflict through the
    listed rules). What vLLM derives for the fields left open is in `warnings` too, as
    "vLLM would set ...". Never raises for bad input."""
    return verdict_of(
        "vllm",
        config,
        serve_args=serve_args,
        model=model,
        device=device,
        gpus=gpus,
        profile=profile,
    )


def _graph_rewrite(
    read_: Reading, values: Mapping[str, Any]
) -> tuple[str, int, int | None, str] | None:
    """How vLLM rewrites a CUDA-graph capture ceiling the user gave
    (``VllmConfig._set_cudagraph_sizes``): the reading's key, the value given, the value
    vLLM uses (None: it captures nothing) and why; None where vLLM keeps the value."""
    for key in ("max_cudagraph_capture_size", "compilation_config.max_cudagraph_capture_size"):
        given = _value(read_, key)
        if given is not None:
            break
    else:
        return None
    if not given:
        return None
    if values["vllm_config.enforce_eager"]:
        return key, given, None, "enforce_eager captures no CUDA graphs"
    if given > values[BUDGET]:
        why = "the capture ceiling is capped at max_num_batched_tokens"
        return key, given, values[BUDGET], why
    return None


def _adjustments(
    parsed: DialectInput[NativeVllm], resolution: Resolution, claims: list[AnyClaim]
) -> list[str]:
    """Values the user wrote that vLLM rewrites (its CUDA-graph sizing), and any option
    the solve had to move that no claim of the input fixes."""
    values = resolution.values
    out: list[str] = []
    read_: Reading = parsed.native.reading
    rewrite = _graph_rewrite(read_, values)
    if rewrite is not None:
        _, before, after, why = rewrite
        shown = "none" if after is None else after
        out.append(
            f"max_cudagraph_capture_size: {before} -> {shown}, because {why}"
            " (VllmConfig._set_cudagraph_sizes)"
        )
    explicit = capture_sizes(parsed.native.given)
    if explicit is not None and not values["vllm_config.enforce_eager"]:
        kept = vllm_defaults.kept_capture_sizes(explicit[1], values[BUDGET])
        if len(kept) < len(set(explicit[1])):
            field = "cudagraph_capture_sizes"
            if "." in explicit[0]:  # given in the compilation config
                field = f"compilation_config.{field}"
            out.append(
                f"{field}: {explicit[1]} -> {kept}, because sizes above"
                f" max_num_batched_tokens ({values[BUDGET]}) are not captured"
                " (VllmConfig._set_cudagraph_sizes)"
            )
    claimed = {p for c in claims for p in c.expr.paths()}
    fields = option_fields()
    for change in resolution.changes:
        name = fields.get(change.path)
        if name is not None and change.path not in claimed:
            out.append(
                f"{name}: {change.old} -> {change.new} ({resolution.provenance(change.path)})"
            )
    return out


# derived once, never re-derived: vLLM checks its later limits against these values
KEPT_DEFAULTS = ("vllm.default.max_num_batched_tokens", "vllm.default.max_num_seqs")


def _kept_defaults(parsed: DialectInput[NativeVllm], resolution: Resolution) -> list[str]:
    """A budget or sequence limit vLLM derived that a rule would have to move: vLLM keeps
    its value and refuses (e.g. create_engine_config's LoRA-with-speculation budget);
    the solve's value says what to set explicitly."""
    fields = option_fields()
    paths = {c.name: sorted(c.expr.paths()) for c in parsed.claims}
    out = []
    for dropped in resolution.dropped:
        if dropped.name not in KEPT_DEFAULTS:
            continue
        for path in paths.get(dropped.name, ()):
            name = fields.get(path, path)
            out.append(
                f"vLLM keeps its default {name} and refuses the configuration: {dropped.reason};"
                f" setting {name} to {resolution.values[path]} would hold"
            )
    return out


def _gave_way(parsed: DialectInput[NativeVllm], resolution: Resolution) -> list[str]:
    """Defaults vLLM derives that a rule makes give way: the value, and why."""
    fields = option_fields()
    paths = {c.name: sorted(c.expr.paths()) for c in parsed.claims}
    out = []
    for dropped in resolution.dropped:
        if not dropped.name.startswith("vllm.default."):
            continue
        moved = ", ".join(
            f"{fields.get(p, p)} to {resolution.values[p]}" for p in paths.get(dropped.name, ())
        )
        out.append(f"vLLM's default gives way: it would change {moved} because {dropped.reason}")
    return out


def _warnings(resolution: Resolution) -> list[str]:
    """What vLLM logs a warning about while it runs the configuration as written."""
    v = resolution.values
    out = []
    if v[BUDGET] > v[SEQS] * v["build_config.max_seq_len"]:
        out.append(
            f"max_num_batched_tokens ({v[BUDGET]}) exceeds max_num_seqs x max_model_len"
            f" ({v[SEQS] * v['build_config.max_seq_len']}) (SchedulerConfig.verify_max_model_len)"
        )
    return out


__all__ = [
    "DEFAULT_PROFILE",
    "QUANT",
    "check_vllm",
    "merged_input",
    "not_arbitrated",
    "read",
    "write",
]
