"""Cross-engine rules: each module exports `RULES`; a rule without a scope of its own
holds for every engine. A module here exporting `RULES` is found without registering it."""

from __future__ import annotations

ORDER = ("pairs", "memory", "parallel", "experts")
