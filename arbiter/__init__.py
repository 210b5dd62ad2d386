"""arbiter: claims in, a solved engine configuration (or an explained conflict) out.

from arbiter import arbitrate, func, perf, setup, ge
resolution = arbitrate([
    setup("gpu", {"device.sm": 80}),
    func("streamingllm", {"plugin_config.streamingllm": True}),
    perf("block_reuse", {"kv_cache_config.enable_block_reuse": True}),
])

An engine's own configuration, through its dialect (`arbiter.dialects.DIALECTS`):

from arbiter import check
from arbiter.dialects.protocol import Machine
verdict = check("vllm", "serve.yaml", machine=Machine.read("config.json", "H100"))
verdict.verdict  # "accept", "adjust" or "reject"
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

# Each name loads on first use, so `import arbiter.cli` (and `arbiter --help`) stays free of
# the schema and the rules; the solver (OR-Tools, ~0.4 s to import) loads with `arbitrate`.
_EXPORTS = {
    **dict.fromkeys(("ge", "le", "ne", "one_of"), "constraints.expr"),
    **dict.fromkeys(
        ("FuncClaim", "PerfClaim", "SetupClaim", "func", "load_claims", "perf", "setup"),
        "arbiter.claims",
    ),
    **dict.fromkeys(
        (
            "ArbiterError",
            "Conflict",
            "ConflictError",
            "InternalError",
            "InvalidClaim",
            "SolverModelInvalid",
            "SolveTimeout",
        ),
        "arbiter.errors",
    ),
    **dict.fromkeys(
        ("Change", "DroppedClaim", "DropReason", "KeptClaim", "Provenance", "Resolution"),
        "arbiter.resolution",
    ),
    "arbitrate": "arbiter.solve",
    # the one check pipeline; `arbiter.check` is also the name of its module, which is made
    # callable (arbiter/check.py) so that either object runs the check
    **dict.fromkeys(("check", "verdict_of"), "arbiter.check"),
    # SLA planning (`arbiter plan`); the package is callable as `arbiter.plan(...)` too
    "plan": "arbiter.plan",
}

if TYPE_CHECKING:
    from constraints.expr import ge, le, ne, one_of

    from .check import check, verdict_of
    from .claims import FuncClaim, PerfClaim, SetupClaim, func, load_claims, perf, setup
    from .errors import (
        ArbiterError,
        Conflict,
        ConflictError,
        InternalError,
        InvalidClaim,
        SolverModelInvalid,
        SolveTimeout,
    )
    from .resolution import Change, DroppedClaim, DropReason, KeptClaim, Provenance, Resolution
    from .solve import arbitrate


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .version import version  # the distribution's metadata, read only when asked

        return version()
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value  # after the import bound a submodule of the same name
        return value
    if find_spec(f"{__name__}.{name}") is not None:  # a submodule, as an eager import gave
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'arbiter' has no attribute {name!r}")


__all__ = [
    "ArbiterError",
    "Change",
    "Conflict",
    "ConflictError",
    "DropReason",
    "DroppedClaim",
    "FuncClaim",
    "InternalError",
    "InvalidClaim",
    "KeptClaim",
    "PerfClaim",
    "Provenance",
    "Resolution",
    "SetupClaim",
    "SolveTimeout",
    "SolverModelInvalid",
    "arbitrate",
    "check",
    "func",
    "ge",
    "le",
    "load_claims",
    "ne",
    "one_of",
    "perf",
    "plan",
    "setup",
    "verdict_of",
]
