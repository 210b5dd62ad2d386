"""vLLM's front door: `vllm serve` arguments (the `--config` YAML and/or the command line)
read into claims on the `vllm-0.33` profile, written back in the same YAML, judged in
vLLM's words.

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

from typing import Any

from constraints.profiles import Profile

from ...claims import AnyClaim
from ...dialects.protocol import Arbitration, Machine, Reading, Written
from ...dialects.verdict import Verdict
from ...errors import DialectError
from ...resolution import Resolution
from . import native as native
from .fields import release_line
from .judge import judge


class VllmDialect:
    """The vLLM dialect (see the package docstring)."""

    name = "vllm"
    label = "vLLM"
    default_profile = native.DEFAULT_PROFILE

    def read(
        self,
        source: Any,
        *,
        serve_args: str | None = None,
        machine: Machine,
        profile: str | Profile | None = None,
        engine: Any = None,
    ) -> Reading:
        if engine is not None:
            raise DialectError(
                "vLLM takes no prebuilt engine folder (that is the trtllm dialect's)",
                key="engine",
                value=str(engine),
            )
        line = profile.name if isinstance(profile, Profile) else profile
        with release_line(line or self.default_profile):
            parsed = native.read(
                source,
                serve_args,
                profile or self.default_profile,
                device=machine.device,
                model=machine.model,
            )
        return Reading(
            self.name,
            parsed.claims,
            parsed.profile,
            machine,
            source=parsed.source,
            given=dict(parsed.native.input),
            carried=dict(parsed.native.reading.carried),
            notes=list(parsed.native.notes),
            derived_defaults=[str(d) for d in parsed.native.defaults],
            native=parsed,
        )

    def write(self, resolution: Resolution, reading: Reading) -> Written:
        with release_line(_name(reading.profile)):
            return Written(native.write(resolution, reading.native), "yaml")

    def judge(self, reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
        with release_line(_name(reading.profile)):
            return judge(reading, outcome, written)

    def refine(self, reading: Reading, resolution: Resolution) -> list[AnyClaim] | None:
        return None


def _name(profile: str | Profile) -> str:
    return profile.name if isinstance(profile, Profile) else str(profile)


DIALECT = VllmDialect()

__all__ = ["DIALECT", "VllmDialect"]
