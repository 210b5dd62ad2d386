"""MLC LLM's front door: the serving `EngineConfig` JSON read into claims on the `mlc`
profile (its `mode` passed to arbitration, so unset batch, prefill chunk and KV capacity
are inferred as MLC does), written back as MLC JSON, judged in MLC's words.

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

from typing import Any

from constraints.profiles import Profile

from ...dialects._base import load_mapping
from ...dialects.pack import PackDialect
from ...dialects.protocol import Machine, Reading
from ...errors import DialectError
from ...resolution import Resolution
from . import native as native


class MlcDialect(PackDialect):
    """The MLC dialect (see the package docstring)."""

    name = "mlc"
    default_profile = "mlc"
    format = "json"
    reads_serve_args = False

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

    def write_native(self, resolution: Resolution, reading: Reading) -> dict[str, Any]:
        parsed = reading.native
        return native.write(resolution, parsed.mode, parsed.native.passthrough)


DIALECT = MlcDialect()

__all__ = ["DIALECT", "MlcDialect"]
