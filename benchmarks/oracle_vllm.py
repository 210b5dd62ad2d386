"""vLLM's own verdict on `vllm serve` arguments, computed by vLLM's code on a CPU machine.

Run with the Python of a throwaway venv holding `vllm==0.33.0` or `vllm==0.24.0` (see
docs/engines.md; the release is the installed one):

    /tmp/v-vllm/bin/python benchmarks/oracle_vllm.py generate --count 200 --seed 7
    /tmp/v-vllm/bin/python benchmarks/oracle_vllm.py generate --batch targets --count 200 --seed 11
    /tmp/v-vllm/bin/python benchmarks/oracle_vllm.py corpus

(the records of seeds 23 and 31 were written with `--seed 23 --out
tests/corpus/vllm/oracle/generated-seed23.json` and `--batch targets --seed 31 --out
tests/corpus/vllm/oracle/generated-targets-seed31.json`; the model-runner batch with
`--batch runner --seed 41 --out tests/corpus/vllm/oracle/generated-runner-seed41.json`)

vLLM 0.24.0's records (`/tmp/v-vllm-0.24/bin/python benchmarks/oracle_vllm.py generate
--count 200 --seed 101 --compact`, `--seed 103`, `--batch targets --seed 107`) are
`generated-0.24-<batch>-seed<N>.json`, one result a line; the spelling batch of both
releases (`generate --batch spelling --count 200 --seed 211 --compact`) is
`generated-<release>-spelling-seed211.json`; its corpus run writes
`corpus-0.24.json` with the cases whose profile is `vllm-0.24` (each release runs only its
own line's cases). The generators are release-aware (`release_axes`): an axis value whose
flags the running release's parser lacks is left out, unless it is a deliberate bad flag
(`DELIBERATE_BAD`), and a release's own axes are added (`RELEASE_AXES`); 0.33.0 knows every
flag of the axes, so its batches are unchanged.

Each argument set (a dict in `vllm serve --config` YAML form) goes through vLLM's own
path: its `--config` handling and argument parser (`FlexibleArgumentParser` with the
serve arguments), `AsyncEngineArgs.from_cli_args`, then
`create_engine_config(UsageContext.OPENAI_API_SERVER)`, which builds and validates every
config dataclass (`ModelConfig` from a local `config.json` folder, `CacheConfig`,
`ParallelConfig`, `SchedulerConfig`, `SpeculativeConfig`, `LoRAConfig`,
`CompilationConfig`, ...) and runs `VllmConfig.__post_init__`. For EAGLE-3, the check the
worker makes when it loads the target (does its model class implement SupportsEagle3) is
run on the class vLLM's loader resolves (`_load_check`, stage "load").

The verdict is `reject` (it raised; the message is kept), `adjust` (a field the user set
ends up with another value in the `VllmConfig`: before -> after) or `accept`.

vLLM runs here on its CPU platform (no GPU). What that changes, so what this oracle
cannot speak for: the CPU platform's `check_and_update_config` rewrites cache block
size for some attention backends, and captures no CUDA graphs (it empties
`cudagraph_capture_sizes`, so `VllmConfig._set_cudagraph_sizes` never caps a capture
size at the token budget as it does on a GPU); its batch defaults are the CPU ones
(`EngineArgs.get_batch_defaults`: 2048 tokens and 128 sequences per rank for `vllm
serve`, where an H100 gets 8192 and 1024). The fields in `PLATFORM_FIELDS` are therefore
never counted as adjustments, and a case whose verdict depends on the platform is marked
`cpu_limited`, with the reason in `cpu_why`: a platform field changed, a CUDA-graph
capture size above the token budget was given (or refused), or a refusal compares a
budget or sequence limit the user left to the CPU defaults.
Nothing is patched: vLLM runs unmodified, with `VLLM_TARGET_DEVICE=cpu` (the wheel is
the CUDA build, which would otherwise find no platform here). Where the venv's torchvision
does not import, the process gets a stand-in `torchvision` whose names only bind
(`oracle_vllm_torchvision.py`: the Qwen3.5 model class imports it at the configuration
stage and uses none of it there); a case whose run called into it is recorded with
`torchvision_stub_called`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle_vllm_torchvision  # noqa: E402
from oracle_common import (  # noqa: E402
    error_line,
    first_line,
    load_cases,
    model_folder,
    norm_key,
    oracle_model,
    seeded_combinations,
    skipped,
    write_compact,
    write_results,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "vllm"

# Fields the CPU platform decides for itself (vllm/platforms/cpu.py check_and_update_config).
PLATFORM_FIELDS = {
    "block_size",
    "enforce_eager",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
    "compilation_config",
    "attention_backend",
    "kv_cache_dtype",
    "async_scheduling",
}

_CONFIGS = (
    "model_config",
    "cache_config",
    "parallel_config",
    "scheduler_config",
    "speculative_config",
    "lora_config",
    "compilation_config",
    "load_config",
    "attention_config",
    "observability_config",
)


def _cpu_platform() -> None:
    """Make vLLM pick its CPU platform: `VLLM_TARGET_DEVICE=cpu` does it from ~0.30 on;
    0.24 takes the CPU platform only from a CPU build's version string
    (vllm/platforms/__init__.py cpu_platform_plugin, v0.24.0), so the probe is answered
    as a CPU build would answer it, before any platform is resolved."""
    import vllm.platforms as platforms

    if platforms.current_platform.device_type == "":
        platforms.vllm_version_matches_substr = lambda part: part == "cpu"
        platforms._current_platform = None


def _make_arg_parser() -> Any:
    """`vllm serve`'s make_arg_parser: vllm.entrypoints.common.cli_args from ~0.30 on,
    vllm.entrypoints.openai.cli_args before (0.24)."""
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
    except ModuleNotFoundError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    return make_arg_parser


def _parser() -> Any:
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(exit_on_error=False)
    try:
        return _make_arg_parser()(parser)
    except Exception:
        from vllm.engine.arg_utils import AsyncEngineArgs

        return AsyncEngineArgs.add_cli_args(FlexibleArgumentParser(exit_on_error=False))


def _find(vllm_config: Any, name: str) -> tuple[bool, Any]:
    """A field's final value: on the VllmConfig or one of its sub-configs."""
    aliases = {"speculative_config": None, "tensor_parallel_size": "tensor_parallel_size"}
    if name in aliases and aliases[name] is None:
        return False, None
    for attr in _CONFIGS:
        sub = getattr(vllm_config, attr, None)
        if sub is not None and hasattr(sub, name):
            return True, getattr(sub, name)
    if name == "kv_cache_dtype":
        return True, vllm_config.cache_config.cache_dtype
    return False, None


def _plain(value: Any) -> Any:
    if hasattr(value, "value") and not isinstance(value, (int, float, str)):
        return _plain(value.value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _configure(config: dict[str, Any], *, model: str | None = "llama-3.1-8b") -> dict[str, Any]:
    """vLLM's verdict on one argument set (its `--config` YAML form) at its configuration
    stage, then the model-class check of its load stage (`_load_check`)."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext

    config = dict(config)
    if model is not None:
        config["model"] = str(model_folder(model))
    config.setdefault("skip-tokenizer-init", True)  # no tokenizer files in the folder
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(config, handle)
        path = handle.name
    parser = _parser()
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            namespace = parser.parse_args(["--config", path])
    except SystemExit:
        return {"verdict": "reject", "stage": "parse", "message": error_line(stderr.getvalue())}
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "parse",
            "message": first_line(f"{type(exc).__name__}: {exc}"),
        }
    given: dict[str, Any] = {}
    try:
        engine_args = AsyncEngineArgs.from_cli_args(namespace)
        for key in config:
            name, _ = norm_key(key)
            if name in ("model", "skip_tokenizer_init", "config"):
                continue
            if hasattr(engine_args, name):
                given[name] = copy.deepcopy(getattr(engine_args, name))
        vllm_config = engine_args.create_engine_config(UsageContext.OPENAI_API_SERVER)
    except Exception as exc:
        message = first_line(f"{type(exc).__name__}: {exc}")
        out = {"verdict": "reject", "stage": "config", "message": message}
        why = cpu_why(given, message)
        if why:
            out.update(cpu_limited=True, cpu_why=why)
        return out
    refused = _load_check(vllm_config)
    if refused is not None:
        return refused
    adjust = {}
    cpu_limited = False
    why = cpu_why(given, budget=vllm_config.scheduler_config.max_num_batched_tokens)
    for name, before in given.items():
        found, after = _find(vllm_config, name)
        if not found or isinstance(before, (dict, list)) and not isinstance(after, (dict, list)):
            continue
        if _plain(after) != _plain(before) and before is not None:
            if name in PLATFORM_FIELDS:
                cpu_limited = True
                why = why or f"{name}: the CPU platform sets {_plain(after)!r}"
                continue
            adjust[name] = {"before": _plain(before), "after": _plain(after)}
    derived = {
        "max_num_batched_tokens": vllm_config.scheduler_config.max_num_batched_tokens,
        "max_num_seqs": vllm_config.scheduler_config.max_num_seqs,
        "max_model_len": vllm_config.model_config.max_model_len,
        "enable_chunked_prefill": vllm_config.scheduler_config.enable_chunked_prefill,
        "enable_prefix_caching": vllm_config.cache_config.enable_prefix_caching,
        "gpu_memory_utilization": vllm_config.cache_config.gpu_memory_utilization,
    }
    out = {
        "verdict": "adjust" if adjust else "accept",
        "adjust": adjust,
        "derived": _plain(derived),
    }
    if cpu_limited or why:
        out.update(cpu_limited=True, cpu_why=why)
    return out


def _load_check(vllm_config: Any) -> dict[str, Any] | None:
    """What vLLM checks of the target's model class when its worker loads the model, run
    on the class alone (no weights, no GPU): EAGLE-3 needs a target implementing
    SupportsEagle3 (the V2 runner's set_eagle3_aux_hidden_state_layers,
    v1/worker/gpu/spec_decode/eagle/eagle3_utils.py; V1's GPUModelRunner.
    _setup_eagle3_aux_hidden_state_outputs raises the same). The class is the one the
    loader resolves (model_loader/utils.py get_model_architecture); `supports_eagle3` is
    an isinstance test of the runtime-checkable protocol, true of the class as of an
    instance."""
    spec = vllm_config.speculative_config
    if spec is None or spec.method != "eagle3":
        return None
    from vllm.model_executor.model_loader.utils import get_model_architecture
    from vllm.model_executor.models.interfaces import supports_eagle3
    from vllm.v1.worker.gpu.spec_decode.eagle import eagle3_utils

    # 0.24 has no requires_aux_hidden_states: its set_eagle3_aux_hidden_state_layers
    # checks every EAGLE-3 target (v1/worker/gpu/spec_decode/eagle/eagle3_utils.py)
    needs = getattr(eagle3_utils, "requires_aux_hidden_states", lambda _spec: True)
    if not needs(spec):
        return None
    cls, arch = get_model_architecture(vllm_config.model_config)
    if supports_eagle3(cls):
        return None
    return {
        "verdict": "reject",
        "stage": "load",
        "message": "RuntimeError: Model does not support EAGLE3 interface",
        "model_class": f"{cls.__module__}.{cls.__name__} ({arch})",
    }


# VllmConfig.use_v2_model_runner: without Triton (this CPU machine) vLLM runs its V1 model
# runner, which refuses prefill context parallelism (_validate_v1_model_runner); a GPU
# runs V2 unless the arguments ask for what V2 lacks. The oracle then asks vLLM again
# with its own switch VLLM_USE_V2_MODEL_RUNNER=1: if V2 complains of a feature it lacks,
# a GPU falls back to V1 too and the first verdict stands; else the second is a GPU's.
V1_REFUSAL = "Model Runner V1 does not support"
# VllmConfig.__post_init__ refuses an explicit async_scheduling the V1 runner cannot run
# (pipeline parallelism, a method other than EAGLE/MTP/DFlash/DSpark/ngram_gpu/draft_model,
# disable_padded_drafter_batch); this CPU machine is always on V1, so the same rerun decides
V1_ASYNC_REFUSAL = "Async scheduling is not supported by the V1 model runner"
V2_REFUSAL = "Model Runner V2 does not yet support"
RUNNER_SWITCH = "VLLM_USE_V2_MODEL_RUNNER"
# the CPU platform turns dual batch overlap off (platforms/cpu.py); a GPU keeps it, and V2
# takes it only with the switch set, so a GPU runs such arguments on V1
DBO_FIELDS = ("enable_dbo", "ubatch_size")


def resolve(config: dict[str, Any], *, model: str | None = "llama-3.1-8b") -> dict[str, Any]:
    """vLLM's verdict on one argument set; for a refusal that only its V1 model runner
    gives, `gpu` holds the verdict of the V2 runner a GPU would pick."""
    out = _configure(config, model=model)
    message = out.get("message", "")
    if V1_REFUSAL not in message and V1_ASYNC_REFUSAL not in message:
        return out
    if any(norm_key(k)[0] in DBO_FIELDS and v for k, v in config.items()):
        return out
    previous = os.environ.get(RUNNER_SWITCH)
    os.environ[RUNNER_SWITCH] = "1"
    try:
        gpu = _configure(config, model=model)
    finally:
        if previous is None:
            os.environ.pop(RUNNER_SWITCH, None)
        else:
            os.environ[RUNNER_SWITCH] = previous
    if V2_REFUSAL in gpu.get("message", ""):
        return out
    gpu.pop("derived", None)
    out.update(
        cpu_limited=True,
        cpu_why="the CPU platform has no Triton, so vLLM runs its V1 model runner, which"
        " refuses what only V2 serves (prefill context parallelism, async scheduling with"
        " pipeline parallelism or ngram, ...); `gpu`: vLLM's verdict on its V2 runner",
        gpu=gpu,
    )
    return out


# The two fields whose defaults are the platform's (EngineArgs.get_batch_defaults).
BATCH_FIELDS = ("max_num_batched_tokens", "max_num_seqs")


def cpu_why(given: dict[str, Any], message: str = "", budget: int | None = None) -> str | None:
    """Why a verdict would differ on a GPU platform, for the fields the user gave, a
    refusal's message and the token budget vLLM ended with (None: the verdict does not
    depend on the CPU platform)."""
    sizes = [given.get("max_cudagraph_capture_size"), *(given.get("cudagraph_capture_sizes") or [])]
    top = max((int(s) for s in sizes if s is not None), default=None)
    capped = top is not None and budget is not None and top > budget
    if capped or top is not None and "cudagraph" in message:
        return (
            f"a CUDA-graph capture size {top} given: the CPU platform sizes no CUDA graphs"
            " (a GPU caps it at max_num_batched_tokens)"
        )
    defaulted = [n for n in BATCH_FIELDS if given.get(n) is None and n in message]
    if defaulted:
        return f"the refusal compares {', '.join(defaulted)} at the CPU platform's default"
    return None


# Axes that interact in vLLM's validation.
AXES: dict[str, list[Any]] = {
    "max-num-batched-tokens": [256, 1024, 2048, 8192, 65536],
    "max-num-seqs": [1, 128, 256, 1024, 4096],
    "max-model-len": [2048, 8192, 131072, 262144],
    "enable-chunked-prefill": [True, False],
    "tensor-parallel-size": [1, 2, 3, 4, 8],
    "pipeline-parallel-size": [1, 2],
    "data-parallel-size": [1, 2],
    "decode-context-parallel-size": [1, 2, 4, 16],
    "enable-expert-parallel": [True, False],
    "enable-eplb": [True, False],
    "speculative": [
        {
            "speculative-config": {
                "method": "ngram",
                "num_speculative_tokens": 4,
                "prompt_lookup_max": 4,
                "prompt_lookup_min": 2,
            }
        },
        {
            "speculative-config": {
                "method": "ngram",
                "num_speculative_tokens": 4,
                "prompt_lookup_max": 2,
                "prompt_lookup_min": 4,
            }
        },
        {"speculative-config": {"method": "ngram", "num_speculative_tokens": 3}},
        {
            "speculative-config": {
                "method": "eagle3",
                "model": "llama-3.1-8b",
                "num_speculative_tokens": 3,
            }
        },
        {
            "speculative-config": {
                "method": "eagle",
                "model": "llama-3.1-8b",
                "num_speculative_tokens": 2,
                "draft_tensor_parallel_size": 2,
            }
        },
    ],
    "lora": [
        {"enable-lora": True, "max-lora-rank": 64, "max-loras": 4},
        {"enable-lora": True, "max-loras": 8, "max-cpu-loras": 4},
        {"enable-lora": True, "max-lora-rank": 48},
    ],
    "enable-prefix-caching": [True, False],
    "gpu-memory-utilization": [0.5, 0.9, 1.0, 1.5],
    "block-size": [8, 16, 32, 64],
    "kv-cache-dtype": ["auto", "fp8", "fp8_e5m2", "int8"],
    "quantization": ["fp8", "awq", "gptq"],
    "max-cudagraph-capture-size": [16, 512, 2048],
    "enforce-eager": [True, False],
    "swap-space": [4],
}


# The second batch (`generate --batch targets`): the target model is an axis too (each
# argument set is resolved against one of TARGET_MODELS), for EAGLE-3 targets vLLM
# supports or not, MTP token counts against the model's MTP layers (or none), and the
# parallel sizes that depend on the model's heads: decode/prefill context parallelism,
# data parallelism.
TARGET_MODELS = [
    "llama-3.1-8b",
    "qwen2.5-7b",
    "mixtral-8x7b",
    "deepseek-v3-4l",
    "deepseek-v3-4l-mtp2",
]
TARGET_AXES: dict[str, list[Any]] = {
    "speculative": [
        {
            "speculative-config": {
                "method": "eagle3",
                "model": "eagle3-llama-3.1-8b",
                "num_speculative_tokens": 3,
            }
        },
        *(
            {"speculative-config": {"method": "mtp", "num_speculative_tokens": k}}
            for k in (1, 2, 3, 4)
        ),
        {"speculative-config": {"method": "ngram", "num_speculative_tokens": 3}},
    ],
    "tensor-parallel-size": [1, 2, 4, 8, 16],
    "pipeline-parallel-size": [1, 2],
    "data-parallel-size": [1, 2, 4],
    "decode-context-parallel-size": [1, 2, 4, 8],
    "prefill-context-parallel-size": [1, 2],
    "enable-expert-parallel": [True, False],
    "max-model-len": [4096, 32768],
}


# The third batch (`generate --batch runner`): what decides vLLM's model runner and what
# each runner refuses: explicit async scheduling against pipeline parallelism and the
# speculative method, the features that send vLLM to V1 (a heterogeneous-vocabulary draft,
# EAGLE parallel drafting) with what only V2 serves (adaptive verification, draft lm_head
# quantization, batch-sharded sampling), and --quantization against an unquantized and an
# FP8 checkpoint.
RUNNER_MODELS = ["llama-3.1-8b", "llama-3.1-8b-fp8"]
_HETERO = {
    "method": "draft_model",
    "model": "qwen2.5-0.5b",
    "num_speculative_tokens": 4,
    "use_heterogeneous_vocab": True,
}
_PARALLEL_EAGLE = {
    "method": "eagle",
    "model": "llama-3.1-8b",
    "num_speculative_tokens": 2,
    "parallel_drafting": True,
}
RUNNER_AXES: dict[str, list[Any]] = {
    "async-scheduling": [True, False],
    "pipeline-parallel-size": [1, 2],
    "tensor-parallel-size": [1, 2, 4],
    "speculative": [
        {"speculative-config": {"method": "ngram", "num_speculative_tokens": 3}},
        {"speculative-config": _HETERO},
        {"speculative-config": {**_HETERO, "disable_padded_drafter_batch": True}},
        {"speculative-config": {**_HETERO, "enable_adaptive_verification": True}},
        {"speculative-config": _PARALLEL_EAGLE},
        {"speculative-config": {**_PARALLEL_EAGLE, "draft_lm_head_quantization": "fp8"}},
        {
            "speculative-config": {
                "method": "draft_model",
                "model": "llama-3.2-1b",
                "num_speculative_tokens": 3,
                "draft_lm_head_quantization": "fp8",
            }
        },
    ],
    "enable-batch-sharded-sampling": [True],
    "max-num-seqs": [1, 256],
    "quantization": ["fp8", "fp8_per_block", "awq", "gptq"],
}


# Flags the mixed generator gives whatever the release, as deliberate bad input: each is
# an option the running release lacks (`--swap-space`: gone from both 0.24 and 0.33;
# `--max-num-active-seqs`: added after 0.24), and vLLM's parser must refuse it.
DELIBERATE_BAD = {"swap-space", "max-num-active-seqs"}
# Axes of one release line only (added to its mixed, targets and runner batches, not to
# the spelling one): 0.24's partial-prefill limits
# (SchedulerConfig, removed by 0.33) and 0.33's max-num-active-seqs, a bad flag there.
RELEASE_AXES: dict[str, dict[str, list[Any]]] = {
    "0.24": {
        "max-num-partial-prefills": [1, 2, 4],
        "max-long-partial-prefills": [1, 2, 8],
        "long-prefill-token-threshold": [0, 512, 4096],
        "max-num-active-seqs": [64],
    },
}


def _flags(value: Any, name: str) -> list[str]:
    """The option names one axis value sets (a bundle sets several), as the parser spells
    them: dashes, no `no-` negation prefix (`enable_prefix_caching`, `no-enable-prefix-
    caching` -> `enable-prefix-caching`)."""
    keys = list(value) if isinstance(value, dict) else [name]
    return [k.replace("_", "-").removeprefix("no-") for k in keys]


def release_axes(
    axes: dict[str, list[Any]], known: set[str], release: str, *, extra_axes: bool = True
) -> dict[str, list[Any]]:
    """`axes` cut to the running release: every value whose flags its parser knows
    (`known`, long option names without dashes), or deliberately bad ones
    (`DELIBERATE_BAD`), plus that release's own axes (`RELEASE_AXES`, unless
    `extra_axes` is false). vLLM 0.33.0 knows every flag of AXES, so its batches are the
    ones recorded before this cut existed."""
    out: dict[str, list[Any]] = {}
    extra = RELEASE_AXES.get(release, {}) if extra_axes else {}
    for name, values in {**axes, **extra}.items():
        kept = [
            v for v in values if all(f in known or f in DELIBERATE_BAD for f in _flags(v, name))
        ]
        if kept:
            out[name] = kept
    return out


def known_flags() -> set[str]:
    """The long option names (no leading dashes) of the running release's `vllm serve`."""
    return {
        s[2:]
        for s in _parser()._option_string_actions
        if s.startswith("--") and not s.startswith("--no-")
    }


def release() -> str:
    """The running vLLM's release line (`0.24`, `0.33`)."""
    return ".".join(_version().split(".")[:2])


# The fourth batch (`generate --batch spelling`): how `--config` reads a boolean, in each
# spelling (dashes, underscores, the `no-` negation) and value, against the checks the
# value decides (the budget without chunked prefill). One spelling per field and set:
# vLLM's parser keeps the last of two spellings, in the YAML's (sorted) key order.
SPELLING_AXES: dict[str, list[Any]] = {
    "chunked": [
        {"enable-chunked-prefill": True},
        {"enable-chunked-prefill": False},
        {"enable_chunked_prefill": True},
        {"enable_chunked_prefill": False},
        {"no-enable-chunked-prefill": True},
        {"no-enable-chunked-prefill": False},
    ],
    "prefix": [
        {"enable-prefix-caching": False},
        {"enable_prefix_caching": False},
        {"enable_prefix_caching": True},
        {"no-enable-prefix-caching": True},
    ],
    "eager": [{"enforce-eager": False}, {"enforce_eager": True}, {"enforce-eager": True}],
    "max-num-batched-tokens": [1024, 8192, 131072],
    "max-model-len": [4096, 131072],
    "max-num-seqs": [64, 256],
}


def spelling_combinations(count: int, seed: int) -> list[dict[str, Any]]:
    axes = release_axes(SPELLING_AXES, known_flags(), release(), extra_axes=False)
    return seeded_combinations(axes, count, seed)


def runner_combinations(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` (model, argument set) pairs over RUNNER_AXES and RUNNER_MODELS."""
    import random

    rng = random.Random(seed)
    combos = seeded_combinations(release_axes(RUNNER_AXES, known_flags(), release()), count, seed)
    return [(rng.choice(RUNNER_MODELS), args) for args in combos]


def targeted_combinations(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` (model, argument set) pairs: seeded_combinations over TARGET_AXES, each
    with a model drawn from TARGET_MODELS (deterministic for a seed)."""
    import random

    rng = random.Random(seed)
    combos = seeded_combinations(release_axes(TARGET_AXES, known_flags(), release()), count, seed)
    return [(rng.choice(TARGET_MODELS), args) for args in combos]


def _materialise(args: dict[str, Any]) -> dict[str, Any]:
    out = dict(args)
    spec = out.get("speculative-config")
    if isinstance(spec, dict) and "model" in spec:
        spec = dict(spec)
        spec["model"] = str(model_folder(spec["model"]))
        out["speculative-config"] = spec
    return out


def run_generated(count: int, seed: int, batch: str = "mixed") -> dict[str, Any]:
    results = []
    if batch in ("targets", "runner"):
        pairs = targeted_combinations if batch == "targets" else runner_combinations
        for model, args in pairs(count, seed):
            verdict = resolve(_materialise(args), model=model)
            results.append({"model": model, "args": args, **verdict})
    elif batch == "spelling":
        for args in spelling_combinations(count, seed):
            results.append({"args": args, **resolve(args)})
    else:
        axes = release_axes(AXES, known_flags(), release())
        for args in seeded_combinations(axes, count, seed):
            verdict = resolve(_materialise(args))
            results.append({"args": args, **verdict})
    return {
        "engine": "vllm",
        "version": _version(),
        "seed": seed,
        "batch": batch,
        "platform": "cpu",
        "results": results,
    }


def run_corpus() -> dict[str, Any]:
    results = []
    for case in load_cases(CORPUS):
        if case.get("profile", "vllm-0.33") != f"vllm-{release()}":
            continue  # another release line's case: run by that release's venv
        row = skipped(case)
        if row is not None:
            results.append(row)
            continue
        config = _materialise(dict(case.get("config") or {}))
        verdict = resolve(config, model=oracle_model(case))
        used = oracle_vllm_torchvision.calls()
        if used:  # the configuration stage used the stand-in: not vLLM's own verdict
            verdict = {**verdict, "torchvision_stub_called": used}
        results.append({"id": case["id"], "expected": case["verdict"], **verdict})
    return {"engine": "vllm", "version": _version(), "platform": "cpu", "results": results}


def _version() -> str:
    import vllm

    return vllm.__version__


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate")
    gen.add_argument("--count", type=int, default=200)
    gen.add_argument("--seed", type=int, default=7)
    gen.add_argument("--batch", choices=("mixed", "targets", "runner", "spelling"), default="mixed")
    gen.add_argument("--out", default=None)
    gen.add_argument("--compact", action="store_true", help="one result per line")
    cor = sub.add_parser("corpus")
    cor.add_argument("--out", default=None, help="corpus.json; corpus-<release>.json off 0.33")
    cor.add_argument("--compact", action="store_true", help="one result per line")
    opts = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    logging.disable(logging.WARNING)
    if oracle_vllm_torchvision.needed():
        # Qwen3.5's model class imports torchvision at its configuration stage; this
        # process and its children get a stand-in (benchmarks/oracle_vllm_torchvision.py)
        oracle_vllm_torchvision.install()
    _cpu_platform()
    if opts.command == "generate":
        name = "generated.json" if opts.batch == "mixed" else f"generated-{opts.batch}.json"
        if release() != "0.33" or opts.batch == "spelling":  # the release and seed named
            name = f"generated-{release()}-{opts.batch}-seed{opts.seed}.json"
        opts.out = opts.out or str(CORPUS / "oracle" / name)
        payload = run_generated(opts.count, opts.seed, opts.batch)
    else:
        name = "corpus.json" if release() == "0.33" else f"corpus-{release()}.json"
        opts.out = opts.out or str(CORPUS / "oracle" / name)
        payload = run_corpus()
    if opts.compact:
        write_compact(Path(opts.out), payload)
    else:
        write_results(Path(opts.out), payload)
    counts: dict[str, int] = {}
    for row in payload["results"]:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    print(f"{len(payload['results'])} argument sets: {counts} -> {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
