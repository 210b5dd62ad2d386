"""trtllm-serve's command line beside an `extra_llm_api_options` YAML.

The option names and how they combine are facts read from
`tensorrt_llm/commands/serve.py` (NVIDIA/TensorRT-LLM, stored version 00209af1):
`serve()` turns its options into LLM-API arguments (`get_llm_args`), then merges the
YAML given by `--config` / `--extra_llm_api_options` over them
(`update_llm_args_with_extra_dict`): **a key in the YAML wins** over the same option on
the command line. From 1.2 on, `kv_cache_config` is merged key by key (the YAML's
`kv_cache_config` keeps `--kv_cache_free_gpu_memory_fraction`); in 1.0 the YAML's
`kv_cache_config` replaces the command line's whole.

Only the options actually written on the command line become arguments here, so that an
option left to its default is not mistaken for the user's wish.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...dialects._base import InputProblems, KeyProblem

# option -> (LLM-API argument, type). "flag" takes no value.
LLM_OPTIONS: dict[str, tuple[str, str]] = {
    "--tokenizer": ("tokenizer", "str"),
    "--custom_tokenizer": ("custom_tokenizer", "str"),
    "--backend": ("backend", "backend"),
    "--max_beam_width": ("max_beam_width", "int"),
    "--max_batch_size": ("max_batch_size", "int"),
    "--max_num_tokens": ("max_num_tokens", "int"),
    "--max_seq_len": ("max_seq_len", "int"),
    "--tensor_parallel_size": ("tensor_parallel_size", "int"),
    "--tp_size": ("tensor_parallel_size", "int"),
    "--pipeline_parallel_size": ("pipeline_parallel_size", "int"),
    "--pp_size": ("pipeline_parallel_size", "int"),
    "--context_parallel_size": ("context_parallel_size", "int"),
    "--cp_size": ("context_parallel_size", "int"),
    "--moe_expert_parallel_size": ("moe_expert_parallel_size", "int"),
    "--ep_size": ("moe_expert_parallel_size", "int"),
    "--moe_cluster_parallel_size": ("moe_cluster_parallel_size", "int"),
    "--cluster_size": ("moe_cluster_parallel_size", "int"),
    "--gpus_per_node": ("gpus_per_node", "int"),
    "--free_gpu_memory_fraction": ("kv_cache_config.free_gpu_memory_fraction", "float"),
    "--kv_cache_free_gpu_memory_fraction": ("kv_cache_config.free_gpu_memory_fraction", "float"),
    "--num_postprocess_workers": ("num_postprocess_workers", "int"),
    "--trust_remote_code": ("trust_remote_code", "flag"),
    "--revision": ("revision", "str"),
    "--reasoning_parser": ("reasoning_parser", "str"),
    "--fail_fast_on_attention_window_too_large": (
        "fail_fast_on_attention_window_too_large",
        "flag",
    ),
    "--otlp_traces_endpoint": ("otlp_traces_endpoint", "str"),
    "--enable_chunked_prefill": ("enable_chunked_prefill", "flag"),
}
# options of the server itself: accepted, not LLM-API arguments
SERVER_OPTIONS = {
    "--host": "str",
    "--port": "int",
    "--log_level": "str",
    "--custom_module_dirs": "str",
    "--tool_parser": "str",
    "--metadata_server_config_file": "str",
    "--server_role": "str",
    "--disagg_cluster_uri": "str",
    "--media_io_kwargs": "str",
    "--chat_template": "str",
}
CONFIG_OPTIONS = ("--config", "--extra_llm_api_options")
BACKENDS = {"pytorch": "pytorch", "tensorrt": "tensorrt", "trt": "tensorrt"}
COMMAND_WORDS = ("trtllm-serve", "serve")


class ServeArgsError(InputProblems):
    """Every problem of a trtllm-serve command line, named at once."""

    def __init__(self, problems: list[KeyProblem]):
        super().__init__(
            problems,
            file="--serve-args",
            reason=f"{len(problems)} problem(s) in the trtllm-serve arguments",
        )


@dataclass
class ServeArgs:
    """A parsed trtllm-serve command line."""

    args: dict[str, Any] = field(default_factory=dict)  # nested LLM-API arguments
    model: str | None = None
    config: str | None = None  # the YAML named by --config / --extra_llm_api_options
    server: dict[str, Any] = field(default_factory=dict)


def parse(text: str) -> ServeArgs:
    """The LLM-API arguments a trtllm-serve command line sets (only those written)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ServeArgsError(
            [KeyProblem("--serve-args", f"cannot split: {exc}", text, show_value=False)]
        ) from None
    while words and words[0] in COMMAND_WORDS:
        words = words[1:]
    out = ServeArgs()
    problems: list[KeyProblem] = []
    known = [*LLM_OPTIONS, *SERVER_OPTIONS, *CONFIG_OPTIONS]
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--"):
            if out.model is None:
                out.model = word
            else:
                problems.append(
                    KeyProblem(
                        word, "a second positional argument (MODEL is one)", show_value=False
                    )
                )
            continue
        name, eq, inline = word.partition("=")
        kind = LLM_OPTIONS.get(name, (None, SERVER_OPTIONS.get(name)))[1]
        if name in CONFIG_OPTIONS:
            kind = "str"
        if kind is None:
            problems.append(
                KeyProblem(
                    name,
                    "not a trtllm-serve option",
                    suggestions=tuple(difflib.get_close_matches(name, known, n=3)),
                    show_value=False,
                )
            )
            if not eq and i < len(words) and not words[i].startswith("--"):
                i += 1  # skip its value too
            continue
        if kind == "flag":
            value: Any = True
        elif eq:
            value = inline
        elif i < len(words):
            value = words[i]
            i += 1
        else:
            problems.append(KeyProblem(name, "needs a value", show_value=False))
            continue
        try:
            value = _convert(kind, value)
        except ValueError as exc:
            problems.append(KeyProblem(name, str(exc), value, show_value=False))
            continue
        if name in CONFIG_OPTIONS:
            out.config = value
        elif name in SERVER_OPTIONS:
            out.server[name[2:]] = value
        else:
            _put(out.args, LLM_OPTIONS[name][0], value)
    if problems:
        raise ServeArgsError(problems)
    return out


def _convert(kind: str, value: str) -> Any:
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a valid integer") from None
    if kind == "float":
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a valid float") from None
    if kind == "backend":
        if value not in BACKENDS and value != "_autodeploy":
            raise ValueError(f"{value!r} is not one of pytorch, tensorrt, trt, _autodeploy")
        return BACKENDS.get(value, value)
    return value


def _put(args: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        args = args.setdefault(part, {})
    args[leaf] = value


def merge(cli: Mapping[str, Any], yaml_args: Mapping[str, Any], release: str) -> dict[str, Any]:
    """The LLM-API arguments trtllm-serve ends up with: the YAML wins key by key, and from
    1.2 on `kv_cache_config` is merged field by field."""
    out = {**cli, **yaml_args}
    deep = tuple(int(x) for x in release.split(".")) >= (1, 2)
    if deep and isinstance(cli.get("kv_cache_config"), Mapping):
        if isinstance(yaml_args.get("kv_cache_config"), Mapping):
            out["kv_cache_config"] = {**cli["kv_cache_config"], **yaml_args["kv_cache_config"]}
    return out


__all__ = ["LLM_OPTIONS", "ServeArgs", "ServeArgsError", "merge", "parse"]
