"""vLLM's front door: `vllm serve` arguments (the `--config` YAML and/or the command line)
read into claims on the `vllm-0.33` profile, written back in the same YAML, judged in
vLLM's words. Reading, writing and judging run under the profile's release line (the
field list and defaults of that vLLM release).

The pack's `Dialect` object (`DIALECT`), which the registry imports on first use.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from constraints.profiles import Profile

from ...dialects.pack import PackDialect
from ...dialects.protocol import Machine, Reading
from . import native as native
from .fields import release_line


class VllmDialect(PackDialect):
    """The vLLM dialect (see the package docstring)."""

    name = "vllm"
    default_profile = native.DEFAULT_PROFILE

    def release(self, profile: str | Profile) -> AbstractContextManager[object]:
        return release_line(profile.name if isinstance(profile, Profile) else str(profile))

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
        with self.release(profile or self.default_profile):
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


DIALECT = VllmDialect()

__all__ = ["DIALECT", "VllmDialect"]
