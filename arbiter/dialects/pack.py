"""What the engine packs' dialects share: `PackDialect`, the base of each pack's `Dialect`
object. A pack names itself (its `name` is its registry entry, whose label it speaks),
its default profile and the format it writes, and says which inputs it reads; it then
writes `read`. Writing and judging are the pack's role modules (`native.write`,
`judge.judge`) unless it overrides `write_native` or `judge_native`. The base refuses the inputs the engine
has no use for (a prebuilt engine folder, serve arguments) naming the dialect that takes
them, runs writing and judging under the pack's `release` context (vLLM's release line),
and has no second solve unless the pack's `refine` says so (SGLang's).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from constraints.profiles import Profile

from ..errors import DialectError
from . import DIALECTS
from .protocol import Arbitration, Reading, Written

if TYPE_CHECKING:
    from ..claims import AnyClaim
    from ..resolution import Resolution
    from .verdict import Verdict


class PackDialect:
    """One engine pack's front door (see the module docstring)."""

    name: str  # the registry entry's name
    default_profile: str
    format: str = "yaml"  # what `write` gives: "yaml" or "json"
    reads_serve_args: bool = True  # a serving command line (`--serve-args`)
    reads_engine: bool = False  # a prebuilt engine folder

    @property
    def label(self) -> str:
        """The engine as its users name it (its registry entry's label)."""
        return DIALECTS.label(self.name)

    def refuse_unread(self, *, serve_args: str | None, engine: Any) -> None:
        """Raise DialectError for an input this engine does not take, naming the input
        and, for an engine folder, the dialect that reads one."""
        if serve_args is not None and not self.reads_serve_args:
            raise DialectError(
                f"{self.label} takes no serve arguments: give {_config(self.name)}",
                key="serve_args",
                value=serve_args,
            )
        if engine is not None and not self.reads_engine:
            takers = [n for n, e in DIALECTS.entries.items() if e.prebuilt and n != self.name]
            whose = f" (that is the {' or '.join(takers)} dialect's)" if takers else ""
            raise DialectError(
                f"{self.label} takes no prebuilt engine folder{whose}",
                key="engine",
                value=str(engine),
            )

    def release(self, profile: str | Profile) -> AbstractContextManager[object]:
        """The context the pack's writing and judging run in for `profile` (none here)."""
        return nullcontext()

    def write_native(self, resolution: Resolution, reading: Reading) -> dict[str, Any]:
        """The resolution as the engine's own config: the pack's `native.write(resolution,
        reading.native)` unless the pack says otherwise."""
        written: dict[str, Any] = DIALECTS.part(self.name, "native").write(
            resolution, reading.native
        )
        return written

    def judge_native(
        self, reading: Reading, outcome: Arbitration, written: Written | None
    ) -> Verdict:
        """The engine's verdict in its own words: the pack's `judge.judge`."""
        verdict: Verdict = DIALECTS.part(self.name, "judge").judge(reading, outcome, written)
        return verdict

    def write(self, resolution: Resolution, reading: Reading) -> Written:
        with self.release(reading.profile):
            return Written(self.write_native(resolution, reading), self.format)

    def judge(self, reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
        with self.release(reading.profile):
            return self.judge_native(reading, outcome, written)

    def refine(self, reading: Reading, resolution: Resolution) -> list[AnyClaim] | None:
        """No second solve: the first resolution stands (a pack may override)."""
        return None


def _config(name: str) -> str:
    return DIALECTS.entries[name].config_label or "its config file"


__all__ = ["PackDialect"]
