"""Shared test settings: Hypothesis profiles (bounded everywhere, derandomized in CI), and
Triton's interpreter for the Triton kernel tests on machines without a GPU."""

from __future__ import annotations

import importlib.util
import os

import torch
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# Without CUDA, Triton's interpreter runs the Triton kernels on CPU tensors, so their tests
# still compare them with the reference. Triton reads this when the kernels are defined,
# so it is set before any test imports them; an explicit TRITON_INTERPRET wins.
if (
    "TRITON_INTERPRET" not in os.environ
    and importlib.util.find_spec("triton") is not None
    and not torch.cuda.is_available()
):
    os.environ["TRITON_INTERPRET"] = "1"


def pytest_unconfigure(config: object) -> None:
    """Freeze what the session built (compiled rule bases, solver models, torch modules)
    before the interpreter exits: its final garbage collections then skip those objects
    instead of walking them for minutes after the summary is printed (measured: about 2 min
    of exit before, 7 s after). Triton's nanobind bindings then report "leaked" objects at
    exit: they are this frozen session's, freed by the process ending."""
    import gc  # only at the very end of the session

    gc.freeze()
