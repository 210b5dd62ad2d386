"""TensorRT-LLM dialect: `LlmArgs` keyword arguments, `extra_llm_api_options` YAML and
prebuilt engine folders -> claims; a resolution -> the same YAML shape.

Intent strength follows what users asked for (catalog section 3, rows 1, 2 and 14):

- a value the user set explicitly becomes a **func** claim named after its key
  (`llm_args.kv_cache_config.enable_block_reuse`): it holds or arbitration fails with a
  conflict naming it (fail closed);
- a feature the engine turns on by default and the user left alone becomes a **perf**
  claim `default.<feature>` whose fallback logs why it was switched off;
- a prebuilt engine's `config.json` (`build_config` with its `plugin_config`, and
  `pretrained_config`) becomes **setup** claims ("BuildConfig is readonly"): the runtime
  options must fit the engine as built.

Keys that do not shape the configuration (model path, tokenizer, ...) are ignored; any
other key we do not model is an error naming the key and the file.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.errors import SchemaError
from constraints.schema import lookup
from constraints.specs import ModelSpec, SpecError

from ..claims import AnyClaim, func, perf, setup
from ..resolution import Resolution
from ._base import DialectError, DialectInput, load_mapping, logging_fallback

TOP_LEVEL = {
    "tensor_parallel_size": "parallel_config.tensor_parallel_size",
    "pipeline_parallel_size": "parallel_config.pipeline_parallel_size",
    "dtype": "build_config.dtype",
    "max_batch_size": "build_config.max_batch_size",
    "max_num_tokens": "build_config.max_num_tokens",
    "max_seq_len": "build_config.max_seq_len",
    "max_input_len": "build_config.max_input_len",
    "max_beam_width": "build_config.max_beam_width",
    "enable_chunked_prefill": "scheduler_config.enable_chunked_context",
    "backend": "runtime_config.backend",
    "attn_backend": "runtime_config.attn_backend",
    "sampler_type": "runtime_config.sampler_type",
    "disable_overlap_scheduler": "runtime_config.disable_overlap_scheduler",
    "enable_lora": "runtime_config.enable_lora",
    "batching_type": "runtime_config.batching_type",
    "gather_generation_logits": "build_config.gather_generation_logits",
}
SECTIONS = {
    "kv_cache_config": "kv_cache_config",
    "scheduler_config": "scheduler_config",
    "quant_config": "quant_config",
    "build_config": "build_config",
}
SPECULATIVE = {
    "max_draft_len": "build_config.max_draft_len",
    "num_medusa_heads": "speculative_config.num_medusa_heads",
    "num_eagle_layers": "speculative_config.num_eagle_layers",
    "max_window_size": "speculative_config.max_window_size",
    "max_ngram_size": "speculative_config.max_ngram_size",
    "max_verification_set_size": "speculative_config.max_verification_set_size",
    "num_nextn_predict_layers": "speculative_config.num_nextn_predict_layers",
    "eagle3_one_model": "speculative_config.eagle3_one_model",
    "use_dynamic_tree": "speculative_config.use_dynamic_tree",
    "dynamic_tree_max_topK": "speculative_config.dynamic_tree_max_topk",
    "max_total_draft_tokens": "speculative_config.max_total_draft_tokens",
}
DECODING_TYPES = {
    "Medusa": ("Medusa", False),
    "Eagle": ("Eagle", False),
    "Eagle3": ("Eagle", True),
    "Lookahead": ("Lookahead", False),
    "MTP": ("MTP", False),
    "DraftTarget": ("DraftTarget", False),
}
# arguments that do not shape the engine configuration
IGNORED = {
    "model",
    "tokenizer",
    "tokenizer_mode",
    "skip_tokenizer_init",
    "trust_remote_code",
    "revision",
    "tokenizer_revision",
    "load_format",
    "enable_tqdm",
    "workspace",
    "speculative_model",
    "speculative_model_dir",
    "iter_stats_max_iterations",
    "request_stats_max_iterations",
    "gpus_per_node",
    "calib_config",
    "enable_build_cache",
    "normalize_log_probs",
}
# engine features on by default: (name, requirement, weight)
DEFAULT_FEATURES = (
    ("enable_block_reuse", {"kv_cache_config.enable_block_reuse": True}, 4),
    ("enable_partial_reuse", {"kv_cache_config.enable_partial_reuse": True}, 1),
    ("use_paged_context_fmha", {"plugin_config.use_paged_context_fmha": True}, 2),
    ("context_fmha", {"plugin_config.context_fmha": True}, 2),
)
QUANT_NAMES = {"NO_QUANT": None, "NONE": None}
# plugin options that later releases moved elsewhere (tokens_per_block: catalog 1.2, 1.4)
PLUGIN_MOVED = {"tokens_per_block": "kv_cache_config.tokens_per_block"}
SPEC_MODE_FLAGS = {
    1: "none",
    2: "draft_tokens_external",
    4: "medusa",
    8: "lookahead_decoding",
    16: "explicit_draft_tokens",
    32: "eagle",
}


def read(
    args: str | Path | Mapping[str, Any] | None = None,
    *,
    engine: str | Path | None = None,
    file: str | None = None,
    defaults: bool = True,
) -> DialectInput:
    """Claims for `LlmArgs` keyword arguments (a mapping) or an `extra_llm_api_options`
    YAML file, on top of a prebuilt `engine` folder when given. A folder passed as `args`
    (or a config.json with `build_config` and `pretrained_config`) is read as the engine."""
    claims: list[AnyClaim] = []
    set_paths: set[str] = set()
    where = "<llm_args>"
    if isinstance(args, (str, Path)) and Path(args).is_dir():
        engine, args = args, None
    if engine is not None:
        engine_claims, where = read_engine_dir(engine)
        claims += engine_claims
        set_paths |= {p for c in engine_claims for p in c.expr.paths()}
    if args is not None:
        data, where = load_mapping(dict(args) if isinstance(args, Mapping) else args, "llm_args")
        where = file or where
        if "build_config" in data and "pretrained_config" in data:
            engine_claims = _engine(data, where)
            claims += engine_claims
            set_paths |= {p for c in engine_claims for p in c.expr.paths()}
        else:
            values = _flatten(data, where)
            claims += [
                func(f"llm_args.{key}", {path: value}, source=f"{where}: {key}")
                for key, (path, value) in sorted(values.items())
            ]
            set_paths |= {path for path, _ in values.values()}
    if defaults:
        claims += default_claims(set_paths)
    return DialectInput(claims, source=where)


def default_claims(set_paths: set[str]) -> list[AnyClaim]:
    """Perf claims for engine features on by default that the user left alone."""
    return [
        perf(f"default.{name}", req, weight=w, fallback=logging_fallback(name), source="default")
        for name, req, w in DEFAULT_FEATURES
        if not set(req) & set_paths
    ]


def read_engine_dir(folder: str | Path) -> tuple[list[AnyClaim], str]:
    """A prebuilt TensorRT engine folder: its config.json fixes build and plugin options
    (setup claims), and its pretrained_config gives the model facts."""
    path = Path(folder)
    if path.is_dir():
        path = path / "config.json"
    data, where = load_mapping(path, "engine config")
    if "build_config" not in data:
        raise DialectError(
            "an engine config.json needs a build_config", key="build_config", file=where
        )
    return _engine(data, where), where


def _engine(data: dict[str, Any], where: str) -> list[AnyClaim]:
    build = data.get("build_config") or {}
    if not isinstance(build, dict):
        raise DialectError("expected an object", key="build_config", file=where)
    fixes: dict[str, Any] = {"runtime_config.backend": "tensorrt"}
    for key, value in build.items():
        if key == "plugin_config":
            for pkey, pvalue in (value or {}).items():
                path = PLUGIN_MOVED.get(pkey, f"plugin_config.{pkey}")
                if _known(path):
                    fixes[path] = _plugin_value(path, pvalue)
            continue
        path = f"build_config.{key}"
        if _known(path) and value is not None:
            fixes[path] = _normalise(path, value, key, where)
    claims: list[AnyClaim] = [
        setup("BuildConfig is readonly", _checked(fixes, where), source=where)
    ]
    pretrained = data.get("pretrained_config") or {}
    if pretrained:
        claims += _pretrained(pretrained, where)
    return claims


def _pretrained(cfg: dict[str, Any], where: str) -> list[AnyClaim]:
    hf = {
        "architectures": [cfg.get("architecture", "other")],
        "num_hidden_layers": cfg.get("num_hidden_layers"),
        "num_attention_heads": cfg.get("num_attention_heads"),
        "num_key_value_heads": cfg.get("num_key_value_heads"),
        "hidden_size": cfg.get("hidden_size"),
        "intermediate_size": cfg.get("intermediate_size"),
        "vocab_size": cfg.get("vocab_size"),
        "max_position_embeddings": cfg.get("max_position_embeddings"),
        "torch_dtype": cfg.get("dtype", "float16"),
        "head_dim": cfg.get("head_size"),
    }
    try:
        spec = ModelSpec.from_hf_config({k: v for k, v in hf.items() if v is not None})
    except SpecError as exc:
        raise DialectError(exc.reason, key=f"pretrained_config.{exc.key}", file=where) from None
    mapping = cfg.get("mapping") or {}
    quant = cfg.get("quantization") or {}
    fixes = {
        "parallel_config.tensor_parallel_size": mapping.get("tp_size", 1),
        "parallel_config.pipeline_parallel_size": mapping.get("pp_size", 1),
        "quant_config.quant_algo": _quant(quant.get("quant_algo")),
        "quant_config.kv_cache_quant_algo": _quant(quant.get("kv_cache_quant_algo")),
    }
    return [
        setup("model", spec.facts(), source=f"{where}: pretrained_config"),
        setup("PretrainedConfig is readonly", _checked(fixes, where), source=where),
    ]


def _quant(value: Any) -> Any:
    if isinstance(value, str) and value.upper() in QUANT_NAMES:
        return None
    return value


def _flatten(data: dict[str, Any], where: str) -> dict[str, tuple[str, Any]]:
    """{key as written: (option path, value)} for every argument that maps to an option."""
    out: dict[str, tuple[str, Any]] = {}
    for key, value in data.items():
        if key in IGNORED or value is None:
            continue  # a null top-level argument is the default
        if key in TOP_LEVEL:
            out[key] = (TOP_LEVEL[key], _normalise(TOP_LEVEL[key], value, key, where))
        elif key == "speculative_config":
            out.update(_speculative(value, where))
        elif key in SECTIONS:
            if not isinstance(value, dict):
                raise DialectError("expected an object", key=key, file=where, value=value)
            for sub, subvalue in value.items():
                name = f"{key}.{sub}"
                if subvalue is None and not _nullable(f"{SECTIONS[key]}.{sub}"):
                    continue  # unset; an explicit null of a nullable option is a value

                if key == "build_config" and sub == "plugin_config":
                    for pkey, pvalue in (subvalue or {}).items():
                        path = PLUGIN_MOVED.get(pkey, f"plugin_config.{pkey}")
                        _require(path, f"{name}.{pkey}", where)
                        out[f"{name}.{pkey}"] = (path, _plugin_value(path, pvalue))
                    continue
                path = f"{SECTIONS[key]}.{sub}"
                _require(path, name, where)
                out[name] = (path, _normalise(path, subvalue, name, where))
        else:
            raise DialectError(
                "unknown argument",
                key=key,
                file=where,
                suggestions=tuple(
                    difflib.get_close_matches(
                        key, [*TOP_LEVEL, *SECTIONS, "speculative_config"], n=3
                    )
                ),
            )
    return out


def _speculative(value: Any, where: str) -> dict[str, tuple[str, Any]]:
    if not isinstance(value, dict):
        raise DialectError("expected an object", key="speculative_config", file=where, value=value)
    kind = value.get("decoding_type")
    if kind not in DECODING_TYPES:
        raise DialectError(
            f"decoding_type must be one of {', '.join(DECODING_TYPES)}",
            key="speculative_config.decoding_type",
            file=where,
            value=kind,
        )
    decoding, eagle3 = DECODING_TYPES[kind]
    out = {"speculative_config.decoding_type": ("speculative_config.decoding_type", decoding)}
    if eagle3:
        out["speculative_config.eagle3"] = ("speculative_config.eagle3", True)
    for key, sub in value.items():
        if key == "decoding_type" or sub is None or key in IGNORED:
            continue
        if key not in SPECULATIVE:
            raise DialectError(
                "unknown speculative option",
                key=f"speculative_config.{key}",
                file=where,
                suggestions=tuple(difflib.get_close_matches(key, list(SPECULATIVE), n=3)),
            )
        path = SPECULATIVE[key]
        out[f"speculative_config.{key}"] = (path, _normalise(path, sub, key, where))
    return out


def _nullable(path: str) -> bool:
    try:
        return lookup(path).domain.nullable
    except SchemaError:
        return False


def _known(path: str) -> bool:
    try:
        lookup(path)
        return True
    except SchemaError:
        return False


def _require(path: str, key: str, where: str) -> None:
    try:
        lookup(path)
    except SchemaError as exc:
        raise DialectError(
            "not an option arbiter models",
            key=key,
            file=where,
            suggestions=getattr(exc, "suggestions", ()),
        ) from None


def _normalise(path: str, value: Any, key: str, where: str) -> Any:
    if path == "kv_cache_config.max_attention_window" and isinstance(value, list):
        # one window per layer; we model one window, so the widest (the most memory)
        value = max(value) if value else None
    if path == "runtime_config.backend" and value in (None, "trt", "tensorrt"):
        value = "tensorrt"
    if path == "build_config.speculative_decoding_mode":
        # engine config.json stores the mode as its bit flag
        value = SPEC_MODE_FLAGS.get(value, value) if isinstance(value, int) else str(value).lower()
    if path in ("quant_config.quant_algo", "quant_config.kv_cache_quant_algo"):
        value = _quant(value)
    try:
        return lookup(path).check(value)
    except SchemaError as exc:
        raise DialectError(str(exc), key=key, file=where, value=value) from None


def _plugin_value(path: str, value: Any) -> Any:
    if value == "disable":
        return False if lookup(path).domain.kind == "bool" else None
    if value == "enable":
        return True
    return value


def _checked(fixes: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for path, value in fixes.items():
        try:
            out[path] = lookup(path).check(value)
        except SchemaError as exc:
            raise DialectError(str(exc), key=path, file=where, value=value) from None
    return out


# ---------------------------------------------------------------------------- writing
def write(resolution: Resolution) -> dict[str, Any]:
    """The solved configuration as `extra_llm_api_options` YAML (a dict)."""
    v = resolution.values
    out: dict[str, Any] = {}
    for key, path in TOP_LEVEL.items():
        if key == "gather_generation_logits":
            continue
        out[key] = v[path]
    for section in ("kv_cache_config", "scheduler_config", "quant_config"):
        out[section] = {
            p.split(".", 1)[1]: v[p]
            for p in v
            if p.startswith(section + ".")
            and not (section == "scheduler_config" and p.endswith("enable_chunked_context"))
        }
    build = {p.split(".", 1)[1]: v[p] for p in v if p.startswith("build_config.")}
    for key in (
        "max_batch_size",
        "max_num_tokens",
        "max_seq_len",
        "max_input_len",
        "max_beam_width",
        "dtype",
    ):
        build.pop(key, None)
    build["plugin_config"] = {p.split(".", 1)[1]: v[p] for p in v if p.startswith("plugin_config.")}
    out["build_config"] = build
    decoding = v["speculative_config.decoding_type"]
    if decoding != "none":
        spec: dict[str, Any] = {
            "decoding_type": "Eagle3"
            if decoding == "Eagle" and v["speculative_config.eagle3"]
            else decoding,
            "max_draft_len": v["build_config.max_draft_len"],
        }
        for key, path in SPECULATIVE.items():
            if key != "max_draft_len":
                spec[key] = v[path]
        out["speculative_config"] = spec
    return out


__all__ = ["DEFAULT_FEATURES", "read", "read_engine_dir", "write"]
