"""SGLang 0.5.16's configuration stage for `benchmarks/oracle_sglang.py`, on a CPU machine.

SGLang 0.5.16 has no `resolve_once()`: `ServerArgs.__post_init__` (python/sglang/srt/
server_args.py, v0.5.16) runs the ordered `_handle_*` steps and applies the declared
overrides (`arg_groups/overrides.py materialize_declarations`) before it returns, so the
resolved configuration is the fields of the constructed `ServerArgs`. The path here:
SGLang's `--config` merger (`server_args_config_parser.ConfigArgumentMerger`, at the
package's top level in 0.5.16), its argparse parser, `ServerArgs.from_cli_args` (which
constructs, hence resolves), then `check_server_args()` as the launcher runs it next.
The values the user wrote are read from the parsed namespace, before construction.

The CPU patches are those of `oracle_sglang.py`'s docstring, in 0.5.16's shape (each one
replaces a hardware probe, not a rule):

- patches 1-2 (torchvision, GPU memory) and 8 (the prefill graphs' default backend,
  `model_executor/cuda_graph_config.py default_prefill_backend`, also in 0.5.16) are
  shared;
- patch 3: 0.5.16 has no platform context to answer its SM probes; `server_args.py` and
  `arg_groups/*.py` import them by name from `utils/common.py` (`is_cuda`,
  `is_sm90_supported`, `is_sm100_supported`, `is_sm120_supported`,
  `is_blackwell_supported`, `is_hopper_with_cuda_12_3`, `is_flashinfer_available`,
  `get_device_sm`, `get_device_capability`), so those names are rebound in every imported
  `sglang.srt` module that holds them, answering for the chosen GPU (CUDA >= 12.8,
  flashinfer installed, as the wheel requires);
- patch 6 (the head split): 0.5.16's attention TP width is
  `layers/dp_attention.py compute_dp_attention_world_info` (tp / dp under
  `--enable-dp-attention`, over the attention CP size), installed as the
  `ParallelContext` overrides `tp_size` and `attn_tp_size`;
- patch 7 (running requests from a KV pool): `KVCacheConfigurator.resolve_max_num_reqs`
  reads `server_args.max_running_requests` and `ps.attn_dp_size` in 0.5.16;
- patch 9 (stage "kv-cache", after the head split): the model runner's KV dtype
  resolution, `mem_cache/kv_cache_dtype.py configure_kv_cache_dtype`, which refuses the
  parser's `fp4_e2m1` ("deprecated"); batches recorded before it write no fp4_e2m1.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import io
import sys
import tempfile
import types
from typing import Any

import yaml

# the running oracle module (`python benchmarks/oracle_sglang.py` runs it as __main__)
_oracle = sys.modules.get("oracle_sglang") or sys.modules["__main__"]

# utils/common.py probes 0.5.16's resolution reads, by name -> answer for (major, minor)
_PROBES = {
    "is_cuda": lambda cap: True,
    "is_sm90_supported": lambda cap: cap[0] == 9,
    "is_sm100_supported": lambda cap: cap[0] == 10,
    "is_sm120_supported": lambda cap: cap[0] == 12,
    "is_blackwell_supported": lambda cap: cap[0] in (10, 11, 12),
    "is_blackwell": lambda cap: cap[0] in (10, 11, 12),
    "is_hopper_with_cuda_12_3": lambda cap: cap[0] == 9,
    "is_flashinfer_available": lambda cap: True,
}


def is_0516() -> bool:
    """Whether the imported SGLang resolves in `__post_init__` (no `resolve_once`)."""
    from sglang.srt.server_args import ServerArgs

    return not hasattr(ServerArgs, "resolve_once")


def install_platform_probes(capability: tuple[int, int]) -> None:
    """Patch 3 for 0.5.16: rebind the probes in the modules that imported them. Every
    `arg_groups` module is imported first: `ServerArgs.__post_init__` imports some of them
    (overrides.py among them) only when it runs, which would leave them unpatched for the
    first argument set of a batch."""
    import importlib
    import pkgutil

    import sglang.srt.arg_groups as groups

    for info in pkgutil.iter_modules(groups.__path__):
        importlib.import_module(f"{groups.__name__}.{info.name}")
    answers: dict[str, Any] = {
        name: (lambda value: lambda *a, **k: value)(probe(capability))
        for name, probe in _PROBES.items()
    }
    answers["get_device_sm"] = lambda *a, **k: capability[0] * 10 + capability[1]
    answers["get_device_capability"] = lambda *a, **k: capability
    for mod_name, mod in list(sys.modules.items()):
        if not (
            mod_name == "sglang.srt.server_args" or mod_name.startswith("sglang.srt.arg_groups")
        ):
            continue
        for name, answer in answers.items():
            if callable(getattr(mod, name, None)):
                setattr(mod, name, answer)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _attn_widths(args: Any) -> dict[str, int]:
    from sglang.srt.layers.dp_attention import compute_dp_attention_world_info

    tp = int(args.tp_size or 1)
    _, attn_tp, _, _ = compute_dp_attention_world_info(
        args.enable_dp_attention, 0, tp, int(args.dp_size or 1), int(args.attn_cp_size or 1)
    )
    return {"tp_size": tp, "attn_tp_size": int(attn_tp)}


def check_heads(args: Any, model: str | None) -> dict[str, Any] | None:
    """Patch 6 for 0.5.16: the model's attention class built with the resolved widths."""
    import importlib
    import inspect

    from sglang.srt.runtime_context import get_parallel

    config = _oracle.MODELS[model or "llama-3.1-8b"]
    if config["architectures"][0] not in _oracle.ATTENTION_CLASSES:
        return None
    module_name, class_name = _oracle.ATTENTION_CLASSES[config["architectures"][0]]
    module = importlib.import_module(f"sglang.srt.models.{module_name}")
    module.QKVParallelLinear = _oracle._sentinel_layer
    widths = _attn_widths(args)
    try:
        with get_parallel().override(**widths):
            cls = getattr(module, class_name)
            kwargs: dict[str, Any] = {
                "hidden_size": config["hidden_size"],
                "num_heads": config["num_attention_heads"],
                "num_kv_heads": config["num_key_value_heads"],
            }
            if "config" in inspect.signature(cls.__init__).parameters:
                kwargs["config"] = types.SimpleNamespace(**config)
            cls(**kwargs)
    except _oracle._HeadsSplit:
        return None
    except AssertionError:
        return {
            "verdict": "reject",
            "stage": "model",
            "message": (
                f"{class_name}.__init__ asserts the heads split: "
                f"{config['num_attention_heads']} heads, {config['num_key_value_heads']} KV "
                f"heads over {widths}"
            ),
        }
    raise RuntimeError(f"{class_name} built without its projection layer")


def check_kv_cache_dtype(args: Any) -> dict[str, Any] | None:
    """Patch 9 for 0.5.16 (stage "kv-cache"): the model runner's KV dtype resolution
    (`mem_cache/kv_cache_dtype.py configure_kv_cache_dtype`), which refuses a dtype the
    parser offers (fp4_e2m1: "deprecated"), run with a bare module for the model (no
    quantization config: an `auto` dtype is the model's) and bf16 weights."""
    import torch
    from sglang.srt.mem_cache.kv_cache_dtype import configure_kv_cache_dtype

    try:
        configure_kv_cache_dtype(
            server_args_kv_cache_dtype=args.kv_cache_dtype,
            model=torch.nn.Module(),
            model_dtype=torch.bfloat16,
            is_draft_worker=False,
            is_dflash=False,
            speculative_draft_attention_backend=None,
        )
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "kv-cache",
            "message": _oracle.first_line(f"{type(exc).__name__}: {exc}"),
        }
    return None


def running_requests(args: Any, model: str | None, pool_tokens: int) -> dict[str, Any]:
    """Patch 7 for 0.5.16: `resolve_max_num_reqs` on a KV pool of `pool_tokens` tokens."""
    from sglang.srt.mem_cache import kv_cache_configurator as kvc

    requested = args.max_running_requests
    attn_dp = int(args.dp_size or 1) if args.enable_dp_attention else 1
    context = args.context_length or _oracle.MODELS[model or "llama-3.1-8b"].get(
        "max_position_embeddings"
    )
    me = types.SimpleNamespace(
        server_args=args,
        ps=types.SimpleNamespace(attn_dp_size=attn_dp),
        model_config=types.SimpleNamespace(context_len=int(context)),
        mambaish_config=None,
    )
    per_worker = kvc.KVCacheConfigurator.resolve_max_num_reqs(me, pool_tokens)
    reduced = requested is not None and per_worker < max(1, requested // attn_dp)
    return {
        "per_worker": per_worker,
        "requested": requested,
        "attn_dp": attn_dp,
        "reduced": reduced,
    }


def resolve(
    config: dict[str, Any],
    *,
    model: str | None,
    capability: tuple[int, int],
    pool_tokens: int | None,
) -> dict[str, Any]:
    """SGLang 0.5.16's verdict on one argument set (its `--config` YAML form); the GPU
    memory probe is already installed by the caller."""
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.server_args_config_parser import ConfigArgumentMerger

    install_platform_probes(capability)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(config, handle)
        path = handle.name
    parser = _oracle._parser()
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            argv = ConfigArgumentMerger(parser).merge_config_with_args(["--config", path])
            namespace = parser.parse_args(argv)
    except SystemExit:
        return {
            "verdict": "reject",
            "stage": "parse",
            "message": _oracle.error_line(stderr.getvalue()),
        }
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "parse",
            "message": _oracle.first_line(f"{type(exc).__name__}: {exc}"),
        }
    given = {
        f: copy.deepcopy(getattr(namespace, f))
        for f in _oracle._user_fields(config, parser)
        if hasattr(namespace, f)
    }
    try:
        args = ServerArgs.from_cli_args(namespace)  # __post_init__ resolves
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "resolve",
            "message": _oracle.first_line(f"{type(exc).__name__}: {exc}"),
        }
    try:
        args.check_server_args()  # entrypoints/engine.py, as the launcher runs it next
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "launch",
            "message": _oracle.first_line(f"{type(exc).__name__}: {exc}"),
        }
    refused = check_heads(args, model) or check_kv_cache_dtype(args)
    if refused is not None:
        return refused
    adjust = {}
    for name, before in given.items():
        after = getattr(args, name)
        if isinstance(after, (set, frozenset)) and isinstance(before, (list, tuple)):
            before = set(before)
        if _plain(after) != _plain(before):
            adjust[name] = {"before": _plain(before), "after": _plain(after)}
    derived = {
        name: _plain(getattr(args, name))
        for name in (
            "mem_fraction_static",
            "chunked_prefill_size",
            "page_size",
            "attention_backend",
            "max_running_requests",
        )
    }
    if pool_tokens is not None:
        running = running_requests(args, model, pool_tokens)
        derived["running_requests_per_worker"] = running["per_worker"]
        if running["reduced"]:
            adjust["max_running_requests"] = {
                "before": running["requested"],
                "after": running["per_worker"] * running["attn_dp"],
            }
    with contextlib.suppress(Exception):
        derived["cuda_graph_max_bs"] = args.cuda_graph_config.decode.max_bs
    return {"verdict": "adjust" if adjust else "accept", "adjust": adjust, "derived": derived}
