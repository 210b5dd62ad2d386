"""Check an existing engine configuration: read it through its dialect, arbitrate the
claims, and write the solved configuration back in the dialect's own shape.

The command line (`arbiter check`) and the service (`POST /v1/check`) both call
`check_parsed`; `not_arbitrated` and `notes` describe what the dialect did not arbitrate
and what it adjusted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..claims import setup
from ..dialects import machine_claims, mlc, sglang, trtllm, vllm
from ..dialects._base import with_count
from ..errors import InvalidClaim
from ..solve import arbitrate


def check_file(
    file: Path | dict[str, Any] | None,
    dialect: str,
    *,
    model: Path | dict[str, Any] | None = None,
    device: str | None = None,
    engine: Path | None = None,
    time_limit_s: float | None = None,
    profile: str | None = None,
    serve_args: str | None = None,
    gpus: int = 1,
) -> tuple[Any, Any, str]:
    """Read, arbitrate and write back: (resolution, config in the dialect's shape, format).

    `file` and `model` may also be already-parsed mappings (the HTTP service passes them).
    `profile` overrides the dialect's release line (trtllm: trtllm-1.2; the trtllm dialect
    moves it to the TensorRT-engine line for `backend: tensorrt` or an engine folder; mlc: mlc).
    Raises the arbiter's errors (ConflictError, InvalidClaim)."""
    resolution, config, fmt, _ = check_parsed(
        file,
        dialect,
        model=model,
        device=device,
        engine=engine,
        time_limit_s=time_limit_s,
        profile=profile,
        serve_args=serve_args,
        gpus=gpus,
    )
    return resolution, config, fmt


def check_parsed(
    file: Path | dict[str, Any] | None,
    dialect: str,
    *,
    model: Path | dict[str, Any] | None = None,
    device: str | None = None,
    engine: Path | None = None,
    time_limit_s: float | None = None,
    profile: str | None = None,
    serve_args: str | None = None,
    gpus: int = 1,
) -> tuple[Any, Any, str, Any]:
    """`check_file` plus the dialect's reading (for what was not arbitrated).

    `gpus` is the number of GPUs of `device` the server runs on (a fact no solve changes)."""
    if dialect == "sglang":
        resolution, parsed = sglang.solve(
            file,
            serve_args=serve_args,
            model=model,
            device=device,
            gpus=gpus,
            profile=profile or sglang.PROFILE,
            time_limit_s=time_limit_s,
        )
        return resolution, sglang.write(resolution, parsed), "yaml", parsed
    device = with_count(device, gpus)
    if dialect == "trtllm":
        parsed = trtllm.read(file, engine=engine, serve_args=serve_args, profile=profile)
    elif dialect == "vllm":
        parsed = vllm.read(
            file, serve_args, profile or vllm.DEFAULT_PROFILE, device=device, model=model
        )
        profile = parsed.profile
    elif serve_args is not None:
        raise InvalidClaim(
            "--serve-args is for the trtllm, vllm and sglang dialects", value=serve_args
        )
    elif file is None:
        raise InvalidClaim("an MLC check needs a FILE", value=None)
    elif dialect == "mlc":
        parsed = mlc.read(file)
    else:
        raise InvalidClaim(
            f"unknown dialect {dialect!r}; use trtllm, vllm, sglang or mlc", value=dialect
        )
    claims = [*parsed.claims, *machine_claims(model, device, parsed.claims)]
    if device is None and gpus > 1:
        claims.append(setup("gpus", {"device.count": gpus}))
    if dialect == "trtllm":  # the dialect picked the line: the profile's, on the input's backend
        profile = parsed.profile
    resolution = arbitrate(
        claims, profile=profile or parsed.profile, mode=parsed.mode, time_limit_s=time_limit_s
    )
    if dialect == "trtllm":
        return resolution, trtllm.write(resolution, parsed), "yaml", parsed
    if dialect == "vllm":
        return resolution, vllm.write(resolution, parsed), "yaml", parsed
    return resolution, mlc.write(resolution, parsed.mode, parsed.extra), "json", None


def derived_defaults(parsed: Any) -> list[tuple[str, str]]:
    """(engine, setting) for each default the engine derives itself (vLLM's budget...)."""
    if parsed is None:
        return []
    engine = {"vllm-": "vLLM", "sglang-": "SGLang"}
    name = next((v for k, v in engine.items() if str(parsed.profile).startswith(k)), "engine")
    return [(name, str(d)) for d in parsed.extra.get("defaults", [])]


def not_arbitrated(parsed: Any) -> dict[str, str]:
    """Fields written back as given, with why (TensorRT-LLM and SGLang; empty otherwise)."""
    if parsed is None:
        return {}
    if "carried" in parsed.extra:  # sglang
        return dict(parsed.extra["carried"])
    return trtllm.not_arbitrated(parsed)


def notes(parsed: Any) -> list[str]:
    """The dialect's own adjustments, one line each."""
    return list(parsed.extra.get("notes", [])) if parsed is not None else []
