"""MLC LLM's front door: the serving `EngineConfig` JSON read into claims on the `mlc`
profile (its `mode` passed to arbitration, so unset batch, prefill chunk and KV capacity
are inferred as MLC does), written back as MLC JSON, judged in MLC's words.

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

from typing import Any

from constraints.profiles import Profile

from ...claims import AnyClaim
from ...dialects._base import load_mapping
from ...dialects.protocol import Arbitration, Machine, Reading, Written
from ...dialects.verdict import Verdict
from ...errors import DialectError
from ...resolution import Resolution
from . import native as native
from .judge import judge


class MlcDialect:
    """The MLC dialect (see the package docstring)."""

    name = "mlc"
    label = "MLC LLM"
    default_profile = "mlc"

    def read(
        self,
        source: Any,
        *,
        serve_args: str | None = None,
        machine: Machine,
        profile: str | Profile | None = None,
        engine: Any = None,
    ) -> Reading:
        if serve_args is not None:
            raise DialectError(
                "MLC takes no serve arguments: give its EngineConfig JSON",
                key="serve_args",
                value=serve_args,
            )
        if engine is not None:
            raise DialectError(
                "MLC takes no prebuilt engine folder (that is the trtllm dialect's)",
                key="engine",
                value=str(engine),
            )
        if source is None:
            raise DialectError("an MLC check needs a FILE (its EngineConfig JSON)", key="file")
        data, _ = load_mapping(dict(source) if isinstance(source, dict) else source, "mlc")
        parsed = native.read(source)
        facts = machine.model.facts() if machine.model is not None else {}
        architecture = facts.get("model.architecture")
        return Reading(
            self.name,
            parsed.claims,
            profile or parsed.profile,
            machine,
            source=parsed.source,
            mode=parsed.mode,
            given=data,
            refusals=native.refusals(data, None if architecture is None else str(architecture)),
            native=parsed,
        )

    def write(self, resolution: Resolution, reading: Reading) -> Written:
        parsed = reading.native
        return Written(native.write(resolution, parsed.mode, parsed.native.passthrough), "json")

    def judge(self, reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
        return judge(reading, outcome, written)

    def refine(self, reading: Reading, resolution: Resolution) -> list[AnyClaim] | None:
        return None


DIALECT = MlcDialect()

__all__ = ["DIALECT", "MlcDialect"]
