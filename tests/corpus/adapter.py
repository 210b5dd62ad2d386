"""Arbiter's verdict on a corpus case, through whatever the code base offers.

The TensorRT-LLM verdict comes from `arbiter.dialects.trtllm.check_trtllm(config, *,
serve_args, model, device, gpus, profile) -> Verdict` when the dialect provides it. Until
then it comes from today's path: the dialect's loading functions (`trtllm.read`,
`machine_claims`) and `arbitrate()`, with the case's trtllm-serve flags merged under its
YAML the way trtllm-serve merges them (the YAML wins), and the release profiles mapped
onto the profiles that exist today. MLC cases go through `mlc.read` and `arbitrate()`.

The verdict is "accept" (solved, nothing given way), "adjust" (solved, but a default
claim was dropped or a default rule overridden), "reject" (bad input or a conflict), or
"error" when arbiter cannot even state the facts of the case (an unknown device, a model
it cannot read): our failure, never agreement.
"""

from __future__ import annotations

import inspect
import json
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arbiter.errors import ConflictError, InvalidClaim

from .cases import Case

# release line of a case -> the profile that stands for it while the dialect lacks it
PROFILE_TODAY = {
    "trtllm-1.0": "trtllm-1.2",
    "trtllm-1.2": "trtllm-1.2",
    "trtllm-tensorrt": "trtllm-tensorrt",
    "trtllm-main": "trtllm-1.2",
    "mlc": "mlc",
}
# trtllm-serve options (tensorrt_llm/commands/serve.py) -> the LLM-API argument they set
SERVE_OPTIONS = {
    "--tp_size": "tensor_parallel_size",
    "--tensor_parallel_size": "tensor_parallel_size",
    "--pp_size": "pipeline_parallel_size",
    "--pipeline_parallel_size": "pipeline_parallel_size",
    "--cp_size": "context_parallel_size",
    "--context_parallel_size": "context_parallel_size",
    "--ep_size": "moe_expert_parallel_size",
    "--moe_expert_parallel_size": "moe_expert_parallel_size",
    "--cluster_size": "moe_cluster_parallel_size",
    "--moe_cluster_parallel_size": "moe_cluster_parallel_size",
    "--max_batch_size": "max_batch_size",
    "--max_num_tokens": "max_num_tokens",
    "--max_seq_len": "max_seq_len",
    "--max_beam_width": "max_beam_width",
    "--kv_cache_free_gpu_memory_fraction": "kv_cache_config.free_gpu_memory_fraction",
    "--free_gpu_memory_fraction": "kv_cache_config.free_gpu_memory_fraction",
    "--backend": "backend",
    "--num_postprocess_workers": "num_postprocess_workers",
    "--gpus_per_node": "gpus_per_node",
}
SERVE_SWITCHES = {
    "--trust_remote_code": "trust_remote_code",
    "--enable_chunked_prefill": "enable_chunked_prefill",
}
SERVER_ONLY = {"--host", "--port", "--log_level", "--tokenizer", "--reasoning_parser"}
# what the engine would refuse: bad input or a conflict (an internal error is a bug, raised)
REFUSALS = (InvalidClaim, ConflictError)


@dataclass(frozen=True)
class Outcome:
    """Arbiter's verdict on a case, its reasons, and which path produced it."""

    verdict: str
    reasons: tuple[str, ...]
    via: str


def our_verdict(case: Case) -> Outcome:
    """Arbiter's verdict on `case`."""
    if case.engine == "mlc":
        return _mlc(case)
    check = check_trtllm()
    if check is not None:
        return _via_check(check, case)
    return _trtllm_today(case)


def check_trtllm() -> Callable[..., Any] | None:
    """The dialect's `check_trtllm`, or None while it does not exist."""
    from arbiter.dialects import trtllm

    return getattr(trtllm, "check_trtllm", None)


def profile_today(name: str) -> str:
    """The case's release line if arbiter has a profile of that name, else its stand-in."""
    from constraints.profiles import PROFILES

    return name if name in PROFILES else PROFILE_TODAY[name]


def serve_options(serve_args: str | None) -> dict[str, Any]:
    """trtllm-serve flags -> LLM-API arguments (dotted keys nest); unknown flags are
    refused as trtllm-serve refuses them."""
    out: dict[str, Any] = {}
    tokens = shlex.split(serve_args or "")
    i = 0
    while i < len(tokens):
        flag = tokens[i]
        if flag in SERVE_SWITCHES:
            _put(out, SERVE_SWITCHES[flag], True)
            i += 1
            continue
        if flag not in SERVE_OPTIONS and flag not in SERVER_ONLY:
            raise UnknownServeOption(flag)
        if i + 1 >= len(tokens):
            raise UnknownServeOption(flag, "needs a value")
        if flag in SERVE_OPTIONS:
            _put(out, SERVE_OPTIONS[flag], yaml.safe_load(tokens[i + 1]))
        i += 2
    return out


class UnknownServeOption(ValueError):
    """A trtllm-serve flag that does not exist (or lacks its value)."""

    def __init__(self, flag: str, reason: str = "no such trtllm-serve option"):
        super().__init__(f"{flag}: {reason}")
        self.flag = flag


def merged_config(case: Case) -> dict[str, Any]:
    """The LLM-API arguments trtllm-serve hands the engine: its flags, then the YAML on
    top (serve.py merges the YAML last), one level deep for nested sections."""
    out = serve_options(case.serve_args)
    for key, value in case.config.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------------------- paths
def _via_check(check: Callable[..., Any], case: Case) -> Outcome:
    from arbiter.dialects import machine_claims
    from constraints.profiles import PROFILES

    # facts or a profile arbiter lacks are our failure, not the engine refusing
    if case.profile not in PROFILES:
        return Outcome("error", (f"no profile {case.profile!r}",), "check_trtllm")
    try:
        machine_claims(case.model_path, case.device)
    except REFUSALS as exc:
        return Outcome("error", (f"facts of the case: {exc}",), "check_trtllm")
    params = inspect.signature(check).parameters
    kwargs: dict[str, Any] = {
        "serve_args": case.serve_args,
        "model": case.model_path,
        "device": case.device,
        "gpus": case.gpus,
        "profile": case.profile,
    }
    if case.prebuilt_engine is not None:
        if "engine" not in params:
            return Outcome("error", ("check_trtllm takes no prebuilt engine",), "check_trtllm")
        kwargs["engine"] = dict(case.prebuilt_engine)  # the engine's config.json
    try:
        verdict = check(dict(case.config), **kwargs)
    except REFUSALS as exc:  # bad input raised rather than returned
        return Outcome("reject", (str(exc),), "check_trtllm")
    reasons = tuple(str(r) for r in getattr(verdict, "reasons", ()) or ())
    reasons += tuple(str(c) for c in getattr(verdict, "changes", ()) or ())
    return Outcome(str(verdict.verdict), reasons, "check_trtllm")


def _trtllm_today(case: Case) -> Outcome:
    from arbiter.dialects import machine_claims, trtllm

    via = "trtllm.read+arbitrate"
    try:
        facts = machine_claims(case.model_path, case.device)
    except REFUSALS as exc:
        return Outcome("error", (f"facts of the case: {exc}",), via)
    try:
        config = merged_config(case)
    except UnknownServeOption as exc:
        return Outcome("reject", (str(exc),), via)
    config.setdefault("backend", case.backend)
    with tempfile.TemporaryDirectory() as tmp:
        engine = None
        if case.prebuilt_engine is not None:
            engine = _engine_dir(case.prebuilt_engine, Path(tmp))
        try:
            parsed = trtllm.read(config, engine=engine)
        except REFUSALS as exc:
            return Outcome("reject", (str(exc),), via)
    return _solve([*parsed.claims, *facts], profile_today(case.profile), None, via)


def _mlc(case: Case) -> Outcome:
    from arbiter import setup
    from arbiter.dialects import machine_claims, mlc

    via = "mlc.read+arbitrate"
    device = f"{case.gpus}x{case.device}" if case.device and case.gpus > 1 else case.device
    try:
        facts = machine_claims(case.model_path, device)
        if case.device is None and case.gpus > 1:
            facts.append(setup("gpus", {"device.count": case.gpus}))
    except REFUSALS as exc:
        return Outcome("error", (f"facts of the case: {exc}",), via)
    try:
        parsed = mlc.read(dict(case.config))
    except REFUSALS as exc:
        return Outcome("reject", (str(exc),), via)
    refused = mlc.refusals(case.config, _architecture(facts))
    if refused:
        return Outcome("reject", tuple(refused), via)
    return _solve([*parsed.claims, *facts], parsed.profile, parsed.mode, via)


def _architecture(facts: list[Any]) -> str | None:
    """model.architecture as the model's setup claim pins it (None without a model)."""
    from arbiter.capacity import equalities

    for claim in facts:
        value = equalities(claim.expr).get("model.architecture")
        if value is not None:
            return str(value)
    return None


def _solve(claims: list[Any], profile: str, mode: str | None, via: str) -> Outcome:
    from arbiter.solve import arbitrate

    try:
        resolution = arbitrate(claims, profile=profile, mode=mode)
    except REFUSALS as exc:
        return Outcome("reject", (str(exc).splitlines()[0],), via)
    given_way = [f"dropped {d.name}: {d.reason}" for d in resolution.dropped]
    given_way += [f"overridden default rule {r}" for r in resolution.overridden_defaults]
    return Outcome("adjust" if given_way else "accept", tuple(given_way), via)


def _put(out: dict[str, Any], dotted: str, value: Any) -> None:
    head, _, rest = dotted.partition(".")
    if rest:
        out.setdefault(head, {})[rest] = value
    else:
        out[head] = value


def _engine_dir(config: Mapping[str, Any], tmp: Path) -> Path:
    folder = tmp / "engine"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


__all__ = [
    "Outcome",
    "UnknownServeOption",
    "check_trtllm",
    "merged_config",
    "our_verdict",
    "profile_today",
]
