"""`python -m arbiter.cli`: the `arbiter` command."""

from __future__ import annotations

from . import main

main()
