"""TensorRT-LLM dialect: LLM-API arguments (`extra_llm_api_options` YAML, keyword
arguments, trtllm-serve's command line) and prebuilt engine folders -> claims; a
resolution -> the same YAML shape.

Supported releases are the ones with a field list (`trtllm_fields.releases()`: 1.0, 1.2).
A profile picks the release; the backend comes from the input (`backend`, or
`--backend`; PyTorch unless it says tensorrt, or an engine folder is given), and with it
the argument class the input is checked against (`TorchLlmArgs` or `TrtLlmArgs`):

- a key that is no field of that class in that release is bad input, and every such key
  is named at once with close matches; values are coerced the way the engine's pydantic
  models coerce them (`trtllm_fields`);
- a field that shapes arbitration and that the user set becomes a **func** claim named
  after its key (`llm_args.kv_cache_config.enable_block_reuse`);
- an engine feature on by default that the user left alone becomes a **perf** claim
  `default.<feature>`, whose fallback logs why it was switched off;
- every other field is carried through untouched and listed as not arbitrated;
- a prebuilt engine's `config.json` becomes **setup** claims ("BuildConfig is readonly"),
  and runtime limits beside it are clamped or overridden as the LLM API does, not
  written onto the build limits.

`check_trtllm()` runs all of it and answers the engine's way: accept, adjust or reject.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.expr import ge
from constraints.profiles import DEFAULT_PROFILE, PROFILES, Profile, UnknownProfile, get_profile
from constraints.schema import lookup

from ...check import verdict_of
from ...claims import AnyClaim, func, perf
from ...dialects._base import (
    DialectError,
    DialectInput,
    KeyProblem,
    Verdict,
    load_mapping,
    logging_fallback,
)
from ...dialects.open_defaults import open_default_claims
from ...errors import ConflictError  # noqa: F401 - its callers read it through this module
from ...json_types import expect_choice
from ...resolution import Resolution
from . import serve as trtllm_serve
from .defaults import open_defaults
from .fields import FieldErrors, catalogue, releases, validate
from .map import WORLD, Reading, reading, write_back
from .prebuilt import build_limits, engine_claims, read_engine_dir
from .record import NativeTrtllm

# engine features on by default: (name, requirement, weight)
DEFAULT_FEATURES = (
    ("enable_block_reuse", {"kv_cache_config.enable_block_reuse": True}, 4),
    ("enable_partial_reuse", {"kv_cache_config.enable_partial_reuse": True}, 1),
    ("use_paged_context_fmha", {"plugin_config.use_paged_context_fmha": True}, 2),
    ("context_fmha", {"plugin_config.context_fmha": True}, 2),
)
_DEFAULT_PATHS = {f"default.{name}": tuple(req) for name, req, _ in DEFAULT_FEATURES}
# trtllm-serve's names for kv_cache_config.free_gpu_memory_fraction, accepted at the top
# of a YAML (trtllm-serve and disaggregated-server configs use them)
# runtime limits checked against a prebuilt engine's build (TrtLlmArgs,
# validate_build_config_with_runtime_params): clamped to it, or overridden by it
CLAMPED = ("max_batch_size", "max_num_tokens")
OVERRIDDEN = ("max_seq_len", "max_beam_width", "max_input_len")
BACKENDS = {None: "pytorch", "pytorch": "pytorch", "tensorrt": "tensorrt", "trt": "tensorrt"}


def read(
    args: str | Path | Mapping[str, Any] | None = None,
    *,
    engine: str | Path | None = None,
    file: str | None = None,
    defaults: bool = True,
    serve_args: str | None = None,
    profile: str | Profile | None = None,
) -> DialectInput[NativeTrtllm]:
    """Claims for LLM-API arguments (a mapping or a YAML file) and/or a trtllm-serve command
    line (`serve_args`), on top of a prebuilt `engine` folder when given. A folder passed as
    `args` (or a config.json with `build_config` and `pretrained_config`) is the engine.

    `DialectInput.native` (a `NativeTrtllm`) holds what write-back needs: the merged
    arguments as given, the release, the backend, the reading (claims and carried
    fields) and the notes."""
    claims: list[AnyClaim] = []
    where = "<llm_args>"
    if isinstance(args, (str, Path)) and Path(args).is_dir():
        engine, args = args, None
    serve = trtllm_serve.parse(serve_args) if serve_args else trtllm_serve.ServeArgs()
    if args is None and serve.config:
        args = serve.config
    data: dict[str, Any] = {}
    if args is not None:
        data, where = load_mapping(dict(args) if isinstance(args, Mapping) else args, "llm_args")
        where = file or where
    if "build_config" in data and "pretrained_config" in data:
        engine_only = engine_claims(data, where)
        base = _base_profile(profile)
        release = _release(base)
        prof = _profile(base, release, "tensorrt")
        return _input(engine_only, prof, release, where, {}, Reading(), "tensorrt", defaults)
    if engine is not None:
        engine_only, engine_where = read_engine_dir(engine)
        claims += engine_only
        if args is None:
            where = engine_where
    # trtllm-serve's top-level names (kv_cache_free_gpu_memory_fraction) are flags only:
    # the YAML is merged into the LLM arguments as is (tensorrt_llm/llmapi/llm_utils.py,
    # update_llm_args_with_extra_dict maps no such key) and TorchLlmArgs forbids extra keys
    given = dict(data)
    base = _base_profile(profile)
    release = _release(base)
    merged = trtllm_serve.merge(serve.args, given, release)
    backend = _backend(merged, engine is not None, where, base.backend or "pytorch")
    dropped: list[KeyProblem] = []
    validated = validate(merged, release, backend, file=where, ignored=dropped)
    try:
        read_ = reading(validated, release=release, backend=backend)
    except DialectError as exc:
        exc.file = exc.file or where
        raise
    for problem in dropped:  # a key BuildConfig.from_dict / PluginConfig drop, or a value
        # the engine stores unchecked (build_config.plugin_config)
        read_.carried[problem.key] = (
            "no field of the release: the engine drops it"
            if problem.reason.startswith("no field")
            else "stored unchecked by the engine: written back as given"
        )
        read_.warnings.append(str(problem))
    _vanilla_block(read_, backend)
    limits = build_limits(claims) or _yaml_build_limits(read_, validated, release, backend)
    overrides: dict[str, Any] = {}
    if limits:
        claims += _runtime_limits(read_, limits, release, overrides)
    _check_cuda_graph_list(validated, release, where)
    _builder_raises_tokens(read_, backend, base)
    _sizes_from_build_config(read_, validated, release, backend)
    claims += [
        func(f"llm_args.{key}", {path: value}, source=f"{where}: {key}")
        for key, (path, value) in sorted(read_.values.items())
    ]
    claims += [
        func(f"engine.{key}", {path: value}, source=f"{where}: derived by the engine")
        for key, (path, value) in sorted(read_.derived.items())
    ]
    # what the engine runs for the fields left open (defaults.py): the blamable rows (the
    # MoE backend) are pinned and never written back; the rest are facts of the run
    left_open = open_defaults(set(read_.values), release, backend)
    blamed = [row for row in left_open if row.blame]
    engine_defaults = {row.path for row in blamed}
    claims += open_default_claims(blamed)
    claims += _builder_keeps_batch(read_, backend, base)
    claims += open_default_claims(row for row in left_open if not row.blame)
    prof = _profile(base, release, backend)
    parsed = _input(claims, prof, release, where, merged, read_, backend, defaults)
    parsed.native.overrides = overrides
    parsed.native.engine_defaults = engine_defaults  # pinned, never written back
    return parsed


def _builder_keeps_batch(read_: Reading, backend: str, prof_defaults: Profile) -> list[AnyClaim]:
    """The TensorRT builder covers the drafts by raising max_num_tokens to max_batch_size x
    (max_draft_len + 1), never by lowering max_batch_size (tensorrt_llm/builder.py build(),
    the stored 66,173-character version: "New max_num_tokens is set to ..."). So where the
    user left max_batch_size alone, its default is what the engine keeps: a perf claim, so
    that speculative.token-budget-covers-drafts moves max_num_tokens as the builder does
    (a hard limit on the batch still wins, with this claim dropped and named)."""
    paths = {path for path, _ in read_.values.values()}
    drafting = any(
        path == "speculative_config.decoding_type" and value not in (None, "none")
        for path, value in read_.values.values()
    )
    batch = "build_config.max_batch_size"
    if backend != "tensorrt" or not drafting or batch in paths:
        return []
    default = prof_defaults.defaults.get(batch, lookup(batch).default)
    return [
        perf(
            "default.max_batch_size",
            {batch: default},
            weight=1,
            source="tensorrt_llm/builder.py build(): drafts raise max_num_tokens, not the batch",
        )
    ]


def _yaml_build_limits(
    read_: Reading, validated: Mapping[str, Any], release: str, backend: str
) -> dict[str, Any]:
    """A TensorRT-backend YAML with both a build_config and top-level runtime sizes: the
    engine is built with the build_config (its value, or BuildConfig's default where it
    leaves one out) and TrtLlmArgs.validate_build_config_with_runtime_params checks the
    runtime sizes against it, as for a prebuilt engine (`_runtime_limits`), instead of
    both being claims on one option (a false conflict for a runtime batch below the
    build's). The build values taken from defaults become claims the engine derives."""
    build = validated.get("build_config")
    if backend != "tensorrt" or not isinstance(build, Mapping):
        return {}
    fields = catalogue(release).fields("BuildConfig")
    limits: dict[str, Any] = {}
    for key in (*CLAMPED, *OVERRIDDEN):
        value = build.get(key, fields[key].default if key in fields else None)
        if value is None or key not in read_.values:
            continue
        inner = f"build_config.{key}"
        limits[inner] = value
        if inner not in read_.values:
            read_.derived[inner] = (inner, value)
    return limits


RUNTIME_KNOBS = (
    "max_batch_size",
    "max_num_tokens",
    "max_seq_len",
    "max_input_len",
    "max_beam_width",
)


def _sizes_from_build_config(
    read_: Reading, validated: Mapping[str, Any], release: str, backend: str
) -> None:
    """1.0's TorchLlmArgs keeps build_config as a deprecated dummy, but not an idle one:
    set_runtime_knobs_from_build_config overrides max_batch_size, max_num_tokens,
    max_seq_len, max_input_len and max_beam_width with the BuildConfig's values, given or
    default (a warning "overriding {key} from build_config"; llm_args.py, the
    95,434-character 1.0 version). A top-level size that differs is overridden: noted as
    an adjustment, carried as given, and the build value (a BuildConfig default where
    build_config leaves it out) is what the engine runs with. 1.2 has no such validator
    (its TorchLlmArgs has no build_config field)."""
    build = validated.get("build_config")
    if release != "1.0" or backend != "pytorch" or not isinstance(build, Mapping):
        return
    fields = catalogue(release).fields("BuildConfig")
    for key in RUNTIME_KNOBS:
        inner = f"build_config.{key}"
        value = build.get(key, fields[key].default)
        if value is None or key not in read_.values:
            continue
        path, given = read_.values[key]
        if given == value:
            continue
        del read_.values[key]
        read_.carried[key] = (
            f"overridden by build_config.{key} (set_runtime_knobs_from_build_config)"
        )
        if inner not in read_.values:
            read_.derived[inner] = (path, value)
        read_.notes.append(
            f"{key}: {given} -> {value} (overridden by build_config.{key}"
            + ("" if key in build else ", BuildConfig's default")
            + ", TorchLlmArgs.set_runtime_knobs_from_build_config)"
        )


# the C++ LookaheadDecodingConfig's defaults (window, n-gram, verification set), which
# LookaheadDecodingConfig takes for a field left unset
LOOKAHEAD_DEFAULTS = (4, 3, 4)


def _builder_raises_tokens(read_: Reading, backend: str, prof_defaults: Profile) -> None:
    """An explicit max_num_tokens below max_batch_size x (max_draft_len + 1) on the
    TensorRT backend is raised to that product by the builder, never refused
    (tensorrt_llm/builder.py build(): "max_num_tokens (...) is smaller than max_batch_size *
    (max_draft_len + 1) ... New max_num_tokens is set to ...", an info line; the same in
    the 62,689-character version @008b2b8d and in the stored 41,304-character 0.x one).
    The raised value replaces the given one, and the raise is noted as an adjustment.
    max_batch_size is the given one or the profile's default (the builder keeps it);
    max_draft_len the given one, or Lookahead's from its window, n-gram and verification
    set (LookaheadDecodingConfig.calculate_speculative_resource, which TrtLlmArgs writes
    into build_config.max_draft_len). Where the draft length is not known the value stays
    a claim and speculative.token-budget-covers-drafts judges it."""
    values = {path: value for path, value in read_.values.values()}
    kind = values.get("speculative_config.decoding_type")
    path = "build_config.max_num_tokens"
    key = next((k for k, (p, _) in read_.values.items() if p == path), None)
    if backend != "tensorrt" or kind in (None, "none") or key is None:
        return
    draft = values.get("build_config.max_draft_len")
    if kind == "Lookahead":
        window, ngram, verify = (
            values.get(f"speculative_config.{name}") or default
            for name, default in zip(
                ("max_window_size", "max_ngram_size", "max_verification_set_size"),
                LOOKAHEAD_DEFAULTS,
                strict=True,
            )
        )
        draft = max(ngram - 2, 0) + (window - 1 + verify) * (ngram - 1)
    batch = values.get("build_config.max_batch_size")
    if batch is None:
        batch = prof_defaults.defaults.get(
            "build_config.max_batch_size", lookup("build_config.max_batch_size").default
        )
    given = read_.values[key][1]
    if not isinstance(draft, int) or not isinstance(batch, int):
        return
    budget = batch * (draft + 1)
    if given >= budget:
        return
    read_.values[key] = (path, budget)
    read_.notes.append(
        f"{key}: {given} -> {budget} (the TensorRT builder raises it to max_batch_size "
        f"{batch} x (max_draft_len {draft} + 1))"
    )


def _input(
    claims: list[AnyClaim],
    prof: Profile,
    release: str,
    where: str,
    merged: dict[str, Any],
    read_: Reading,
    backend: str,
    defaults: bool,
) -> DialectInput[NativeTrtllm]:
    set_paths = {p for c in claims for p in c.expr.paths()}
    if defaults:
        claims = [*claims, *default_claims(set_paths, backend)]
    profile: Any = prof.name if PROFILES.get(prof.name) is prof else prof
    native = NativeTrtllm(merged, read_, backend, release, list(read_.notes))
    return DialectInput(claims, profile=profile, source=where, native=native)


def default_claims(set_paths: set[str], backend: str = "tensorrt") -> list[AnyClaim]:
    """Perf claims for engine features on by default that the user left alone (the
    plugin features are TensorRT-engine features: not for the PyTorch backend)."""
    return [
        perf(f"default.{name}", req, weight=w, fallback=logging_fallback(name), source="default")
        for name, req, w in DEFAULT_FEATURES
        if not set(req) & set_paths
        and (backend == "tensorrt" or not any(p.startswith("plugin_config.") for p in req))
    ]


def _base_profile(profile: str | Profile | None) -> Profile:
    """The registered release line named (or the default); an unknown name raises
    UnknownProfile listing the known ones."""
    if isinstance(profile, Profile):
        return profile
    name = profile or DEFAULT_PROFILE
    if name in PROFILES:
        return PROFILES[name]
    match = re.fullmatch(r"trtllm-(\d+\.\d+)(?:-(pytorch|tensorrt))?", str(name))
    # an older line reads with the oldest field list; a newer one than arbiter has is unknown
    if match and _key(match.group(1)) <= _key(releases()[-1]):
        return Profile(
            str(name),
            "trtllm",
            match.group(1),
            f"TensorRT-LLM {match.group(1)} (field list of the dialect)",
            {"runtime_config.backend": match.group(2) or "pytorch"},
            backend=match.group(2) or "pytorch",
            release=match.group(1),
        )
    try:
        return get_profile(name)
    except UnknownProfile as exc:  # bad input: a typed dialect error naming the known ones
        raise DialectError(
            "unknown profile", key="profile", value=str(name), suggestions=tuple(PROFILES)
        ) from exc


def _release(base: Profile) -> str:
    """The field list for the profile's release: its own, or for an older line without
    one, the oldest list (1.0)."""
    if base.engine != "trtllm":
        raise DialectError(
            f"profile {base.name!r} is for {base.engine_name}, not TensorRT-LLM",
            key="profile",
            value=base.name,
        )
    known = releases()
    release = base.release or known[-1]
    if release in known:
        return release
    older = [r for r in known if _key(r) <= _key(release)]
    return older[-1] if older else known[0]


def _profile(base: Profile, release: str, backend: str) -> Profile:
    """The profile to solve with: a registered one of this release and backend, else
    the base profile's release with the input's backend."""
    if base.backend == backend:
        return base
    for prof in PROFILES.values():
        if prof.engine == "trtllm" and prof.release == base.release and prof.backend == backend:
            return prof
    defaults = {**base.defaults, "runtime_config.backend": backend}
    if release == "1.0":
        defaults.update({"moe_config.backend": "CUTLASS"})
    name = f"trtllm-{base.release or release}" + ("" if backend == "pytorch" else "-tensorrt")
    return Profile(
        name,
        "trtllm",
        base.version,
        f"TensorRT-LLM {base.release or release}, {backend} backend",
        defaults,
        base.memory_terms,
        backend=backend,
        release=base.release or release,
    )


def _backend(merged: Mapping[str, Any], engine: bool, where: str, default: str) -> str:
    """The input's backend: an engine folder's is tensorrt; else `backend` as given, or
    (not given) the profile's own, so a TensorRT-engine profile reads a plain YAML there."""
    value = merged.get("backend")
    if engine:
        return "tensorrt"
    if value is None:
        return default
    if expect_choice(value, ("pytorch", "tensorrt"), key="backend", file=where) not in BACKENDS:
        raise DialectError(
            "arbiter reads the pytorch and tensorrt backends",
            key="backend",
            file=where,
            value=value,
            suggestions=("pytorch", "tensorrt"),
        )
    return BACKENDS[value]


def _runtime_limits(
    read_: Reading, limits: Mapping[str, Any], release: str, overrides: dict[str, Any]
) -> list[AnyClaim]:
    """Runtime limits beside a prebuilt engine: never claims on the build limits. 1.2
    clamps a larger max_batch_size / max_num_tokens to the build (1.0 refuses it); both
    override max_seq_len, max_beam_width and max_input_len with the build's."""
    claims: list[AnyClaim] = []
    for key in (*CLAMPED, *OVERRIDDEN):
        if key not in read_.values:
            continue
        path, value = read_.values.pop(key)
        built = limits.get(path)
        read_.carried[key] = "a runtime limit of the prebuilt engine, checked against its build"
        if built is None or value == built:
            continue
        if key in CLAMPED and value < built:
            continue  # a lower runtime limit is what the engine runs with
        if key in CLAMPED and _key(release) < (1, 2):
            claims.append(
                func(f"llm_args.{key}", {path: ge(value)}, source=f"runtime {key} <= build")
            )
            continue
        verb = "clamped to" if key in CLAMPED else "overridden by"
        read_.notes.append(f"{key} [{value}] {verb} build_config.{key} [{built}]")
        overrides[key] = built
    return claims


def _vanilla_block(read_: Reading, backend: str) -> None:
    """The PyTorch executor runs VANILLA attention with one block of max_num_tokens tokens,
    whatever tokens_per_block says (create_py_executor, py_executor_creator.py
    @000429d57d42): a given tokens_per_block is overridden, not a conflict."""
    attn = read_.values.get("attn_backend")
    if backend != "pytorch" or attn is None or attn[1] != "VANILLA":
        return
    given = read_.values.pop("kv_cache_config.tokens_per_block", None)
    if given is None:
        return
    read_.carried["kv_cache_config.tokens_per_block"] = "overridden by VANILLA attention"
    tokens = read_.values.get("max_num_tokens")
    budget = f"max_num_tokens [{tokens[1]}]" if tokens else "max_num_tokens"
    if tokens is None or tokens[1] != given[1]:
        read_.notes.append(
            f"kv_cache_config.tokens_per_block [{given[1]}] overridden by {budget} "
            "(VANILLA attention runs one block per max_num_tokens)"
        )


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


def _check_cuda_graph_list(validated: Mapping[str, Any], release: str, where: str) -> None:
    """1.0 refuses batch_sizes with a max_batch_size unless the list is exactly the one
    it generates for that maximum (TorchLlmArgs.validate_cuda_graph_config)."""
    if release != "1.0":
        return
    cfg = validated.get("cuda_graph_config")
    if not isinstance(cfg, Mapping) or not cfg.get("batch_sizes") or not cfg.get("max_batch_size"):
        return
    expected = generated_batch_sizes_1_0(cfg["max_batch_size"], bool(cfg.get("enable_padding")))
    if sorted(cfg["batch_sizes"]) != expected:
        raise FieldErrors(
            [
                KeyProblem(
                    "cuda_graph_config.batch_sizes",
                    "1.0 takes batch_sizes with max_batch_size only when the list is the one "
                    f"it generates: {expected}",
                    cfg["batch_sizes"],
                    show_value=False,
                )
            ],
            file=where,
            release=release,
            cls="TorchLlmArgs",
        )


def generated_batch_sizes_1_0(max_batch_size: int, padding: bool) -> list[int]:
    """The CUDA graph batch sizes 1.0 generates for a maximum: 1, 2, 4 and the multiples
    of 8 up to 128 with padding, else 1..31, 32, 64, 128; then the powers of two from 256
    below 2^floor(log2(max)); all capped at the maximum, which closes the list."""
    sizes = [1, 2, 4, *range(8, 129, 8)] if padding else [*range(1, 32), 32, 64, 128]
    power = 256
    while power < 1 << (max_batch_size.bit_length() - 1):
        sizes.append(power)
        power *= 2
    sizes = sorted(s for s in sizes if s <= max_batch_size)
    if not sizes or sizes[-1] != max_batch_size:
        sizes.append(max_batch_size)
    return sizes


# ---------------------------------------------------------------------------- writing
def write(
    resolution: Resolution, parsed: DialectInput[NativeTrtllm] | None = None
) -> dict[str, Any]:
    """The solved configuration in the user's own YAML shape: their fields with the
    solved values, fields the solve changed where the release has them, everything else
    as given. Without `parsed`, the fields the solve set away from the defaults."""
    if parsed is not None:
        native = parsed.native
        backend, release = native.backend, native.release
    else:
        native = NativeTrtllm()
        backend = resolution.values.get("runtime_config.backend", "pytorch")
        release = releases()[-1]
    if release not in releases():
        release = releases()[0]
    return write_back(
        resolution.values,
        {c.path for c in resolution.changes} - native.engine_defaults,
        native.input,
        native.reading,
        release=release,
        backend=backend,
        overrides=native.overrides,
    )


def not_arbitrated(parsed: DialectInput[NativeTrtllm]) -> dict[str, str]:
    """Fields carried through untouched, each with the reason."""
    return dict(parsed.native.reading.carried)


# ---------------------------------------------------------------------------- checking
def check_trtllm(
    config: Mapping[str, Any] | str | Path | None,
    *,
    serve_args: str | None = None,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile = "trtllm-1.2",
    engine: str | Path | Mapping[str, Any] | None = None,
) -> Verdict:
    """Check a TensorRT-LLM LLM-API config (a mapping, or a YAML path) the engine's way:
    `arbiter.check` with the TensorRT-LLM dialect.

    `serve_args` is a trtllm-serve command line used beside it (the YAML wins key by key);
    `model` a Hugging Face config.json (path or dict) or a ModelSpec; `device` a catalog
    device name; `gpus` the ranks available (tensor x pipeline x context parallel sizes
    must fit in them); `profile` the release line (trtllm-1.2 by default; trtllm-1.0;
    trtllm-tensorrt); `engine` a prebuilt TensorRT engine (a folder holding its
    config.json, or that config as a mapping).

    Returns a Verdict: "accept" (the engine runs it as written), "adjust" (it runs with
    the listed changes: a default switched off, a limit clamped, Eagle run as Eagle3...)
    or "reject" (bad keys or values, or claims that conflict through the listed rules).
    Never raises for bad input."""
    return verdict_of(
        "trtllm",
        config,
        serve_args=serve_args,
        model=model,
        device=device,
        gpus=gpus,
        profile=profile,
        engine=engine,
    )


def _world_size(parsed: DialectInput[NativeTrtllm]) -> int:
    given = parsed.native.input
    size = 1
    for key in WORLD:
        value = given.get(key)
        size *= value if isinstance(value, int) and value > 0 else 1
    return size


__all__ = [
    "DEFAULT_FEATURES",
    "Verdict",
    "check_trtllm",
    "default_claims",
    "generated_batch_sizes_1_0",
    "not_arbitrated",
    "read",
    "read_engine_dir",
    "write",
]
