"""`python -m arbiter.cli`: the `arbiter` command, the runtime's `run` included."""

from __future__ import annotations

from . import RUNTIME_COMMAND, main, make_app

main(make_app(RUNTIME_COMMAND))
