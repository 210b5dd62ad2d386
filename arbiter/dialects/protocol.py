"""The contract every engine's dialect keeps, and the records that travel through
`arbiter.check`: the machine read once at the front door (`Machine`), a dialect's typed
reading of a source (`Reading`), the written configuration (`Written`) and what
arbitration gave (`Arbitration`).

A dialect (`Dialect`) reads a source into a `Reading`, writes a resolution back in the
engine's own format, and judges the outcome in the engine's words (a `Verdict`). SGLang's
second pass (running requests sized from the KV pool) is the optional `refine`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from constraints.edge import EdgeError, check_value, show
from constraints.profiles import Profile
from constraints.specs import DeviceSpec, ModelSpec, SpecError, read_model

from ..claims import AnyClaim, setup
from ..errors import ConflictError, DialectError

if TYPE_CHECKING:
    from ..resolution import Resolution
    from .verdict import Verdict

ModelSource = str | Path | Mapping[str, Any] | ModelSpec | None


@dataclass(frozen=True)
class Machine:
    """The facts no solve changes, read once at the front door: the model's facts (None:
    not given), the device (None: not given; its `count` is the GPUs per node) and the GPU
    count. `nodes` is set by a dialect whose launch spans nodes (SGLang's `nnodes`); None
    when nothing said so. The model's config.json is parsed here, once: the dialects read
    what they need off the `ModelSpec` (its `hf_config` included)."""

    model: ModelSpec | None = None
    device: DeviceSpec | None = None
    gpus: int = 1
    nodes: int | None = None
    gpus_source: str | None = None

    @classmethod
    def read(
        cls, model: ModelSource = None, device: str | DeviceSpec | None = None, gpus: int = 1
    ) -> Machine:
        """The machine from a model config (a config.json path, a folder, a mapping or a
        ModelSpec), a catalog device name ("H100", "8xH100": the count named too) and the
        GPU count; bad facts raise DialectError naming the culprit."""
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise DialectError("must be a whole number >= 1", key="gpus", value=gpus)
        return cls(_model(model), _device(device, gpus), gpus)

    def on_nodes(self, nodes: int, source: str | None = None) -> Machine:
        """The same machine spanning `nodes` nodes (each with `gpus` GPUs)."""
        device = self.device
        if device is not None and nodes != 1:
            device = dataclasses.replace(device, nodes=nodes)
        return dataclasses.replace(self, device=device, nodes=nodes, gpus_source=source)

    def claims(self, requested: Sequence[AnyClaim]) -> list[AnyClaim]:
        """The machine as setup claims: the model's facts and its checkpoint quantization
        (see `machine_claims`), the device, and the GPU count where no device says it."""
        from ._base import machine_claims  # _base imports this module for its records

        out = machine_claims(self.model, self.device, requested)
        nodes = self.nodes or 1
        if self.device is None and (self.gpus > 1 or nodes > 1):
            fixes: dict[str, Any] = {"device.count": self.gpus}
            if self.nodes is not None:
                fixes["device.nodes"] = nodes
            out.append(setup("gpus", fixes, source=self.gpus_source))
        return out


def _model(model: ModelSource) -> ModelSpec | None:
    if model is None or isinstance(model, ModelSpec):
        return model
    try:
        if isinstance(model, Mapping):
            check_value(dict(model), "model")
        return read_model(model)
    except SpecError as exc:
        raise DialectError(exc.reason, key=exc.key, file=exc.source, value=exc.value) from None
    except EdgeError as exc:
        raise DialectError(exc.reason, key=exc.where or None, file="config.json") from None
    except (ArithmeticError, TypeError, ValueError, KeyError, AttributeError, OSError) as exc:
        # a shape the model facts cannot read (0 heads, a list where a number goes)
        raise DialectError(
            f"the model config cannot be read: {type(exc).__name__}: {show(str(exc), 120)}",
            file="config.json",
        ) from None


def _device(device: str | DeviceSpec | None, gpus: int) -> DeviceSpec | None:
    if device is None or isinstance(device, DeviceSpec):
        return device
    name = str(device)
    if gpus > 1 and not re.match(r"\d+x", name, re.I):
        name = f"{gpus}x{name}"
    try:
        return DeviceSpec.named(name)
    except SpecError as exc:
        raise DialectError(exc.reason, key="device", file=exc.source, value=device) from None


@dataclass
class Reading:
    """What a dialect read from a source, typed: the claims and how to arbitrate them
    (profile, mode), the machine (as the dialect may have refined it), the input as
    written, what is carried through unarbitrated (field -> why), the dialect's own
    adjustments (`notes`), what the engine derives for fields left open
    (`derived_defaults`, "vLLM would set ..."), refusals decided before any solve, and
    `native`: the dialect's own record, which only it reads (for writing back)."""

    dialect: str
    claims: list[AnyClaim]
    profile: str | Profile
    machine: Machine
    source: str = "<input>"
    mode: str | None = None
    given: dict[str, Any] = field(default_factory=dict)
    carried: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    derived_defaults: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    refined: bool = False  # the resolution judged is the dialect's refined one
    asked: list[AnyClaim] | None = None  # the claims the user's own config made (None: all)
    native: Any = None

    def solved_claims(self) -> list[AnyClaim]:
        """The claims to arbitrate: the reading's, then the machine's."""
        asked = self.claims if self.asked is None else self.asked
        return [*self.claims, *self.machine.claims(asked)]

    @property
    def profile_name(self) -> str:
        return self.profile.name if isinstance(self.profile, Profile) else str(self.profile)


@dataclass(frozen=True)
class Written:
    """A resolution written back in the engine's own format ("yaml" or "json")."""

    config: dict[str, Any]
    format: str


@dataclass
class Arbitration:
    """What arbitration gave for a reading: the claims solved (the reading's and the
    machine's), and either the resolution or the conflict."""

    claims: list[AnyClaim]
    resolution: Resolution | None = None
    conflict: ConflictError | None = None


@runtime_checkable
class Dialect(Protocol):
    """One engine's front door (see the module docstring)."""

    name: str
    default_profile: str

    @property
    def label(self) -> str:
        """The engine as its users name it ("vLLM")."""
        ...

    def read(
        self,
        source: Any,
        *,
        serve_args: str | None = None,
        machine: Machine,
        profile: str | Profile | None = None,
        engine: Any = None,
    ) -> Reading:
        """The source (a file path, a mapping, or None with `serve_args`) read into claims.
        `engine` is a prebuilt engine folder where the engine has one; bad input raises a
        DialectError naming every culprit."""
        ...

    def write(self, resolution: Resolution, reading: Reading) -> Written:
        """The resolution in the engine's own format, in the user's spelling."""
        ...

    def judge(self, reading: Reading, outcome: Arbitration, written: Written | None) -> Verdict:
        """The engine's answer: accept, adjust or reject, in its own words."""
        ...

    def refine(self, reading: Reading, resolution: Resolution) -> list[AnyClaim] | None:
        """Claims for a second solve (None: the first resolution stands)."""
        ...


__all__ = ["Arbitration", "Dialect", "Machine", "ModelSource", "Reading", "Written"]
