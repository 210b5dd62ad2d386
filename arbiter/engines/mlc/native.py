"""MLC LLM dialect: the serving `EngineConfig` JSON -> claims, and a resolution -> MLC JSON.

Fields map onto our options (`kv_cache_page_size` -> `kv_cache_config.tokens_per_block`,
`max_num_sequence` -> `build_config.max_batch_size`, `max_total_sequence_length` ->
`kv_cache_config.max_tokens`, `prefill_chunk_size` -> `build_config.max_num_tokens`,
`gpu_memory_utilization` -> `kv_cache_config.free_gpu_memory_fraction`, ...). `mode` is
passed to `arbitrate(mode=...)` with the `mlc` profile, so unset batch, prefill chunk
and KV capacity are inferred as MLC does, from MLC's memory formulas.

A null field is unset. A field holding MLC's own default (`kv_cache_page_size` 16,
`prefix_cache_mode` radix, `prefill_mode` hybrid) is taken as a default and becomes a perf
claim that may give way with a logged reason, as MLC itself falls back from hybrid to
chunked prefill under speculative decoding (rule M11); any other value is a func claim.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.errors import SchemaError
from constraints.schema import RWKV_ARCHITECTURES, lookup

from ...check import verdict_of
from ...claims import AnyClaim, func, perf
from ...dialects._base import (
    DialectError,
    DialectInput,
    Verdict,
    load_mapping,
    logging_fallback,
)
from ...errors import ArbiterError
from ...json_types import expect_choice
from ...resolution import Resolution
from .defaults import is_default
from .record import NativeMlc

FIELDS = {
    "kv_cache_page_size": "kv_cache_config.tokens_per_block",
    "max_num_sequence": "build_config.max_batch_size",
    "max_total_sequence_length": "kv_cache_config.max_tokens",
    "max_single_sequence_length": "build_config.max_seq_len",
    "prefill_chunk_size": "build_config.max_num_tokens",
    "sliding_window_size": "kv_cache_config.max_attention_window",
    "attention_sink_size": "kv_cache_config.sink_token_length",
    "gpu_memory_utilization": "kv_cache_config.free_gpu_memory_fraction",
    "tensor_parallel_shards": "parallel_config.tensor_parallel_size",
    "pipeline_parallel_stages": "parallel_config.pipeline_parallel_size",
    "max_history_size": "runtime_config.max_history_size",
    "prefill_mode": "runtime_config.prefill_mode",
    "spec_draft_length": "build_config.max_draft_len",
}
SPECULATIVE_MODES = {
    "disable": "none",
    "small_draft": "DraftTarget",
    "eagle": "Eagle",
    "medusa": "Medusa",
}
# fields that do not shape the configuration; written back unchanged
PASSTHROUGH = (
    "model",
    "model_lib",
    "additional_models",
    "opt",
    "verbose",
    "spec_tree_width",
    "prefix_cache_max_num_recycling_seqs",
    "kv_state_kind",
)
MODES = ("local", "interactive", "server")


def read(config: str | Path | Mapping[str, Any]) -> DialectInput[NativeMlc]:
    """Claims, profile "mlc" and the mode for an MLC `EngineConfig` (a JSON path or dict)."""
    data, where = load_mapping(dict(config) if isinstance(config, Mapping) else config, "mlc")
    mode = data.get("mode") or "local"  # MLC's engine picks local when unset
    if mode not in MODES:
        raise DialectError(
            f"mode must be one of {', '.join(MODES)}", key="mode", file=where, value=mode
        )
    claims: list[AnyClaim] = []
    passthrough = {k: data[k] for k in PASSTHROUGH if k in data}
    for key, value in data.items():
        if key in PASSTHROUGH or key == "mode" or value is None:
            continue
        requirement = _requirement(key, value, where)
        if requirement is None:
            continue
        if is_default(key, requirement):  # MLC's own default (defaults.py): perf
            claims.append(
                perf(
                    f"mlc.default.{key}", requirement, fallback=logging_fallback(key), source=where
                )
            )
        else:
            claims.append(func(f"mlc.{key}", requirement, source=f"{where}: {key}"))
    return DialectInput(
        claims, profile="mlc", mode=mode, source=where, native=NativeMlc(passthrough)
    )


def refusals(config: Mapping[str, Any], architecture: str | None) -> list[str]:
    """What MLC's engine refuses on `config` for a model of `architecture`, beyond what
    the rules say: an RNN-state (RWKV) model takes no max_single_sequence_length
    (mlc-ai/mlc-llm cpp/serve/config.cc InferrableEngineConfig::InferForRNNState
    @79d603f0; the window is the model's own)."""
    length = config.get("max_single_sequence_length")
    if architecture in RWKV_ARCHITECTURES and length is not None:
        return [
            f"RNN state does not support max_single_sequence_length, while it is set to "
            f"{length} in the input EngineConfig (cpp/serve/config.cc InferForRNNState)"
        ]
    return []


def _requirement(key: str, value: Any, where: str) -> dict[str, Any] | None:
    if key in ("speculative_mode", "prefix_cache_mode"):  # an object or a list: named
        expect_choice(
            value, SPECULATIVE_MODES if key[0] == "s" else ("disable", "radix"), key=key, file=where
        )
    if key == "speculative_mode":
        if value not in SPECULATIVE_MODES:
            raise DialectError(
                f"speculative_mode must be one of {', '.join(SPECULATIVE_MODES)}",
                key=key,
                file=where,
                value=value,
            )
        return {"speculative_config.decoding_type": SPECULATIVE_MODES[value]}
    if key == "prefix_cache_mode":
        if value not in ("disable", "radix"):
            raise DialectError(
                "prefix_cache_mode must be disable or radix", key=key, file=where, value=value
            )
        return {"kv_cache_config.enable_block_reuse": value == "radix"}
    if key == "spec_draft_length" and value == 0:
        return None  # 0 is MLC's adaptive draft length: leave the length to the rules
    if key not in FIELDS:
        raise DialectError(
            "unknown EngineConfig field",
            key=key,
            file=where,
            suggestions=tuple(
                difflib.get_close_matches(
                    key, [*FIELDS, "speculative_mode", "prefix_cache_mode", "mode"], n=3
                )
            ),
        )
    path = FIELDS[key]
    if key == "gpu_memory_utilization" and isinstance(value, float):
        value = round(value, 3)
    try:
        return {path: lookup(path).check(value)}
    except SchemaError as exc:
        raise DialectError(str(exc), key=key, file=where, value=value) from None


def write(
    resolution: Resolution, mode: str | None = None, passthrough: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The solved configuration as MLC `EngineConfig` JSON (a dict), with the `passthrough`
    fields as given."""
    v = resolution.values
    out: dict[str, Any] = dict(passthrough or {})
    out["mode"] = mode or resolution.stats.get("mode") or "local"
    for key, path in FIELDS.items():
        out[key] = v[path]
    if out["attention_sink_size"] == 0 and out["sliding_window_size"] is None:
        out["attention_sink_size"] = None
    back = {ours: theirs for theirs, ours in SPECULATIVE_MODES.items()}
    decoding = v["speculative_config.decoding_type"]
    if decoding not in back:
        raise DialectError(f"MLC has no speculative mode for {decoding}", key="speculative_mode")
    out["speculative_mode"] = back[decoding]
    out["prefix_cache_mode"] = "radix" if v["kv_cache_config.enable_block_reuse"] else "disable"
    return out


def check_mlc(
    config: Mapping[str, Any] | str | Path,
    *,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str = "mlc",
    mode: str | None = None,
) -> Verdict:
    """Check an MLC `EngineConfig` (a mapping or a JSON path) the engine's way
    (`arbiter.check` with the MLC dialect), with the contract of `check_trtllm`: "accept"
    (runs as written), "adjust" (an MLC default gave way, e.g. hybrid prefill under
    speculative decoding; `changes` say which) or "reject" (bad fields or values, or
    claims that conflict through `rules`). `mode` (local, interactive, server) overrides
    the config's own. Never raises for bad input."""
    try:
        source = config if mode is None else {**_as_dict(config), "mode": mode}
    except ArbiterError as exc:
        return Verdict.of_error(exc)
    return verdict_of("mlc", source, model=model, device=device, gpus=gpus, profile=profile)


def _as_dict(config: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    data, _ = load_mapping(config, "mlc")
    return data


__all__ = ["FIELDS", "check_mlc", "read", "refusals", "write"]
