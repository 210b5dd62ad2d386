"""A prebuilt TensorRT engine (its folder, or its config.json) as setup claims.

"BuildConfig is readonly": the engine's `build_config` (with its `plugin_config`) and its
`pretrained_config` (model shape, mapping, quantization) fix options the runtime cannot
change. Runtime limits written beside an engine are not build limits: the LLM API clamps
or overrides them against the build (`TrtLlmArgs.validate_build_config_with_runtime_params`,
see `trtllm.runtime_limits`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from constraints.errors import SchemaError
from constraints.schema import lookup
from constraints.specs import ModelSpec, SpecError

from ...claims import AnyClaim, setup
from ...dialects._base import DialectError, load_mapping
from ...json_types import expect

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
READONLY = "BuildConfig is readonly"


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
    return engine_claims(data, where), where


def engine_claims(data: dict[str, Any], where: str) -> list[AnyClaim]:
    build = data.get("build_config") or {}
    if not isinstance(build, dict):
        raise DialectError("expected an object", key="build_config", file=where)
    fixes: dict[str, Any] = {"runtime_config.backend": "tensorrt"}
    for key, value in build.items():
        if key == "plugin_config":
            plugins = expect(value or {}, "object", key="build_config.plugin_config", file=where)
            for pkey, pvalue in plugins.items():
                path = PLUGIN_MOVED.get(pkey, f"plugin_config.{pkey}")
                if known(path):
                    fixes[path] = plugin_value(path, pvalue)
            continue
        path = f"build_config.{key}"
        if known(path) and value is not None:
            fixes[path] = normalise(path, value, key, where)
    claims: list[AnyClaim] = [setup(READONLY, checked(fixes, where), source=where)]
    pretrained = expect(
        data.get("pretrained_config") or {}, "object", key="pretrained_config", file=where
    )
    if pretrained:
        claims += _pretrained(pretrained, where)
    return claims


def build_limits(claims: list[AnyClaim]) -> dict[str, Any]:
    """The build_config values an engine's readonly claim fixes."""
    for claim in claims:
        if claim.name == READONLY:
            return {p: v for p, v in claim.fixes.items() if p.startswith("build_config.")}
    return {}


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
        "quant_config.quant_algo": quant_name(quant.get("quant_algo")),
        "quant_config.kv_cache_quant_algo": quant_name(quant.get("kv_cache_quant_algo")),
    }
    return [
        setup("model", spec.facts(), source=f"{where}: pretrained_config"),
        setup("PretrainedConfig is readonly", checked(fixes, where), source=where),
    ]


def quant_name(value: Any) -> Any:
    if isinstance(value, str) and value.upper() in QUANT_NAMES:
        return None
    return value


def known(path: str) -> bool:
    try:
        lookup(path)
        return True
    except SchemaError:
        return False


def normalise(path: str, value: Any, key: str, where: str) -> Any:
    """A value in the option's domain, or DialectError naming the key and the file."""
    if path == "kv_cache_config.max_attention_window" and isinstance(value, list):
        # one window per layer; we model one window, so the widest (the most memory)
        value = max(value) if value else None
    if path == "runtime_config.backend" and value in (None, "trt", "tensorrt"):
        value = "tensorrt"
    if path == "build_config.speculative_decoding_mode":
        # engine config.json stores the mode as its bit flag
        value = SPEC_MODE_FLAGS.get(value, value) if isinstance(value, int) else str(value).lower()
    if path in ("quant_config.quant_algo", "quant_config.kv_cache_quant_algo"):
        value = quant_name(value)
    try:
        return lookup(path).check(value)
    except SchemaError as exc:
        raise DialectError(str(exc), key=key, file=where, value=value) from None


def plugin_value(path: str, value: Any) -> Any:
    if value == "disable":
        return False if lookup(path).domain.kind == "bool" else None
    if value == "enable":
        return True
    return value


def checked(fixes: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for path, value in fixes.items():
        try:
            out[path] = lookup(path).check(value)
        except SchemaError as exc:
            raise DialectError(str(exc), key=path, file=where, value=value) from None
    return out
