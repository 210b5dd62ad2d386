"""Listings the command line and the service share: options, rules and profiles.

`arbiter schema|rules|profiles` and `GET /v1/schema|rules|profiles` print or serve the same
rows, so the two front ends cannot drift (the rule listing holds the default rules too).
"""

from __future__ import annotations

from typing import Any

from constraints.errors import UnknownSection
from constraints.profiles import ALIASES, DEFAULT_PROFILE, PROFILES, Profile
from constraints.rules import Rule, find_rules, rules_for
from constraints.schema import OptionSpec, lookup, options


def find_options(path: str | None = None) -> list[OptionSpec]:
    """All options, the one at a dotted `path` (UnknownPath with suggestions otherwise),
    or those of a section (UnknownSection otherwise)."""
    specs = list(options())
    if not path:
        return specs
    if "." in path:
        return [lookup(path)]
    found = [s for s in specs if s.section == path]
    if not found:
        raise UnknownSection(path, tuple(sorted({s.section for s in specs})))
    return found


def option_row(spec: OptionSpec) -> dict[str, Any]:
    """One option as a JSON row: path, domain, default, whether it is a fact, description."""
    return {
        "path": spec.path,
        "domain": spec.domain.to_json(),
        "default": spec.default,
        "fact": spec.fact,
        "description": spec.description,
    }


def option_rows(path: str | None = None) -> list[dict[str, Any]]:
    """`find_options(path)` as JSON rows."""
    return [option_row(s) for s in find_options(path)]


def list_rules(profile: str | None = None, grep: str | None = None) -> tuple[Rule, ...]:
    """Shipped rules, hard and default (UnknownProfile for a profile that does not exist)."""
    return find_rules(profile, grep)


def rule_rows(profile: str | None = None, grep: str | None = None) -> list[dict[str, Any]]:
    """`list_rules(profile, grep)` as JSON rows."""
    return [r.to_json() for r in list_rules(profile, grep)]


def listed_profiles() -> list[Profile]:
    """Every profile, its engines in the registry's order (`DIALECTS`: the order of the
    command line's choices), each engine's lines in its pack's order."""
    from ..dialects import DIALECTS  # the registry: names only, no pack imported

    rank = {name: i for i, name in enumerate(DIALECTS)}
    return sorted(PROFILES.values(), key=lambda p: rank.get(p.engine, len(rank)))


def profile_rows() -> list[dict[str, Any]]:
    """Every profile (`listed_profiles`) with how many rules it compiles and whether it is
    the default."""
    return [
        {**p.to_json(), "rules": len(rules_for(p)), "default": p.name == DEFAULT_PROFILE}
        for p in listed_profiles()
    ]


def profile_aliases() -> dict[str, str]:
    """Old profile names and the names they stand for, in the listing's order."""
    order = {p.name: i for i, p in enumerate(listed_profiles())}
    return dict(sorted(ALIASES.items(), key=lambda kv: order[kv[1]]))
