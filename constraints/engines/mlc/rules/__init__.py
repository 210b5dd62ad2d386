"""MLC LLM's rules. A module here exporting `RULES` is found without registering it;
rules that leave their scope open get MLC's."""

from __future__ import annotations
