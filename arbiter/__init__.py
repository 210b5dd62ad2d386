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

from constraints.expr import ge, le, ne, one_of

from .check import check, verdict_of  # the one check pipeline (rebinds the submodule's name)
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


def __getattr__(name: str):
    # the solver (and OR-Tools, ~0.4 s to import) loads on first use, so fast command-line
    # paths such as `arbiter schema` never pay for it
    if name == "arbitrate":
        from . import solve  # OR-Tools loads on first use (see above)

        return getattr(solve, name)
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
    "setup",
    "verdict_of",
]
