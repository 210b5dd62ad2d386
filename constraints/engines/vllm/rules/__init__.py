"""vLLM's rules. A module here exporting `RULES` is found without registering it; rules
that leave their scope open get vLLM's (`SCOPE`)."""

from __future__ import annotations

from constraints.rules.base import Scope

SCOPE = Scope("vllm", since="0.33")
