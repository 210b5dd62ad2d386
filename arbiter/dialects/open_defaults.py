"""What an engine runs for a field the input leaves open: one typed form for every engine
(`EngineDefault`) and the one piece of code that turns a pack's defaults into claims
(`open_default_claims`).

Each pack's `defaults.py` declares its table (`OPEN_DEFAULTS`, the fixed values) and the
function that picks the rows an input leaves open, with the values it derives from the
machine and the other fields (`open_defaults(...)`); the dialect hands the rows here.

Checking a configuration is checking what the engine runs, so a default kept for a field
left open is no choice for the solver. The rows of one claim become one claim of one
kind, the same for every engine:

- `blame=False` (a fact of the run, like the device): a **setup** claim, never blamed
  (vLLM's field-list defaults, TensorRT-LLM's MoE ranks left to the engine);
- `blame=True`: a **func** claim, which a conflict may name ("SGLang's defaults of the
  fields left unset", "engine default moe_config.backend"), so that the fix it points at
  is setting the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..claims import AnyClaim, func, setup


@dataclass(frozen=True)
class EngineDefault:
    """One option the engine fixes when its field is left open: `field` (the engine's
    own name of the field; "" for an option no field sets), `path` (the option), `value`
    (what the engine runs with), `source` (where the default is: repo path, release),
    `claim` (the name of the claim it is part of) and `blame` (see the module)."""

    field: str
    path: str
    value: Any
    source: str
    claim: str
    blame: bool = False

    def at(self, value: Any, source: str | None = None) -> EngineDefault:
        """The same row with a value derived for this input (and where it comes from)."""
        return EngineDefault(
            self.field, self.path, value, source or self.source, self.claim, self.blame
        )


def open_default_claims(rows: Iterable[EngineDefault]) -> list[AnyClaim]:
    """The claims of the rows: one per claim name (and kind), in first-row order, fixing
    each row's path to its value (a later row of the same path wins); the claim's source
    is its rows' sources, each once."""
    groups: dict[tuple[str, bool], dict[str, EngineDefault]] = {}
    for row in rows:
        groups.setdefault((row.claim, row.blame), {})[row.path] = row
    out: list[AnyClaim] = []
    for (name, blame), by_path in groups.items():
        pins = {path: row.value for path, row in by_path.items()}
        joined = "; ".join(dict.fromkeys(row.source for row in by_path.values() if row.source))
        source = joined or None
        out.append(func(name, pins, source=source) if blame else setup(name, pins, source=source))
    return out


__all__ = ["EngineDefault", "open_default_claims"]
