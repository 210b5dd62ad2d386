"""SGLang's front door: `ServerArgs` fields (SGLang's `--config` YAML and launch command
line) read into claims on an SGLang profile (`sglang-0.5.23`, `sglang-0.5.16`: each
release's own field list), with what SGLang derives for the fields left unset; written
back in the same YAML; judged in SGLang's words. SGLang sizes its running requests from
the KV pool once the pool is known: `refine` is that second solve.

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from constraints.domains import IntDomain
from constraints.profiles import Profile
from constraints.schema import lookup

from ...check import check_reading
from ...claims import AnyClaim, func
from ...dialects._base import DialectInput
from ...dialects.pack import PackDialect
from ...dialects.protocol import Machine, Reading
from ...errors import DialectError
from ...resolution import Resolution
from . import native as native
from .defaults import derived_claims, unset_claims
from .memory import vision_tower
from .record import NativeSglang
from .report import BATCH, pool_requests
from .serve import Arguments


class SglangDialect(PackDialect):
    """The SGLang dialect (see the package docstring)."""

    name = "sglang"
    default_profile = native.PROFILE

    def read(
        self,
        source: Any,
        *,
        serve_args: str | None = None,
        machine: Machine,
        profile: str | Profile | None = None,
        engine: Any = None,
    ) -> Reading:
        self.refuse_unread(serve_args=serve_args, engine=engine)
        parsed = native.read(source, serve_args=serve_args, profile=profile or native.PROFILE)
        args: Arguments = parsed.native.arguments
        nodes = native._nodes(args)
        machine = machine.on_nodes(nodes, native._gpus_source(nodes))
        vision = vision_tower(machine.model)
        derived = derived_claims(parsed, machine.model, machine.device, vision)
        parsed.native.derived = derived
        claims = [*parsed.claims, *derived, *unset_claims(parsed)]
        return Reading(
            self.name,
            claims,
            parsed.profile,
            machine,
            source=parsed.source,
            given=dict(parsed.native.input),
            carried=dict(parsed.native.carried),
            asked=list(parsed.claims),
            native=parsed,
        )

    def write_native(self, resolution: Resolution, reading: Reading) -> dict[str, Any]:
        parsed = reading.native
        if reading.refined and parsed.native.pending is not None:
            parsed.native.rewritten = parsed.native.pending
        return native.write(resolution, parsed)

    def refine(self, reading: Reading, resolution: Resolution) -> list[AnyClaim] | None:
        """The running requests SGLang sizes from its KV pool (`resolve_max_num_reqs`, once
        the pool is known: model and device given): an unset `max_running_requests` gets
        the pool-derived value, an explicit one above what the pool holds is lowered to it
        (SGLang logs "max_running_requests was reduced from the requested ..."; the verdict
        says so as an adjustment). The claims of one more solve with that value pinned;
        the pool itself does not depend on it (kv = total x fraction - weights), so the
        second solve is the fixed point. None: the first resolution stands."""
        args: Arguments = reading.native.native.arguments
        running = pool_requests(resolution, args)
        if running is None or running.total == resolution.values[BATCH]:
            return None
        domain = lookup(BATCH).domain
        if isinstance(domain, IntDomain) and running.total > domain.hi:
            return None  # beyond the option's domain: reported only
        pinned = [c for c in reading.solved_claims() if c.name != "sglang.max_running_requests"]
        pinned.append(
            func(
                "sglang.derived.max_running_requests", {BATCH: running.total}, source=running.source
            )
        )
        if running.reduced:
            reading.native.native.pending = {"max_running_requests": running.total}
        return pinned


DIALECT = SglangDialect()


def solve(
    config: Mapping[str, Any] | str | Path | None,
    *,
    serve_args: str | None = None,
    model: Any = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile = native.PROFILE,
    time_limit_s: float | None = None,
) -> tuple[Resolution, DialectInput[NativeSglang]]:
    """The check pipeline's solve for SGLang (read, what SGLang derives, the machine facts,
    arbitrate, the running requests sized from the pool): (resolution, parsed).
    `parsed.native` gains `adjustments` (explicit values SGLang rewrites, with the rule),
    `derivations` (what it derives for unset fields) and `notes` (both, for reports).
    Raises SglangArgsError / DialectError for bad input and ConflictError when the
    configuration cannot hold (its `not_arbitrated` lists the carried fields)."""
    machine = Machine.read(model, device, gpus)
    reading = DIALECT.read(config, serve_args=serve_args, machine=machine, profile=profile)
    verdict = check_reading(DIALECT, reading, time_limit_s)
    if verdict.conflict is not None:
        verdict.conflict.not_arbitrated = dict(reading.carried)  # type: ignore[attr-defined]
        raise verdict.conflict
    if verdict.resolution is None:
        raise DialectError("; ".join(verdict.reasons), file=reading.source)
    return verdict.resolution, reading.native


__all__ = ["DIALECT", "SglangDialect", "solve"]
