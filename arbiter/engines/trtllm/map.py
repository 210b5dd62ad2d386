"""Which TensorRT-LLM LLM-API fields are arbiter options, and the way back.

`reading()` splits a validated config into the values that become claims (field ->
option path) and the fields carried through untouched ("not arbitrated"), with the
reason for each. `write_back()` puts a resolution's values into the same fields of the
user's own config: every other field stays exactly as written, and a field the solve
changed is only added where it is a field of the chosen release, backend and decoding
type (so no Medusa field appears in an Eagle3 config).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constraints.errors import SchemaError
from constraints.paths import SPECULATIVE_CONFIG
from constraints.schema import lookup

from ...dialects._base import DialectError
from .fields import catalogue, union_class
from .prebuilt import PLUGIN_MOVED, known, plugin_value, quant_name

P = "parallel_config."
TOP = {
    "tensor_parallel_size": P + "tensor_parallel_size",
    "pipeline_parallel_size": P + "pipeline_parallel_size",
    "moe_expert_parallel_size": P + "moe_expert_parallel_size",
    "moe_tensor_parallel_size": P + "moe_tensor_parallel_size",
    "moe_cluster_parallel_size": P + "moe_cluster_parallel_size",
    "enable_attention_dp": P + "enable_attention_dp",
    "dtype": "build_config.dtype",
    "max_batch_size": "build_config.max_batch_size",
    "max_num_tokens": "build_config.max_num_tokens",
    "max_seq_len": "build_config.max_seq_len",
    "max_input_len": "build_config.max_input_len",
    "max_beam_width": "build_config.max_beam_width",
    "gather_generation_logits": "build_config.gather_generation_logits",
    "enable_chunked_prefill": "scheduler_config.enable_chunked_context",
    "backend": "runtime_config.backend",
    "attn_backend": "runtime_config.attn_backend",
    "sampler_type": "runtime_config.sampler_type",
    "disable_overlap_scheduler": "runtime_config.disable_overlap_scheduler",
    "enable_lora": "runtime_config.enable_lora",
    "batching_type": "runtime_config.batching_type",
    "fail_fast_on_attention_window_too_large": (
        "memory_policy.fail_fast_on_attention_window_too_large"
    ),
}
NESTED = {
    "kv_cache_config": {
        name: f"kv_cache_config.{name}"
        for name in (
            "enable_block_reuse",
            "enable_partial_reuse",
            "copy_on_partial_reuse",
            "tokens_per_block",
            "max_tokens",
            "free_gpu_memory_fraction",
            "max_attention_window",
            "sink_token_length",
            "host_cache_size",
            "onboard_blocks",
            "dtype",
            "cross_kv_cache_fraction",
        )
    },
    "scheduler_config": {
        "capacity_scheduler_policy": "scheduler_config.capacity_scheduler_policy",
        "context_chunking_policy": "scheduler_config.context_chunking_policy",
    },
    "quant_config": {
        "quant_algo": "quant_config.quant_algo",
        "kv_cache_quant_algo": "quant_config.kv_cache_quant_algo",
    },
    "cuda_graph_config": {
        "max_batch_size": "cuda_graph_config.max_batch_size",
        "enable_padding": "cuda_graph_config.enable_padding",
    },
    "moe_config": {"backend": "moe_config.backend"},
    "attention_dp_config": {
        name: f"attention_dp_config.{name}"
        for name in ("enable_balance", "timeout_iters", "batching_wait_iters")
    },
}
SPEC_FIELDS = {
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
    "max_matching_ngram_size": "speculative_config.max_matching_ngram_size",
}
# the engine's decoding_type -> (speculative_config.decoding_type, EAGLE-3 heads)
DECODING = {
    "Medusa": ("Medusa", False),
    "Eagle": ("Eagle", False),
    "Eagle3": ("Eagle", True),
    "Lookahead": ("Lookahead", False),
    "MTP": ("MTP", False),
    "DraftTarget": ("DraftTarget", False),
    "Draft_Target": ("DraftTarget", False),
    "NGram": ("NGram", False),
    "UserProvided": ("UserProvided", False),
    "User_Provided": ("UserProvided", False),
    "PARD": ("PARD", False),
    "AUTO": ("AUTO", False),
    "SaveState": ("SaveState", False),
}
TYPE = SPECULATIVE_CONFIG.decoding_type
EAGLE3 = SPECULATIVE_CONFIG.eagle3
TOTAL = SPECULATIVE_CONFIG.max_total_draft_tokens
# the sizes of the Mapping's world (tensorrt_llm/mapping.py: tp x pp x cp ranks)
WORLD = ("tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size")
# the sizes init_build_config copies into a BuildConfig it creates (TrtLlmArgs)
BUILD_SIZES = ("max_batch_size", "max_num_tokens", "max_seq_len", "max_beam_width", "max_input_len")
ABSENT_MOE = (None, -1)  # the engine's "derive it" for the MoE parallel sizes
# fields carried through with a reason of their own (the rest: "no rule reads it")
CARRIED_WHY = {
    "cache_transceiver_config": (
        "disaggregated serving's KV transfer (backend DEFAULT/UCX/NIXL/MOONCAKE/MPI, buffer "
        "size, timeouts): its values are checked against the field list, but whether a "
        "transport works depends on the context and generation servers launched together "
        "and the transfer libraries installed, which are no facts of one config"
    ),
}


@dataclass
class Reading:
    """A validated config split into claims and fields carried through untouched."""

    values: dict[str, tuple[str, Any]] = field(default_factory=dict)  # key -> (path, value)
    carried: dict[str, str] = field(default_factory=dict)  # key -> why not arbitrated
    notes: list[str] = field(default_factory=list)  # what the engine adjusts on its own
    # what the engine only warns about: the config runs as written
    warnings: list[str] = field(default_factory=list)
    # values the engine derives from what was given: claims, never written back
    derived: dict[str, tuple[str, Any]] = field(default_factory=dict)


def reading(validated: Mapping[str, Any], *, release: str, backend: str) -> Reading:
    """Split `validated` (the output of `trtllm_fields.validate`) into options and the rest."""
    out = Reading()
    for key, value in validated.items():
        if key == "speculative_config":
            _speculative(out, value, release, backend)
        elif key in TOP:
            if value is None or (key.startswith("moe_") and value in ABSENT_MOE):
                continue  # the engine's default
            _option(out, key, TOP[key], value)
        elif key in NESTED or key == "build_config":
            _section(out, key, value, backend)
        else:
            out.carried[key] = CARRIED_WHY.get(key, "no rule reads it")
    return out


def _section(out: Reading, key: str, value: Any, backend: str) -> None:
    if key == "cuda_graph_config":
        _option(out, key, "cuda_graph_config.enabled", value is not None)
    if not isinstance(value, Mapping):
        return
    for sub, subvalue in value.items():
        dotted = f"{key}.{sub}"
        if key == "cuda_graph_config" and sub == "batch_sizes":
            if subvalue:
                _option(out, dotted, "cuda_graph_config.batch_sizes_max", max(subvalue))
            out.carried[dotted] = "written back as given; its largest size is arbitrated"
        elif key == "moe_config" and sub == "load_balancer":
            _option(out, dotted, "moe_config.load_balancer", subvalue is not None)
            out.carried[dotted] = "written back as given; only its presence is arbitrated"
        elif key == "build_config":
            _build(out, sub, subvalue)
        elif sub in NESTED[key]:
            if subvalue is None and not _nullable(NESTED[key][sub]):
                continue  # unset: the engine's default
            _option(out, dotted, NESTED[key][sub], subvalue)
        else:
            out.carried[dotted] = "no rule reads it"


def _build(out: Reading, sub: str, value: Any) -> None:
    if sub == "plugin_config" and isinstance(value, Mapping):
        for pkey, pvalue in value.items():
            path = PLUGIN_MOVED.get(pkey, f"plugin_config.{pkey}")
            dotted = f"build_config.plugin_config.{pkey}"
            if known(path):
                _option(out, dotted, path, plugin_value(path, pvalue))
            else:
                out.carried[dotted] = "no rule reads it"
        return
    path = f"build_config.{sub}"
    if known(path) and value is not None:
        _option(out, f"build_config.{sub}", path, value)
    else:
        out.carried[f"build_config.{sub}"] = "no rule reads it"


def _speculative(out: Reading, value: Any, release: str, backend: str) -> None:
    if value is None:
        return
    given = value["decoding_type"]
    decoding, eagle3 = DECODING[given]
    if decoding == "Eagle" and backend == "pytorch" and not eagle3:
        eagle3 = True
        # Eagle is the Eagle3 path on PyTorch: the engine builds the arguments and only
        # warns that EAGLE v1/v2 draft checkpoints do not fit it (test_llm_args.py,
        # test_decoding_type_eagle_warns_on_pytorch_backend @0050262c75e0)
        out.warnings.append(
            "speculative_config.decoding_type Eagle runs as Eagle3 on the PyTorch backend"
        )
    _option(out, "speculative_config.decoding_type", TYPE, decoding)
    if decoding == "Eagle":
        out.values["speculative_config.eagle3"] = (EAGLE3, eagle3)
    for key, sub in value.items():
        dotted = f"speculative_config.{key}"
        if key == "decoding_type" or sub is None:
            continue
        if key in SPEC_FIELDS:
            _option(out, dotted, SPEC_FIELDS[key], sub)
        else:
            out.carried[dotted] = "no rule reads it"
    if backend == "pytorch":
        if decoding == "Eagle" and value.get("eagle_choices") is not None:
            _static_tree(out, value, release, given)
        else:
            _chain_total(out, value, release, given)


def _static_tree(out: Reading, value: Mapping[str, Any], release: str, given: str) -> None:
    """A static EAGLE tree (eagle_choices) holds one draft token per choice: from 1.2 on,
    EagleDecodingConfig.validate_eagle_config sets max_total_draft_tokens to the number of
    (distinct) choices, which the PyTorch KV cache manager counts per step, and resets
    max_draft_len to the tree's depth with a warning (llm_args.py, the 139,423-character
    version). 1.0's field list has no max_total_draft_tokens: nothing to derive there."""
    cls = union_class(release, "speculative_config", given)
    choices = _choices(value.get("eagle_choices"))
    if cls is None or "max_total_draft_tokens" not in catalogue(release).fields(cls):
        return
    if not choices or value.get("use_dynamic_tree"):
        return  # no tree, or one the engine refuses with it (trtllm_checks)
    total = len({tuple(c) for c in choices})
    depth = max(len(c) for c in choices)
    out.derived["speculative_config.max_total_draft_tokens"] = (TOTAL, total)
    out.carried["speculative_config.eagle_choices"] = (
        f"the tree itself is carried; its {total} draft tokens (max_total_draft_tokens) and "
        f"depth {depth} (max_draft_len) are counted"
    )
    if "speculative_config.max_total_draft_tokens" in out.values:
        out.values.pop("speculative_config.max_total_draft_tokens")
        out.carried["speculative_config.max_total_draft_tokens"] = (
            "overwritten by the engine with the number of eagle_choices"
        )
    draft = out.values.get("speculative_config.max_draft_len")
    if draft is not None and draft[1] not in (None, 0) and draft[1] != depth:
        out.values["speculative_config.max_draft_len"] = (draft[0], depth)
        out.notes.append(
            f"speculative_config.max_draft_len: {draft[1]} -> {depth} (EagleDecodingConfig "
            "resets it to the depth of eagle_choices, with a warning)"
        )


def _chain_total(out: Reading, value: Mapping[str, Any], release: str, given: str) -> None:
    """Every 1.2 decoding config but a static EAGLE tree and SaveState drafts a chain:
    its validator sets max_total_draft_tokens to max_draft_len (MTP: to
    num_nextn_predict_layers, which it also makes max_draft_len), whatever was given.
    EagleDecodingConfig.validate_eagle_config does it first thing, so a dynamic tree's
    given total is overwritten before the dynamic-tree checks read it (llm_args.py, the
    139,423-character version: validate_eagle_config, validate_ngram_config,
    validate_draft_target_config, the set_max_total_draft_tokens validators of MTP,
    Medusa, UserProvided, PARD and AUTO). The KV cache manager counts that total per step,
    so a given value that differs is an adjustment, written back as the engine holds it.
    (Upstream main later derives a dynamic tree's total as dynamic_tree_max_topK x
    max_draft_len when none is given and bounds a given one by it, the
    256,191-character version; no release arbiter has a profile for does.)"""
    cls = union_class(release, "speculative_config", given)
    if cls is None or cls == "SaveHiddenStatesDecodingConfig":
        return  # SaveState keeps its own total (a field default of 1)
    if "max_total_draft_tokens" not in catalogue(release).fields(cls):
        return  # 1.0: no such field
    key = "speculative_config.max_total_draft_tokens"
    draft = (
        value.get("num_nextn_predict_layers", 1) if given == "MTP" else value.get("max_draft_len")
    )
    source = "num_nextn_predict_layers" if given == "MTP" else "max_draft_len"
    total = value.get("max_total_draft_tokens")
    if not isinstance(draft, int) or isinstance(draft, bool) or draft <= 0:
        if total is not None:  # the engine refuses it, or replaces the total with nothing
            out.values.pop(key, None)
            out.carried[key] = f"overwritten by the engine with {source}"
        return
    if total is None:
        out.derived[key] = (TOTAL, draft)
        return
    out.values[key] = (TOTAL, draft)
    if total != draft:
        if cls in ("EagleDecodingConfig", "Eagle3DecodingConfig"):
            tree = "dynamic tree" if value.get("use_dynamic_tree") else "linear tree"
            why = f"a {tree}: EagleDecodingConfig.validate_eagle_config"
        else:
            why = f"{cls} drafts a chain and"
        out.notes.append(f"{key}: {total} -> {draft} ({why} sets it to {source})")


def _choices(raw: Any) -> list[list[int]] | None:
    """eagle_choices as the engine reads it: a list of lists, or a string holding one
    (validate_eagle_choices parses it with ast.literal_eval); anything else: None."""
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw.replace(" ", ""))
        except (ValueError, SyntaxError):
            return None
    if not isinstance(raw, list) or not all(
        isinstance(c, list) and c and all(isinstance(i, int) for i in c) for c in raw
    ):
        return None
    return raw


def _option(out: Reading, key: str, path: str, value: Any) -> None:
    """A claim on `path`, or, for an engine value outside arbiter's domain, a field carried
    through with the reason."""
    if path == "kv_cache_config.max_attention_window" and isinstance(value, list):
        value = max(value) if value else None  # one window per layer: the widest
    if path in ("quant_config.quant_algo", "quant_config.kv_cache_quant_algo"):
        value = quant_name(value)
    if path == "runtime_config.backend" and value == "trt":
        value = "tensorrt"
    spec = lookup(path)
    try:
        out.values[key] = (path, spec.check(value))
    except SchemaError as exc:
        if spec.domain.kind != "enum":
            raise DialectError(str(exc), key=key, value=value) from None
        # a name the engine takes that arbiter's list lacks: no rule can judge it
        out.carried[key] = f"value {value!r} is not one arbiter models ({spec.domain.describe()})"


def _nullable(path: str) -> bool:
    return lookup(path).domain.nullable


# ---------------------------------------------------------------------------- writing
def write_back(
    values: Mapping[str, Any],
    changed: set[str],
    given: Mapping[str, Any],
    read: Reading,
    *,
    release: str,
    backend: str,
    overrides: Mapping[str, Any] = {},  # noqa: B006 (never mutated)
) -> dict[str, Any]:
    """The user's config with the solved values in their own fields."""
    out: dict[str, Any] = copy.deepcopy(dict(given))
    for key, (path, _) in read.values.items():
        if path == EAGLE3 or path.startswith("cuda_graph_config.batch"):
            continue
        if path == "moe_config.load_balancer":
            continue
        _set(out, key, _engine_value(key, path, values[path], given))
    for path in sorted(changed):
        key = field_for(path, release, backend)
        if key and key not in read.values and not _covered(key, read):
            _set(out, key, _engine_value(key, path, values[path], given))
    decoding = values.get(TYPE, "none")
    if "speculative_config" not in given and decoding != "none":
        out["speculative_config"] = _new_speculative(values, release, backend)
    for key, value in overrides.items():
        _set(out, key, value)
    if "build_config" not in given and isinstance(out.get("build_config"), dict):
        # a build_config the write-back adds must build what the top-level sizes built
        # before: without one, TrtLlmArgs.init_build_config takes them as build limits;
        # with one, the build limits are its own (BuildConfig's defaults where left out)
        for key in BUILD_SIZES:
            if key in out:
                out["build_config"].setdefault(key, out[key])
    return out


def _engine_value(key: str, path: str, value: Any, given: Mapping[str, Any]) -> Any:
    original = _get(given, key)
    if path == "cuda_graph_config.enabled":
        if not value:
            return None
        return original if isinstance(original, Mapping) else {}
    if path == "kv_cache_config.max_attention_window" and value is not None:
        if isinstance(original, list) and original and max(original) == value:
            return original
        return [value]
    if path == TYPE and original is not None and DECODING.get(original, (None,))[0] == value:
        return original
    return value


def option_fields() -> dict[str, str]:
    """Option path -> the LLM API field (dotted into its section) that sets it, over
    every release and backend (`field_for` narrows to one argument class)."""
    out = {path: key for key, path in TOP.items()}
    for section, table in NESTED.items():
        for sub, path in table.items():
            out.setdefault(path, f"{section}.{sub}")
    for key, path in SPEC_FIELDS.items():
        out.setdefault(path, f"speculative_config.{key}")
    out.setdefault(TYPE, "speculative_config.decoding_type")
    return out


def field_for(path: str, release: str, backend: str) -> str | None:
    """The field of the backend's argument class that holds option `path`, if any."""
    cat = catalogue(release)
    fields = cat.fields(cat.args_class(backend))
    for key, option in TOP.items():
        if option == path and key in fields:
            return key
    for section, table in NESTED.items():
        for sub, option in table.items():
            spec = fields.get(section)
            if option == path and spec is not None and cat.is_model(spec.base_type):
                if sub in cat.fields(spec.base_type):
                    return f"{section}.{sub}"
    if backend == "tensorrt" and "build_config" in fields:
        if path.startswith("build_config."):
            return path
        if path.startswith("plugin_config."):
            return "build_config." + path
    return None


def _covered(key: str, read: Reading) -> bool:
    """A field the user wrote (or its parent): it is written back as given."""
    parts = key.split(".")
    return any(".".join(parts[:i]) in read.carried for i in range(1, len(parts) + 1))


def _new_speculative(values: Mapping[str, Any], release: str, backend: str) -> dict[str, Any]:
    decoding = values[TYPE]
    name = "Eagle3" if decoding == "Eagle" and values.get(EAGLE3) else decoding
    if union_class(release, "speculative_config", name) is None:
        name = next(
            k
            for k, (d, _) in DECODING.items()
            if d == decoding and union_class(release, "speculative_config", k)
        )
    out: dict[str, Any] = {"decoding_type": name}
    cls = union_class(release, "speculative_config", name)
    fields = catalogue(release).fields(cls) if cls else {}
    for key, path in SPEC_FIELDS.items():
        if key in fields and (key == "max_draft_len" or values[path] != lookup(path).default):
            out[key] = values[path]
    return out


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


__all__ = [
    "field_for",
    "option_fields",
    "DECODING",
    "NESTED",
    "Reading",
    "SPEC_FIELDS",
    "TOP",
    "reading",
    "write_back",
]
