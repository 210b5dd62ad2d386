"""The seed's greedy arbitration strategy, re-implemented for comparisons.

TensorRT-LLM's `_ConfigArbitrator` resolves functional claims first (the first claim to set
an option wins, a later different value raises) and then walks performance claims in
insertion order, keeping each one whose options do not clash with what is already set.
Two flaws follow, and this module reproduces both on purpose so tests and benchmarks can
show them: the outcome depends on claim order, and (because the per-claim working copy of
the nested option dicts is shallow) a rejected claim's options set before the clash stay
in the config.

Claims here are plain data: `(name, {path: value})` for functional claims and
`(name, {path: value}, weight)` for performance claims.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any


class GreedyConflict(Exception):
    def __init__(self, claim: str, path: str, other: str):
        super().__init__(claim, path, other)
        self.claim, self.path, self.other = claim, path, other

    def __str__(self) -> str:
        return f"{self.claim!r} clashes with {self.other!r} on {self.path}"


def greedy_arbitrate(
    funcs: Sequence[tuple[str, Mapping[str, Any]]],
    perfs: Sequence[tuple[str, Mapping[str, Any], int]],
    *,
    leak: bool = True,
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Return (config as {path: value}, kept perf names, dropped perf names).

    With `leak=True` the working copy is shallow, as in the seed, so a dropped claim's
    earlier options remain set."""
    configs: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, str]] = {}
    for name, options in funcs:
        for path, value in options.items():
            section, option = path.split(".", 1)
            config = configs.setdefault(section, {})
            source = sources.setdefault(section, {})
            if option in config and config[option] != value:
                raise GreedyConflict(name, path, source[option])
            config[option] = value
            source[option] = name
    kept, dropped = [], []
    for name, options, _weight in perfs:
        trial = copy.copy(configs) if leak else copy.deepcopy(configs)
        clash = False
        for path, value in options.items():
            section, option = path.split(".", 1)
            config = trial.setdefault(section, {})
            if option in config and config[option] != value:
                clash = True
                break
            config[option] = value
        if clash:
            dropped.append(name)
        else:
            kept.append(name)
            configs = trial
    flat = {f"{s}.{o}": v for s, opts in configs.items() for o, v in opts.items()}
    return flat, kept, dropped
