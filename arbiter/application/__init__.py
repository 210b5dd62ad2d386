"""The application layer: what the command line and the HTTP service both do.

- `outcome`: the one mapping from an error to (exit code, HTTP status, JSON payload);
- `listing`: options, rules and profiles as rows (`arbiter schema|rules|profiles`,
  `GET /v1/schema|rules|profiles`);
- `solve`: claims from a file or the built-in scenario, solved or explained;
- `check`: an engine's own configuration read through its dialect, checked, written back.

`solve` and `check` load the solver (OR-Tools) when imported; `outcome` and `listing` do
not, so the command line's fast paths stay fast. Front ends import the submodule they need.
"""

from __future__ import annotations

from .outcome import Outcome, outcome

__all__ = ["Outcome", "outcome"]
