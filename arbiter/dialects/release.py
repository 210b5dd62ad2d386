"""Which release line a check without `--profile` is read against.

When the engine is installed beside arbiter (its distribution: `vllm`, `sglang`,
`tensorrt_llm`, `mlc-llm`), the line of that release: the registered profile of the
engine's default backend with the newest release at or below the installed version
("vLLM 0.24 (installed 0.24.0)"). Otherwise the dialect's default line, the newest one,
and the assumptions line says so ("the newest line; vllm not installed").
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass

from constraints.profiles import PROFILES, Profile, engine_label, get_profile

from . import DIALECTS

# engine -> the distribution name its wheel installs (its registry entry's)
DISTRIBUTIONS = {n: e.distribution for n, e in DIALECTS.entries.items() if e.distribution}


@dataclass(frozen=True)
class ChosenLine:
    """The profile a check runs on and why, in words for the assumptions line."""

    profile: str
    why: str
    installed: str | None = None  # the installed engine's version, when one was found


def installed_version(engine: str) -> str | None:
    """The version of `engine`'s distribution installed beside arbiter, or None."""
    dist = DISTRIBUTIONS.get(engine)
    if dist is None:
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _key(version: str) -> tuple[int, ...]:
    """The leading dotted integers of a version (`0.24.0rc1+cu128` -> (0, 24, 0))."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def line_for(engine: str, version: str, default: str) -> Profile:
    """The registered line of `engine` (the backend of its `default` profile) nearest at
    or below `version`; the oldest line for a version older than all of them."""
    backend = get_profile(default).backend
    lines = sorted(
        (p for p in PROFILES.values() if p.engine == engine and p.backend == backend),
        key=lambda p: _key(p.release),
    )
    key = _key(version)
    at_or_below = [p for p in lines if _key(p.release) <= key[: len(_key(p.release))]]
    return at_or_below[-1] if at_or_below else lines[0]


def choose_line(engine: str, default: str) -> ChosenLine:
    """The line a check of `engine` without `--profile` runs on (`default`: the
    dialect's own, the newest line)."""
    version = installed_version(engine)
    if version is None:
        prof = get_profile(default)
        dist = DISTRIBUTIONS.get(engine, engine)
        return ChosenLine(prof.name, f"the newest line; {dist} not installed")
    prof = line_for(engine, version, default)
    label = engine_label(engine)
    older = _key(version) < _key(prof.release)
    why = f"{label} {prof.release} (installed {version}"
    why += ", older than every line arbiter has)" if older else ")"
    return ChosenLine(prof.name, why, version)


__all__ = ["DISTRIBUTIONS", "ChosenLine", "choose_line", "installed_version", "line_for"]
