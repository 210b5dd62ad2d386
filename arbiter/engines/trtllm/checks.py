"""The TensorRT-LLM engine's own checks on a whole LLM-API config that no option models.

Each check re-states one upstream validator (a pydantic model validator, the parallel
mapping, the PyTorch executor's creation) in arbiter's words with its source, and names
the release line and backend it holds for. `refusals()` lists what the engine raises for;
`rewrites()` lists what it changes silently (a warning, a fallback), which makes the
verdict "adjust". Both read the merged LLM arguments as given (`NativeTrtllm.input`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

LLM_ARGS_1_2 = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py, the stored 139,423-character "
    "version the 1.2 field list is read from"
)
EXECUTOR = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/py_executor_creator.py "
    "@000429d57d42ecc8d481e5cdf653fff238be5974 (create_py_executor)"
)
EXECUTOR_1_0 = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/py_executor_creator.py, the stored "
    "21,352-character version of the 1.0 line (create_py_executor; LoraConfig still from "
    "lora_manager)"
)
MAPPING = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/mapping.py @05ebebb2c1d34320db9019f2b7ace6009a67e997 "
    "(Mapping.__init__)"
)
BOTH = ("pytorch", "tensorrt")
DRAFT_MODEL_TYPES = {"Eagle": "EAGLE", "Eagle3": "EAGLE", "Draft_Target": "DraftTarget"}


@dataclass(frozen=True)
class Check:
    """One engine check: what it tests, where it holds, and its source."""

    id: str
    source: str
    test: Callable[[Mapping[str, Any]], str | None]  # the engine's words, or None
    since: str = "1.0"
    backends: tuple[str, ...] = ("pytorch",)
    until: str | None = None  # the last release line the source shows it in

    def applies(self, release: str, backend: str) -> bool:
        if self.until is not None and _key(release) > _key(self.until):
            return False
        return backend in self.backends and _key(release) >= _key(self.since)


def _spec(args: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = args.get("speculative_config")
    return spec if isinstance(spec, Mapping) else {}


def _draft_model(args: Mapping[str, Any]) -> str | None:
    spec = _spec(args)
    kind = DRAFT_MODEL_TYPES.get(str(spec.get("decoding_type")))
    if kind is None:
        return None
    if spec.get("speculative_model") is None and spec.get("speculative_model_dir") is None:
        if kind == "EAGLE":
            return "Draft model must be provided for EAGLE"
        return "speculative_model must be specified for DraftTarget"
    return None


def _static_and_dynamic_tree(args: Mapping[str, Any]) -> str | None:
    spec = _spec(args)
    if spec.get("decoding_type") not in ("Eagle", "Eagle3"):
        return None
    if spec.get("eagle_choices") is not None and spec.get("use_dynamic_tree"):
        return "If eagle_choices is provided, use_dynamic_tree should be False"
    return None


def _cp_with_moe_ep(args: Mapping[str, Any]) -> str | None:
    cp = args.get("context_parallel_size") or 1
    ep = args.get("moe_expert_parallel_size")
    if isinstance(cp, int) and cp > 1 and isinstance(ep, int) and ep not in (1, -1):
        return "CP don't support MoE tp/ep yet"
    return None


def _guided_with_drafts(args: Mapping[str, Any]) -> str | None:
    # the LLM API builds a GuidedDecodingConfig whenever a backend is named
    if args.get("guided_decoding_backend") is not None and _spec(args):
        return "Guided decoding is not supported with speculative decoding."
    return None


def _connector(args: Mapping[str, Any]) -> bool:
    return args.get("kv_connector_config") is not None


def _connector_policy(args: Mapping[str, Any]) -> str | None:
    sched = args.get("scheduler_config")
    policy = sched.get("capacity_scheduler_policy") if isinstance(sched, Mapping) else None
    if _connector(args) and policy not in (None, "GUARANTEED_NO_EVICT"):
        return "KV connector is only supported with guaranteed no evict scheduler policy"
    return None


def _connector_vswa(args: Mapping[str, Any]) -> str | None:
    kv = args.get("kv_cache_config")
    windows = kv.get("max_attention_window") if isinstance(kv, Mapping) else None
    if _connector(args) and isinstance(windows, list) and len(set(windows)) > 1:
        return "KV connector is not supported with VSWA (Variable Sliding Window Attention)"
    return None


CHECKS: tuple[Check, ...] = (
    Check(
        "spec.draft-model-required",
        f"{LLM_ARGS_1_2}: EagleDecodingConfig.validate_speculative_model, "
        "DraftTargetDecodingConfig.validate_draft_target_config",
        _draft_model,
        since="1.2",
        backends=BOTH,  # a validator of the decoding config itself
    ),
    Check(
        "spec.eagle-static-xor-dynamic-tree",
        f"{LLM_ARGS_1_2}: EagleDecodingConfig.validate_eagle_config",
        _static_and_dynamic_tree,
        since="1.2",
        backends=BOTH,
    ),
    Check("parallel.cp-x-moe-ep", MAPPING, _cp_with_moe_ep, backends=BOTH),
    Check("kv-connector.no-evict-policy", EXECUTOR, _connector_policy),
    # later sources drop the check (guided decoding learned draft tokens); only the 1.0
    # line's executor is read, so it holds for 1.0
    Check("spec.no-guided-decoding", EXECUTOR_1_0, _guided_with_drafts, until="1.0"),
    Check("kv-connector.no-vswa", EXECUTOR, _connector_vswa, since="1.2"),
)


def refusals(args: Mapping[str, Any], release: str, backend: str) -> list[str]:
    """What the engine raises for on `args`, each with the check's id and source."""
    out = []
    for check in CHECKS:
        if not check.applies(release, backend):
            continue
        message = check.test(args)
        if message:
            out.append(f"{message} ({check.id}; {check.source})")
    return out


def rewrites(args: Mapping[str, Any], release: str, backend: str) -> list[str]:
    """What the PyTorch executor changes silently on `args` (create_py_executor)."""
    if backend != "pytorch":
        return []
    out = []
    if args.get("mm_encoder_only") and not args.get("disable_overlap_scheduler"):
        out.append(
            f"disable_overlap_scheduler: False -> True (multimodal encoder-only mode; {EXECUTOR})"
        )
    return out


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


__all__ = ["CHECKS", "Check", "refusals", "rewrites"]
