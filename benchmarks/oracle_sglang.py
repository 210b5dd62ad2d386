"""SGLang's own verdict on server arguments, computed by SGLang's code on a CPU machine.

Run with the Python of a throwaway venv holding `sglang==0.5.23` (see docs/engines.md):

    /tmp/v-sglang/bin/python benchmarks/oracle_sglang.py generate --count 200 --seed 7
    /tmp/v-sglang/bin/python benchmarks/oracle_sglang.py corpus
    /tmp/v-sglang/bin/python benchmarks/oracle_sglang.py generate --axes wide --gpu H100 \
        --seed 31 --count 300 --release 0.5.23 \
        --out tests/corpus/sglang/oracle/generated-wide-h100.json  (B200: --seed 37)
    /tmp/v-sglang/bin/python benchmarks/oracle_sglang.py generate --axes wide --gpu A100-40GB \
        --model qwen2.5-7b --seed 41 --count 200 --release 0.5.23 \
        --out tests/corpus/sglang/oracle/generated-wide-a100-qwen2.5.json
        (and --gpu H200 --model mixtral-8x7b --seed 43: generated-wide-h200-mixtral.json)
    /tmp/v-sglang/bin/python benchmarks/oracle_sglang.py generate --axes split --gpu B200 \
        --seed 11 --out tests/corpus/sglang/oracle/generated-split-b200.json  (and H100)
    /tmp/v-sglang-0.5.16/bin/python benchmarks/oracle_sglang.py generate --axes base-0.5.16 \
        --gpu H100 --seed 51 --count 300 --release 0.5.16 \
        --out tests/corpus/sglang/oracle/generated-0.5.16-h100.json
        (--axes wide-0.5.16 --gpu B200 --seed 53 --count 150: generated-0.5.16-wide-b200.json;
        --axes base-0.5.16 --gpu A10G --seed 57 --count 100: generated-0.5.16-a10g.json)
    /tmp/v-sglang-0.5.16/bin/python benchmarks/oracle_sglang.py generate --axes models-0.5.16 \
        --model gpt-oss-120b-bf16 --gpu B200 --tp 2 --seed 61 --count 60 --release 0.5.16 \
        --out tests/corpus/sglang/oracle/generated-0.5.16-gpt-oss-b200.json
        (the other model families and the `--axes kv4-0.5.16` batches: docs/sglang.md)

SGLang 0.5.16 (no `resolve_once`) resolves in `ServerArgs.__post_init__`: its path, with
the same patches in 0.5.16's shape, is benchmarks/oracle_sglang_0516.py.

Each argument set (a dict in SGLang's `--config` YAML form) goes through SGLang's own
path: its `--config` merger and argparse parser, `ServerArgs.from_cli_args`, then
`ServerArgs.resolve_once()` (the ordered resolution pipeline of `arg_groups/*_hook.py`).
The verdict is `reject` (it raised; the message is kept), `adjust` (a field the user set
was resolved to another value: before -> after) or `accept`. The defaults SGLang derived
from the GPU (`mem_fraction_static`, `chunked_prefill_size`, decode CUDA-graph `max_bs`)
are recorded beside the verdict.

Patches that make this run on a CPU machine (each one replaces a hardware probe, not a
rule; they are applied in `install_cpu_shims`):

1. torchvision: its wheel is a CUDA build whose operator library needs `libc10_cuda.so`,
   so it cannot load here. A stub module stands in for it; argument resolution never
   transforms an image. `transformers` is imported first and told torchvision is absent.
2. GPU memory: `get_device_memory_capacity` returns the memory of the chosen GPU (MiB),
   as `nvidia-smi` would on that machine (`GPUS`: an H100 reports 81,559 MiB).
3. Compute capability: `torch.cuda.get_device_capability` returns the chosen GPU's
   (default (9, 0), Hopper), where the attention hooks ask for it; and SGLang's platform
   probes (`runtime_context.get_platform()`: `is_sm90`, `is_sm100`, `is_sm100_or_sm110`,
   `is_sm110`, `is_sm120`, `is_blackwell`, `is_hopper_with_cuda_12_3`, `has_flashinfer`,
   `is_cuda`, `device_sm`, `device_capability`) answer for that GPU through the platform context's
   own override (`_install`), as `utils/common.py _check_cuda_device_version` would on it
   (CUDA >= 12.8 assumed), and with flashinfer installed, as the sglang wheel requires
   (`flashinfer_python`): SGLang's default attention backend for an unset one
   (`get_default_attn_backend`) reads both.
4. `device="cuda"` is passed unless the case names a device: `get_device()` would
   answer "cpu" here.
5. A draft model named by a hub id (`speculative-draft-model-path`) is replaced by a
   local folder with the target's config.json: no hub access here. Verdicts that hang
   on the draft checkpoint's own shape are therefore out of this oracle's reach.
6. The head split (stage "model"): SGLang checks that the attention heads divide over
   the ranks only when the model is built, in the model's attention `__init__`. After
   `resolve_once()` the oracle builds that attention class (`ATTENTION_CLASSES`, by the
   model's architecture) with SGLang's resolved widths installed as scoped overrides of
   its `ParallelContext` (`tp_size`, and `attn_tp_size` from SGLang's own
   `derive_attn_tp_size`); the class's first projection layer is replaced by a sentinel,
   so construction stops right after the head asserts, before anything needs a GPU or a
   process group. An AssertionError there is SGLang's refusal. Only the classes of
   `ATTENTION_CLASSES` are built (Llama, Qwen2, Mixtral, Qwen2-MoE); a case on another
   model (DeepSeek-V3, gpt-oss, Llama 4, Gemma) gets no head check from this oracle.
7. The running requests (`running_requests`): SGLang sizes `max_running_requests` per DP
   worker from its KV pool once the pool is allocated on the GPU
   (`KVCacheConfigurator.resolve_max_num_reqs`), lowering an explicit value the pool
   cannot hold with a log line. A corpus case may give the pool (`kv_pool_tokens`: the
   tokens arbiter's capacity reports for it, whose formula is checked against SGLang's
   in tests/constraints/engines/sglang/test_memory.py); the oracle then runs SGLang's function on
   that pool, and a lowered explicit value counts as an adjustment.
8. Prefill CUDA graphs: `cuda_graph_config.default_prefill_backend` answers "breakable",
   as `is_cuda()` would on a GPU (it answers "disabled" here), so the derived
   `mem_fraction_static` carries the prefill graphs' reserve as on the GPU
   (`install_prefill_graph_probe`). Batches recorded with it carry
   `"prefill_graphs": "cuda"`.

After `resolve_once()` the oracle runs `check_server_args()`, as SGLang's launcher does
next (entrypoints/engine.py `Engine._launch_subprocesses`, the HTTP server's path too):
its asserts (chunk a multiple of the page, ranks over nodes, LoRA's shape, pipeline
parallelism with speculative decoding) are refusals at launch (stage "launch").
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.machinery
import inspect
import io
import json
import logging
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_common import (  # noqa: E402
    MODELS,
    error_line,
    first_line,
    load_cases,
    model_folder,
    oracle_model,
    seeded_combinations,
    skipped,
    write_results,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "sglang"
# GPU -> (memory SGLang's probe reads, GiB; compute capability). The memory is what
# nvidia-smi reports on that GPU, as SGLang's get_device_memory_capacity reads it: arbiter's
# device catalog's MiB (constraints/facts/devices), not the marketing size (an H100 reports
# 81,559 MiB, not 80 GiB); the A10, not in the catalog, keeps its 24 GiB (the A10G is the
# catalog's 23,028 MiB).
GPUS = {
    "H100": (81559 / 1024, (9, 0)),
    "H200": (143771 / 1024, (9, 0)),
    "A100-40GB": (40960 / 1024, (8, 0)),
    "B200": (183359 / 1024, (10, 0)),
    "L40S": (46068 / 1024, (8, 9)),
    "A10": (24, (8, 6)),
    "A10G": (23028 / 1024, (8, 6)),
    "L4": (23034 / 1024, (8, 9)),
}


# SGLang-only oracle models (Qwen/Qwen2-57B-A14B-Instruct config.json on the Hugging Face
# hub: a Qwen2-MoE whose attention splits over the attention-TP group)
SGLANG_MODELS: dict[str, dict[str, Any]] = {
    "qwen2-57b-a14b": {
        "architectures": ["Qwen2MoeForCausalLM"],
        "model_type": "qwen2_moe",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "moe_intermediate_size": 2560,
        "shared_expert_intermediate_size": 20480,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "decoder_sparse_step": 1,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    },
    # Qwen/Qwen2.5-VL-7B-Instruct config.json: a multimodal model (SGLang lowers its
    # derived mem_fraction_static for the vision tower)
    "qwen2.5-vl-7b": {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "max_window_layers": 28,
        "vocab_size": 152064,
        "max_position_embeddings": 128000,
        "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
        "rms_norm_eps": 1e-6,
        "sliding_window": 32768,
        "use_sliding_window": False,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "image_token_id": 151655,
        "video_token_id": 151656,
        "vision_start_token_id": 151652,
        "vision_end_token_id": 151653,
        "vision_token_id": 151654,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "vision_config": {
            "hidden_size": 1280,
            "in_chans": 3,
            "model_type": "qwen2_5_vl",
            "spatial_patch_size": 14,
            "tokens_per_second": 2,
            "torch_dtype": "bfloat16",
        },
    },
}
MODELS.update(SGLANG_MODELS)
# models whose SGLang model override hook picks the attention backend (arg_groups/
# model_overrides/*.py), as in tests/fixtures/models; gpt-oss-120b without its
# quantization_config (bf16 weights): SGLang 0.5.23 registers no mxfp4 method on a CPU
# machine, and the backend its hook picks does not read the checkpoint's quantization
_FIXTURES = ROOT / "tests" / "fixtures" / "models"
for _name, _fixture in (
    ("gpt-oss-120b-bf16", "gpt-oss-120b"),
    ("llama-4-scout", "llama-4-scout"),
    ("gemma-2-27b", "gemma-2-27b"),
    ("gemma-3-27b", "gemma-3-27b"),
):
    _config = json.loads((_FIXTURES / f"{_fixture}.json").read_text())
    MODELS[_name] = {
        k: v for k, v in _config.items() if not k.startswith("_") and k != "quantization_config"
    }
# Llama-3.1-8B's shape with V rows of 64 where K rows are 128 wide: SGLang's ModelConfig reads
# `v_head_dim` from any config (has_asymmetric_kv), and a model of differing K and V widths
# picks another default backend on SM100 (MiMo-V2-Flash, 192 / 128, is such a model; its
# own override hook and remote code keep it out of this CPU oracle)
MODELS["llama-3.1-8b-asym-kv"] = {**MODELS["llama-3.1-8b"], "v_head_dim": 64}
# architecture -> (module under sglang.srt.models, its attention class)
ATTENTION_CLASSES = {
    "LlamaForCausalLM": ("llama", "LlamaAttention"),
    "Qwen2ForCausalLM": ("qwen2", "Qwen2Attention"),
    "MixtralForCausalLM": ("mixtral", "MixtralAttention"),
    "Qwen2MoeForCausalLM": ("qwen2_moe", "Qwen2MoeAttention"),
    # models/qwen2_5_vl.py builds its language model from models/qwen2.py
    "Qwen2_5_VLForConditionalGeneration": ("qwen2", "Qwen2Attention"),
}


class _HeadsSplit(Exception):
    """Raised by the sentinel projection layer: the head asserts before it held."""


def _sentinel_layer(*args: Any, **kwargs: Any) -> Any:
    raise _HeadsSplit()


def check_heads(args: Any, model: str | None) -> dict[str, Any] | None:
    """Patch 6: SGLang's head asserts for the resolved widths; a reject row or None."""
    import importlib

    from sglang.srt.arg_groups.overrides import resolution_result
    from sglang.srt.runtime_context import derive_attn_tp_size, get_parallel

    config = MODELS[model or "llama-3.1-8b"]
    if config["architectures"][0] not in ATTENTION_CLASSES:
        return None  # not built here: the docstring's patch 6 names the classes it builds
    module_name, class_name = ATTENTION_CLASSES[config["architectures"][0]]
    module = importlib.import_module(f"sglang.srt.models.{module_name}")
    module.QKVParallelLinear = _sentinel_layer
    tp = int(resolution_result(args, "tp_size") or 1)
    attn_dp = int(resolution_result(args, "attn_dp_size") or 1)
    attn_cp = int(resolution_result(args, "attn_cp_size") or 1)
    widths = {
        "tp_size": tp,
        "attn_tp_size": derive_attn_tp_size(tp_size=tp, attn_cp_size=attn_cp, attn_dp_size=attn_dp),
    }
    parallel = get_parallel()
    saved = dict(parallel._overrides)
    parallel._overrides.update(widths)
    try:
        cls = getattr(module, class_name)
        kwargs: dict[str, Any] = {
            "hidden_size": config["hidden_size"],
            "num_heads": config["num_attention_heads"],
            "num_kv_heads": config["num_key_value_heads"],
        }
        if "config" in inspect.signature(cls.__init__).parameters:
            kwargs["config"] = types.SimpleNamespace(**config)
        cls(**kwargs)
    except _HeadsSplit:
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
    finally:
        parallel._overrides.clear()
        parallel._overrides.update(saved)
    raise RuntimeError(f"{class_name} built without its projection layer")


class _Anything:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return self


def _stub_module(name: str) -> None:
    module = types.ModuleType(name)
    module.__path__ = []  # type: ignore[attr-defined]
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything

    module.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = module


_STATE: dict[str, Any] = {"gpu_mib": 80 * 1024, "capability": (9, 0)}


def install_cpu_shims() -> None:
    """Patches 1-3 of the module docstring."""
    import transformers  # noqa: F401
    from transformers.utils import import_utils

    import_utils.is_torchvision_available()  # cached: absent
    for name in (
        "torchvision",
        "torchvision.transforms",
        "torchvision.transforms.functional",
        "torchvision.transforms.v2",
        "torchvision.io",
        "torchvision.ops",
    ):
        _stub_module(name)

    import torch

    torch.cuda.get_device_capability = lambda device=None: _STATE["capability"]

    def memory(device: str | None = None) -> float:
        return float(_STATE["gpu_mib"])

    import sglang.srt.utils.common as common

    common.get_device_memory_capacity = memory
    install_prefill_graph_probe()
    import sglang.srt.arg_groups  # noqa: F401  the hooks import the probe by name

    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("sglang.") and getattr(mod, "get_device_memory_capacity", None):
            mod.get_device_memory_capacity = memory
    _stand_in_image_processor_registry()


def _stand_in_image_processor_registry() -> None:
    """Patch 1, continued: transformers 5.12 (the pin of sglang 0.5.16) replaces
    `AutoImageProcessor` by a placeholder that raises when torchvision is absent, and
    SGLang 0.5.16's `configs/` registers its image processors on it at import. A registry
    whose `register` records nothing stands in (argument resolution builds no image
    processor); a transformers whose own registry works keeps it."""
    import transformers

    try:
        transformers.AutoImageProcessor.register  # noqa: B018  the placeholder raises here
    except ImportError:

        class _Registry:
            @classmethod
            def register(cls, *args: Any, **kwargs: Any) -> None:
                return None

        transformers.AutoImageProcessor = _Registry


def _parser() -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve", exit_on_error=False)
    ServerArgs.add_cli_args(parser)
    return parser


def resolve(
    config: dict[str, Any],
    *,
    model: str | None = "llama-3.1-8b",
    gpu: str = "H100",
    gpus: int = 1,
    pool_tokens: int | None = None,
) -> dict[str, Any]:
    """SGLang's verdict on one argument set (its `--config` YAML form). With
    `pool_tokens` (a KV pool size: patch 7), also the running requests SGLang sizes from
    that pool, an explicit value it lowers counting as an adjustment. SGLang 0.5.16
    (no `resolve_once`) takes its own path: benchmarks/oracle_sglang_0516.py."""
    import oracle_sglang_0516

    memory_gib, capability = GPUS[gpu]
    _STATE["gpu_mib"] = memory_gib * 1024
    _STATE["capability"] = capability
    config = dict(config)
    config.setdefault("device", "cuda")
    if model is not None:
        config["model-path"] = str(model_folder(model))
    config.pop("model", None) if "model-path" in config else None
    if oracle_sglang_0516.is_0516():
        install_memory_probe()
        return oracle_sglang_0516.resolve(
            config, model=model, capability=capability, pool_tokens=pool_tokens
        )
    import sglang.srt.arg_groups.memory_hook  # noqa: F401  imported before patching
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

    install_memory_probe()
    install_platform_probes(capability)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(config, handle)
        path = handle.name
    parser = _parser()
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            argv = ConfigArgumentMerger(parser).merge_config_with_args(["--config", path])
            namespace = parser.parse_args(argv)
    except SystemExit:
        return {"verdict": "reject", "stage": "parse", "message": error_line(stderr.getvalue())}
    except Exception as exc:  # argparse errors with exit_on_error=False, merger errors
        return {
            "verdict": "reject",
            "stage": "parse",
            "message": first_line(f"{type(exc).__name__}: {exc}"),
        }
    try:
        args = ServerArgs.from_cli_args(namespace)
        given = {f: copy.deepcopy(getattr(args, f)) for f in _user_fields(config, parser)}
        args.resolve_once()
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "resolve",
            "message": first_line(f"{type(exc).__name__}: {exc}"),
        }
    try:
        # what the launcher runs next (entrypoints/engine.py Engine._launch_subprocesses,
        # also the HTTP server's path): the post-resolution asserts of
        # arg_groups/validation_hook.py check_server_args
        args.check_server_args()
    except Exception as exc:
        return {
            "verdict": "reject",
            "stage": "launch",
            "message": first_line(f"{type(exc).__name__}: {exc}"),
        }
    refused = check_heads(args, model)
    if refused is not None:
        return refused
    from sglang.srt.arg_groups.overrides import resolution_result

    adjust = {}
    running = None
    if pool_tokens is not None:
        running = running_requests(args, model, pool_tokens)
    for name, before in given.items():
        after = resolution_result(args, name)
        if isinstance(after, (set, frozenset)) and isinstance(before, (list, tuple)):
            before = set(before)  # a list SGLang normalises into a set is no change
        if _plain(after) != _plain(before):
            adjust[name] = {"before": _plain(before), "after": _plain(after)}
    derived = {
        name: _plain(resolution_result(args, name))
        for name in (
            "mem_fraction_static",
            "chunked_prefill_size",
            "page_size",
            "attention_backend",
            "max_running_requests",
        )
    }
    if running is not None:
        derived["running_requests_per_worker"] = running["per_worker"]
        if running["reduced"]:
            adjust["max_running_requests"] = {
                "before": running["requested"],
                "after": running["per_worker"] * running["attn_dp"],
            }
    graphs = resolution_result(args, "cuda_graph_config")
    with contextlib.suppress(Exception):
        derived["cuda_graph_max_bs"] = graphs.decode.max_bs
    return {"verdict": "adjust" if adjust else "accept", "adjust": adjust, "derived": derived}


def running_requests(args: Any, model: str | None, pool_tokens: int) -> dict[str, Any]:
    """Patch 7: SGLang's own `KVCacheConfigurator.resolve_max_num_reqs` for a KV pool of
    `pool_tokens` tokens, with the resolved arguments standing in for the scheduler
    context it reads (`get_schedule().max_running_requests`) and the model config's
    context length (the resolved `context_length`, else the model's
    `max_position_embeddings`). The pool is sized only on a GPU, so the case gives it."""
    from sglang.srt.arg_groups.overrides import resolution_result
    from sglang.srt.mem_cache import kv_cache_configurator as kvc

    requested = resolution_result(args, "max_running_requests")
    attn_dp = int(resolution_result(args, "attn_dp_size") or 1)
    context = resolution_result(args, "context_length") or MODELS[model or "llama-3.1-8b"].get(
        "max_position_embeddings"
    )
    me = types.SimpleNamespace(
        model_config=types.SimpleNamespace(context_len=int(context)),
        attn_dp_size=attn_dp,
        mambaish_config=None,
    )
    saved = kvc.get_schedule
    kvc.get_schedule = lambda: types.SimpleNamespace(max_running_requests=requested)
    try:
        per_worker = kvc.KVCacheConfigurator.resolve_max_num_reqs(me, pool_tokens)
    finally:
        kvc.get_schedule = saved
    reduced = requested is not None and per_worker < max(1, requested // attn_dp)
    return {
        "per_worker": per_worker,
        "requested": requested,
        "attn_dp": attn_dp,
        "reduced": reduced,
    }


def install_platform_probes(capability: tuple[int, int]) -> None:
    """Patch 3: SGLang's SM probes answer for the chosen GPU."""
    from sglang.srt.runtime_context import get_platform

    major, minor = capability
    get_platform()._install(
        # a CUDA GPU (handle_kv4_compatibility refuses an FP4 KV cache elsewhere)
        is_cuda=True,
        is_sm90=major == 9,
        is_sm100=major == 10,
        is_sm100_or_sm110=major in (10, 11),
        is_sm110=major == 11,
        is_sm120=major == 12,
        is_blackwell=major in (10, 11, 12),
        # the default attention backend (model_override_base.get_default_attn_backend)
        # reads these two: fa3 on Hopper with CUDA >= 12.3, flashinfer wherever it is
        # installed (flashinfer_python is a plain requirement of the sglang wheel)
        is_hopper_with_cuda_12_3=major == 9,
        has_flashinfer=True,
        device_sm=major * 10 + minor,
        device_capability=capability,
    )


def install_prefill_graph_probe() -> None:
    """Patch 8: the prefill CUDA graphs' default backend answers as on a CUDA GPU.
    `model_executor/cuda_graph_config.py default_prefill_backend` picks the breakable
    prefill graphs when `is_cuda()` (torch sees a GPU) and disables them elsewhere; the
    prefill graphs' reserve in the derived `mem_fraction_static` (memory_hook.py
    `reserve_for_graph_mb`) hangs on it. Only that probe is answered: `is_cuda()` itself
    stays what this machine says."""
    from sglang.srt.model_executor import cuda_graph_config as graphs

    graphs.default_prefill_backend = lambda: graphs.Backend.BREAKABLE


def install_memory_probe() -> None:
    """Re-point every imported SGLang module's memory probe at the chosen GPU."""

    def memory(device: str | None = None) -> float:
        return float(_STATE["gpu_mib"])

    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("sglang.") and callable(
            getattr(mod, "get_device_memory_capacity", None)
        ):
            mod.get_device_memory_capacity = memory


def _user_fields(config: dict[str, Any], parser: argparse.ArgumentParser) -> list[str]:
    """The ServerArgs fields the user's keys set, found the way SGLang's parser found them:
    by the flag, or by a unique prefix of one (argparse's allow_abbrev, left on by SGLang:
    `mem-fraction` sets mem_fraction_static)."""
    names = []
    for key in config:
        flag = "--" + key.lstrip("-").replace("_", "-")
        action = parser._option_string_actions.get(flag)
        if action is None:
            found = [
                a for a in parser._actions if any(o.startswith(flag) for o in a.option_strings)
            ]
            action = found[0] if len(found) == 1 else None
        name = action.dest if action is not None else flag[2:].replace("-", "_")
        if name not in ("model_path", "device", "config"):
            names.append(name)
    return names


def _plain(value: Any) -> Any:
    from sglang.srt.server_args import _plain as sglang_plain

    value = sglang_plain(value)
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# Axes that interact in SGLang's resolution (scheduler budgets, parallelism, speculative
# decoding, LoRA, CUDA graphs, page size, attention backends, HiCache/radix, PD roles).
AXES: dict[str, list[Any]] = {
    "tp-size": [1, 2, 4, 8],
    "dp-size": [1, 2, 4],
    "pp-size": [1, 2],
    "attn-dp-size": [1, 2, 4, 8],
    "chunked-prefill-size": [-1, 2048, 4096, 8191, 8192, 16384],
    "page-size": [1, 16, 32, 64, 128],
    "max-running-requests": [8, 64, 256, 1024],
    "mem-fraction-static": [0.5, 0.8, 0.88],
    "attention-backend": ["flashinfer", "fa3", "triton", "torch_native", "flashmla", "trtllm_mha"],
    "disable-radix-cache": [True, False],
    "enable-hierarchical-cache": [True, False],
    "speculative": [
        {
            "speculative-algorithm": "EAGLE",
            "speculative-draft-model-path": "llama-3.1-8b",
            "speculative-num-steps": 3,
            "speculative-eagle-topk": 1,
            "speculative-num-draft-tokens": 4,
        },
        {
            "speculative-algorithm": "EAGLE3",
            "speculative-draft-model-path": "llama-3.1-8b",
            "speculative-num-steps": 5,
            "speculative-eagle-topk": 4,
            "speculative-num-draft-tokens": 8,
        },
        {"speculative-algorithm": "NGRAM", "speculative-num-draft-tokens": 8},
        {"speculative-algorithm": "EAGLE"},
    ],
    "lora": [
        {"enable-lora": True, "max-lora-rank": 64, "lora-target-modules": ["q_proj", "v_proj"]},
        {"enable-lora": True, "max-loras-per-batch": 4},
    ],
    "disaggregation-mode": ["null", "prefill", "decode"],
    "enable-mixed-chunk": [True, False],
    "disable-overlap-schedule": [True, False],
    "disable-decode-cuda-graph": [True, False],
    "cuda-graph-max-bs-decode": [8, 160, 512],
    "context-length": [4096, 131072, 262144],
    "kv-cache-dtype": ["auto", "fp8_e4m3", "fp8_e5m2"],
    "quantization": [None, "fp8", "awq"],
}


# The split attention backends (prefill / decode) against the page sizes, CUDA graphs,
# speculative decoding and KV dtypes they force: `generate --axes split`.
BACKENDS = ["fa3", "flashinfer", "triton", "torch_native", "flex_attention", "trtllm_mha"]
BACKENDS += ["trtllm_mla", "flashmla", "cutedsl_mla", "fa4", "hpc_ops"]
AXES_SPLIT: dict[str, list[Any]] = {
    "attention-backend": BACKENDS,
    "prefill-attention-backend": BACKENDS,
    "decode-attention-backend": BACKENDS,
    "page-size": [1, 8, 16, 32, 64, 128],
    "speculative": AXES["speculative"][:3],
    "kv-cache-dtype": ["auto", "fp8_e4m3", "fp8_e5m2"],
    "chunked-prefill-size": [2048, 8192, 8200],
    "disable-decode-cuda-graph": [True, False],
}
# The wider batch (`generate --axes wide`): PD roles with the decode radix cache and
# HiCache, deterministic inference, quantization methods (gptq included: listed by the
# parser, refused on CUDA), speculative decoding, one or split attention backends, page
# sizes, attention DP and CUDA graphs, each combination picking 1-4 of them.
WIDE_BACKENDS = ["fa3", "flashinfer", "triton", "torch_native", "trtllm_mha", "fa4"]
AXES_WIDE: dict[str, list[Any]] = {
    "tp-size": [1, 2, 4, 8],
    "attn-dp-size": [1, 2, 4],
    "pp-size": [1, 2],
    "disaggregation-mode": ["null", "prefill", "decode"],
    "disaggregation-decode-enable-radix-cache": [True, False],
    "enable-hierarchical-cache": [True, False],
    "disable-radix-cache": [True, False],
    "enable-deterministic-inference": [True, False],
    "quantization": [None, "fp8", "awq", "gptq", "gptq_marlin", "awq_marlin", "w8a8_fp8"],
    "speculative": AXES["speculative"],
    "attention-backend": WIDE_BACKENDS,
    "prefill-attention-backend": WIDE_BACKENDS,
    "decode-attention-backend": WIDE_BACKENDS,
    "page-size": [1, 16, 32, 64, 128],
    "kv-cache-dtype": ["auto", "fp8_e4m3"],
    "chunked-prefill-size": [-1, 4096, 8192],
    "disable-cuda-graph": [True, False],
    "max-running-requests": [16, 256],
}
# SGLang 0.5.16's spelling of the same axes (`generate --axes base-0.5.16` / `wide-0.5.16`,
# fields-0.5.16.yaml): attention DP is `--enable-dp-attention` over `--dp-size` (no
# `--attn-dp-size`), the decode graphs' ceiling and sizes `--cuda-graph-max-bs` and
# `--cuda-graph-bs` (AIConfigurator 0.12's flags), which 0.5.23 no longer parses
_SPELLING_0516 = {"attn-dp-size": None, "cuda-graph-max-bs-decode": "cuda-graph-max-bs"}
_AXES_0516_EXTRA: dict[str, list[Any]] = {
    "enable-dp-attention": [True, False],
    "cuda-graph-bs": [[1, 2, 4, 8], [1, 2, 4, 8, 16, 32, 64, 128, 160], [3, 5]],
}


def _axes_0516(axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, values in axes.items():
        spelled = _SPELLING_0516.get(name, name)
        if spelled is not None:
            out[spelled] = values
    out.update(_AXES_0516_EXTRA)
    if "dp-size" not in out:
        out["dp-size"] = [1, 2, 4]
    return out


# The model-hook, FP4 KV and deterministic-inference rules of 0.5.16 over other model
# families (`generate --axes models-0.5.16 --model <family>`): the attention backends the
# model hooks (gpt-oss, Llama 4, DeepSeek-V3, Gemma 2/3) restrict or pick, MLA's backends
# (cutlass_mla included, a 0.5.16 value), the KV dtypes (fp4_e2m1, 0.5.16's FP4 KV),
# deterministic inference and page sizes, each combination picking 1-4 of them.
MODEL_BACKENDS = ["fa3", "flashinfer", "triton", "torch_native", "trtllm_mha", "fa4"]
MODEL_BACKENDS += ["flashmla", "trtllm_mla", "cutlass_mla"]
AXES_MODELS_0516: dict[str, list[Any]] = {
    "tp-size": [1, 2, 4, 8],
    "attention-backend": MODEL_BACKENDS,
    "prefill-attention-backend": MODEL_BACKENDS,
    "decode-attention-backend": MODEL_BACKENDS,
    "kv-cache-dtype": ["auto", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1"],
    "enable-deterministic-inference": [True, False],
    "page-size": [1, 16, 32, 64, 128],
    "disable-radix-cache": [True, False],
    "enable-hierarchical-cache": [True, False],
    "enable-dp-attention": [True, False],
    "dp-size": [1, 2],
    "chunked-prefill-size": [-1, 4096, 8192],
}

# 0.5.16's 4-bit KV cache (`generate --axes kv4-0.5.16`): nvfp4 and fp4_mx_block16
# (server_args.py _handle_kv4_compatibility) against the attention backends of both
# phases, on MLA and MHA models
AXES_KV4_0516: dict[str, list[Any]] = {
    "kv-cache-dtype": ["nvfp4", "fp4_mx_block16", "fp4_e2m1"],
    "attention-backend": MODEL_BACKENDS + ["flex_attention"],
    "prefill-attention-backend": MODEL_BACKENDS + ["flex_attention"],
    "decode-attention-backend": MODEL_BACKENDS + ["flex_attention"],
    "page-size": [1, 64, 128],
    "enable-deterministic-inference": [True, False],
}


AXES_BY_NAME = {
    "base": AXES,
    "split": AXES_SPLIT,
    "wide": AXES_WIDE,
    "base-0.5.16": _axes_0516(AXES),
    "wide-0.5.16": _axes_0516(AXES_WIDE),
    "models-0.5.16": AXES_MODELS_0516,
    "kv4-0.5.16": AXES_KV4_0516,
}


def _materialise(args: dict[str, Any], model: str = "llama-3.1-8b") -> dict[str, Any]:
    out = {}
    for key, value in args.items():
        if key == "speculative-draft-model-path" and not Path(str(value)).is_dir():
            value = str(model_folder(value if value in MODELS else model))
        if value is None:
            continue
        out[key] = value
    return out


def run_generated(
    count: int,
    seed: int,
    gpu: str,
    axes: str = "base",
    release: str | None = None,
    model: str = "llama-3.1-8b",
    tp: int | None = None,
) -> dict[str, Any]:
    """`tp`: a tensor-parallel width every argument set writes (and the `tp-size` axis
    dropped), so that a large model's weights fit the GPUs: the CPU oracle stops before
    the model load that would refuse them."""
    version = _version()
    if release is not None and release != version:
        raise SystemExit(
            f"--release {release} asked for, but this Python's sglang is {version}: "
            f"run the venv holding sglang=={release}"
        )
    results = []
    chosen = AXES_BY_NAME[axes]
    base = None
    if tp is not None:
        chosen = {k: v for k, v in chosen.items() if k != "tp-size"}
        base = {"tp-size": tp}
    for args in seeded_combinations(chosen, count, seed, base):
        verdict = resolve(_materialise(args, model), model=model, gpu=gpu)
        row = {"args": args, "gpu": gpu, **verdict}
        if model != "llama-3.1-8b":
            row["model"] = model
        results.append(row)
    return {
        "engine": "sglang",
        "version": version,
        "release": version,
        "prefill_graphs": "cuda",
        "seed": seed,
        "gpu": gpu,
        "axes": axes,
        **({"tp": tp} if tp is not None else {}),
        "results": results,
    }


def run_corpus() -> dict[str, Any]:
    results = []
    for case in load_cases(CORPUS):
        row = skipped(case)
        if row is not None:
            results.append(row)
            continue
        model = oracle_model(case)
        config = _materialise(dict(case.get("config") or {}), model)
        gpu = case.get("device") if case.get("device") in GPUS else "H100"
        verdict = resolve(
            config,
            model=model,
            gpu=gpu,
            gpus=case.get("gpus", 1),
            pool_tokens=case.get("kv_pool_tokens"),
        )
        results.append({"id": case["id"], "expected": case["verdict"], **verdict})
    return {
        "engine": "sglang",
        "version": _version(),
        "release": _version(),
        "prefill_graphs": "cuda",
        "results": results,
    }


def derived_defaults_table(version: str) -> list[dict[str, Any]]:
    """What SGLang derives from GPU memory and TP size, by running its resolution."""
    install_cpu_shims()
    rows: dict[str, list[dict[str, Any]]] = {
        "chunked_prefill_size": [],
        "cuda_graph_max_bs": [],
        "mem_fraction_static": [],
    }
    for gpu in ("A10", "A100-40GB", "L40S", "H100", "H200", "B200"):
        for tp in (1, 4):
            verdict = resolve({"tp-size": tp}, gpu=gpu)
            when = {
                "device": gpu,
                "memory_gib": GPUS[gpu][0],
                "tp_size": tp,
                "model": "llama-3.1-8b",
            }
            for name in rows:
                rows[name].append(
                    {
                        "when": when,
                        "value": verdict.get("derived", {}).get(name, verdict.get("message")),
                    }
                )
    source = (
        f"sglang {version}: python/sglang/srt/arg_groups/memory_hook.py handle_gpu_memory_settings"
    )
    notes = {
        "chunked_prefill_size": "GPU memory tiers <20, <35, <60, <90, <160 GiB and above: 2048, 4096, 4096, 8192, 8192, 16384",
        "cuda_graph_max_bs": "decode graph max_bs by the same tiers, larger for tp_size >= 4; capped at max_running_requests when that is set",
        "mem_fraction_static": "(gpu_mem - reserved) / gpu_mem, reserved = 512 MiB + 1.5 MiB x max(chunk, 2048) + tp x pp / 8 GiB + graph reserve, at least 10 GiB above 60 GiB",
    }
    return [
        {"field": name, "cases": cases, "source": source, "note": notes[name]}
        for name, cases in rows.items()
    ]


def _version() -> str:
    import sglang

    return sglang.__version__


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate")
    gen.add_argument("--count", type=int, default=200)
    gen.add_argument("--seed", type=int, default=7)
    gen.add_argument("--gpu", default="H100", choices=sorted(GPUS))
    gen.add_argument("--axes", default="base", choices=sorted(AXES_BY_NAME))
    gen.add_argument("--model", default="llama-3.1-8b", choices=sorted(MODELS))
    gen.add_argument(
        "--release",
        default=None,
        help="the SGLang release the records are for (must be this venv's sglang; "
        "recorded as the batch's `release`)",
    )
    gen.add_argument("--tp", type=int, default=None, help="tp-size every set writes")
    gen.add_argument("--out", default=str(CORPUS / "oracle" / "generated.json"))
    cor = sub.add_parser("corpus")
    cor.add_argument("--out", default=str(CORPUS / "oracle" / "corpus.json"))
    opts = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    install_cpu_shims()
    payload = (
        run_generated(opts.count, opts.seed, opts.gpu, opts.axes, opts.release, opts.model, opts.tp)
        if opts.command == "generate"
        else run_corpus()
    )
    write_results(Path(opts.out), payload)
    counts: dict[str, int] = {}
    for row in payload["results"]:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    print(f"{len(payload['results'])} argument sets: {counts} -> {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
