"""Check an existing engine configuration for a front end: the machine read once, then
`arbiter.check` (the one pipeline); `report_lines` are the text report's lines. The JSON
both doors answer is the verdict report (`arbiter.application.check_report`).

`check_file` is the same check answering (resolution, written config, format) and
raising the verdict's reject as an error (ConflictError, EngineRefusal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..check import check
from ..dialects.protocol import Machine
from ..dialects.verdict import Verdict
from ..errors import EngineRefusal


def check_verdict(
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
    words: bool = True,
) -> Verdict:
    """The verdict on `file` (a path, or an already-parsed mapping as the service passes
    it) through the dialect named; `model`, `device` and `gpus` are read once into the
    machine; `words` as `arbiter.check.check`. Raises the arbiter's errors for bad input
    (exit 2)."""
    machine = Machine.read(model, device, gpus)
    return check(
        dialect,
        file,
        serve_args=serve_args,
        machine=machine,
        profile=profile,
        engine=engine,
        time_limit_s=time_limit_s,
        words=words,
    )


def raise_reject(verdict: Verdict) -> None:
    """Raise a reject verdict as its error: the conflict, or the engine's refusal."""
    if verdict.verdict != "reject":
        return
    if verdict.conflict is not None:
        raise verdict.conflict
    if verdict.error is not None:
        raise verdict.error
    raise EngineRefusal(verdict.reasons, verdict.rules)


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

    `profile` overrides the dialect's release line (trtllm: trtllm-1.2; the trtllm dialect
    moves it to the TensorRT-engine line for `backend: tensorrt` or an engine folder; mlc: mlc).
    Raises the arbiter's errors (ConflictError, EngineRefusal, InvalidClaim)."""
    verdict = check_verdict(
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
    raise_reject(verdict)
    return verdict.resolution, verdict.config, verdict.format


def report_lines(verdict: Verdict) -> list[str]:
    """The text report under the written configuration, one line each (without `# `)."""
    resolution = verdict.resolution
    out = [f"verdict: {verdict.verdict}", "changes"]
    if resolution is not None:
        out += [f"  {c}  ({resolution.provenance(c.path)})" for c in resolution.changes]
        out += [f"dropped {d.name}: {d.reason}" for d in resolution.dropped]
        out += [f"overridden default rule {r}" for r in resolution.overridden_defaults]
    out += verdict.lines()[1:]
    if resolution is not None:
        out.append(f"capacity: {resolution.capacity}")
    out.append(f"profile: {verdict.profile}")
    return out
