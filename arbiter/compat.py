"""A drop-in `ConfigArbitrator` with the seed's `setup` / `claim_func` / `claim_perf` API.

It records claims exactly as TensorRT-LLM's `_ConfigArbitrator` is called
(`claim_func("streamingllm", config_name="plugin_config", streamingllm=True, ...)`; calls
with the same name merge into one claim) and, when called with the config objects, solves
them with `arbitrate()` and writes the arbitrated values back onto those objects. The
current values of the objects are the defaults that "fewest changes" counts from.

Unlike the seed it does not depend on claim order, and a dropped performance claim leaves
none of its options behind. Fallbacks may take the drop reason or nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from constraints.errors import SchemaError
from constraints.expr import Eq, all_of
from constraints.schema import lookup, options

from .claims import AnyClaim, func, perf, setup
from .errors import ConfigArbitrateError, ConflictError, InvalidClaim
from .resolution import Resolution
from .solve import arbitrate


class ConfigArbitrator:
    """Collects claims like the seed's arbitrator; `__call__(**configs)` applies them.

    The seed's arbitrator is the LLM API's of TensorRT-LLM 0.10-0.12 on TensorRT engines,
    so the default profile is `trtllm-0.10` (its rules and defaults); pass another."""

    def __init__(self, *, rules: Any = None, profile: str = "trtllm-0.10"):
        self.rules = rules
        self.profile = profile
        self._setups: dict[str, dict[str, Any]] = {}
        self._funcs: dict[str, list[tuple[str, Any]]] = {}
        self._perfs: dict[str, list[tuple[str, Any]]] = {}
        self._fallbacks: dict[str, Callable[..., Any]] = {}
        self.resolution: Resolution | None = None

    def setup(self, info: str, config_name: str, **options: Any) -> None:
        """Fix options from the environment (GPU architecture, a read-only engine)."""
        fixes = self._setups.setdefault(info, {})
        for option, value in options.items():
            path = f"{config_name}.{option}"
            if path in fixes and fixes[path] != value:
                raise InvalidClaim(
                    f"setup sets {path} twice ({fixes[path]!r} and {value!r})",
                    claim=info,
                    path=path,
                )
            fixes[path] = value

    def claim_func(self, func: str, config_name: str, **options: Any) -> None:
        """Claim a functionality that must be fulfilled."""
        self._funcs.setdefault(func, []).extend(
            (f"{config_name}.{k}", v) for k, v in options.items()
        )

    def claim_perf(
        self,
        perf: str,
        config_name: str,
        fallback: Callable[..., Any] | None = None,
        **options: Any,
    ) -> None:
        """Claim a performance wish, dropped (with `fallback` called) if it cannot hold."""
        self._perfs.setdefault(perf, []).extend(
            (f"{config_name}.{k}", v) for k, v in options.items()
        )
        if fallback is not None:
            self._fallbacks[perf] = fallback

    def claims(self) -> list[AnyClaim]:
        """The recorded claims as arbiter claims."""
        out: list[AnyClaim] = [
            setup(name, fixes, source="ConfigArbitrator.setup")
            for name, fixes in self._setups.items()
        ]
        for name, items in self._funcs.items():
            out.append(func(name, _requirement(name, items), source="ConfigArbitrator.claim_func"))
        for name, items in self._perfs.items():
            out.append(
                perf(
                    name,
                    _requirement(name, items),
                    fallback=_adapt(self._fallbacks.get(name)),
                    source="ConfigArbitrator.claim_perf",
                )
            )
        return out

    def __call__(self, **configs: Any) -> Resolution:
        """Arbitrate and write the result onto the given config objects (by section name)."""
        current = _current_values(configs)
        try:
            resolution = arbitrate(
                self.claims(), rules=self.rules, defaults=current, profile=self.profile
            )
        except ConflictError as exc:
            raise ConfigArbitrateError(
                exc.conflicts, corrections=exc.corrections, explanation=exc.explanation
            ) from None
        self.resolution = resolution
        mentioned: set[str] = set()
        for claim in self.claims():
            mentioned |= claim.expr.paths()
        for section, config in configs.items():
            for spec in options():
                if spec.section != section or spec.fact:
                    continue
                value = resolution.values[spec.path]
                if spec.path in mentioned or current.get(spec.path, value) != value:
                    setattr(config, spec.name, value)
        return resolution


def _requirement(name: str, items: list[tuple[str, Any]]) -> Any:
    """A mapping when every path appears once; a conjunction when a claim sets one path
    twice (with different values that makes the claim contradict itself, as it should)."""
    paths = [path for path, _ in items]
    if len(set(paths)) == len(paths):
        return dict(items)
    try:
        return all_of(*(Eq(path, value) for path, value in items))
    except SchemaError as exc:
        raise InvalidClaim(str(exc), claim=name) from None


def _adapt(fallback: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """Seed fallbacks take no argument; ours receive the drop reason."""
    if fallback is None:
        return None
    try:
        takes_reason = len(inspect.signature(fallback).parameters) > 0
    except (TypeError, ValueError):
        takes_reason = True
    return fallback if takes_reason else (lambda reason: fallback())


def _current_values(configs: dict[str, Any]) -> dict[str, Any]:
    """The options the given config objects hold now, read as defaults."""
    sections = {spec.section for spec in options()}
    out: dict[str, Any] = {}
    for section, config in configs.items():
        if section not in sections:
            raise InvalidClaim(f"unknown config section {section!r}", value=sorted(sections))
        for spec in options():
            if spec.section != section or spec.fact or not hasattr(config, spec.name):
                continue
            value = getattr(config, spec.name)
            if value is None and not spec.domain.nullable:
                continue  # engine-derived value: keep our default
            try:
                out[spec.path] = lookup(spec.path).check(value)
            except SchemaError as exc:
                raise InvalidClaim(str(exc), path=spec.path, value=value) from None
    return out
