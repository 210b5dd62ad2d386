"""An engine release's option surface: every field it knows, read from the field lists.

The field lists in the engine packs (`arbiter/engines/vllm/fields-0.33.yaml`,
`arbiter/engines/sglang/fields-0.5.23.yaml`, ...) are
facts written by `scripts/extract_fields.py` from the engine's installed wheel: for each
field its name, its type as the engine annotates it, its default, its choices, the
command-line spellings (with the `--no-` negation where the engine's parser has one) and
the config section it belongs to; plus the defaults the engine derives from the machine
(`derived`), each with its source.

`load_surface("vllm-0.33")` gives a `Surface`; `Surface.lookup(key)` accepts a field name
in any spelling the engine's `--config` YAML or command line accepts (dashes or
underscores, a leading `--`, a `no-` negation) and raises `UnknownFields` with close
matches otherwise; `Surface.check_keys(keys)` names every unknown key at once.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import yaml

from constraints.profiles import ALIASES

from ._base import DialectError

# each engine pack keeps its release's field list beside its code: engines/<engine>/fields-<line>.yaml
# PyYAML's libyaml-backed safe loader when it is built (same data, ~6x faster on the
# field lists), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ENGINES_DIR = Path(__file__).resolve().parents[1] / "engines"


def field_list_path(name: str) -> Path:
    """Where the field list of a release line (`vllm-0.33`) lives: in its engine pack."""
    engine, _, line = name.partition("-")
    return ENGINES_DIR / engine / f"fields-{line}.yaml"


class UnknownSurface(DialectError):
    """A surface name with no field list."""

    def __init__(self, name: str, known: tuple[str, ...]):
        super().__init__(
            f"no field list for {name!r}; known: {', '.join(known) or 'none'}",
            value=name,
            suggestions=difflib.get_close_matches(name, known, n=3),
        )
        self.name = name
        self.known = known


class UnknownFields(DialectError):
    """Keys that are no field of the release, all of them at once, each with close
    matches (`unknown`: a tuple of (key, suggestions))."""

    def __init__(self, surface: str, unknown: Iterable[tuple[str, tuple[str, ...]]]):
        self.unknown = tuple(unknown)
        self.surface = surface
        names = ", ".join(repr(key) for key, _ in self.unknown)
        super().__init__(
            f"{len(self.unknown)} unknown key(s) for {surface}: {names}",
            key=self.unknown[0][0] if len(self.unknown) == 1 else None,
            value=[key for key, _ in self.unknown],
        )

    def __str__(self) -> str:
        lines = [f"{len(self.unknown)} key(s) are no field of {self.surface}:"]
        for key, suggestions in self.unknown:
            hint = (
                "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
                if suggestions
                else ""
            )
            lines.append(f"  {key!r}{hint}")
        return "\n".join(lines)


def spelled_like(key: str, name: str) -> str:
    """Field `name` (underscores) in the spelling of `key` as written: its leading
    dashes kept, dashes for underscores when the key has a dash and no underscore."""
    bare = key.lstrip("-")
    lead = key[: len(key) - len(bare)]
    dashed = "-" in bare and "_" not in bare
    return lead + (name.replace("_", "-") if dashed else name)


@dataclass(frozen=True)
class Field:
    """One field of an engine release, as the engine declares it."""

    name: str
    type: str
    default: Any
    section: str = ""
    choices: tuple[Any, ...] | None = None
    flags: tuple[str, ...] = ()
    negation: str | None = None  # the `--no-...` flag, where the parser has one
    off_flags: tuple[str, ...] = ()  # other flags that switch a bool off (`--disable-...`)
    deprecated: bool = False  # the engine's parser marks the flag deprecated

    @property
    def is_bool(self) -> bool:
        return self.type.replace(" ", "") in ("bool", "bool|None")


@dataclass(frozen=True)
class DerivedDefault:
    """A default the engine works out from the machine or other fields: a table of
    (condition, value) cases, the first matching one wins."""

    field: str
    cases: tuple[Mapping[str, Any], ...]
    source: str
    note: str = ""


@dataclass(frozen=True)
class Key:
    """A key resolved against a surface: its field, and whether it was a `no-` negation."""

    field: Field
    negated: bool = False


@dataclass(frozen=True)
class Surface:
    """Every field of one engine release (`engine`, `release`) and where the list came
    from (`source`: package, version, class)."""

    name: str
    engine: str
    release: str
    source: Mapping[str, Any]
    fields: Mapping[str, Field]
    derived: Mapping[str, DerivedDefault] = field(default_factory=dict)

    @cached_property
    def _spellings(self) -> dict[str, Key]:
        table: dict[str, Key] = {}
        for f in self.fields.values():
            table[f.name] = Key(f)
            for flag in f.flags:
                table[_norm(flag)] = Key(f)
            for off in (f.negation, *f.off_flags):
                if off:
                    table[_norm(off)] = Key(f, negated=True)
        return table

    def resolve(self, key: str) -> Key | None:
        """The field a key names, in any of the engine's spellings, or None."""
        return self._spellings.get(_norm(key))

    def lookup(self, key: str) -> Field:
        found = self.resolve(key)
        if found is None:
            raise UnknownFields(self.name, [(key, self.close_matches(key))])
        return found.field

    def close_matches(self, key: str, n: int = 3) -> tuple[str, ...]:
        """The fields closest to `key`, in its spelling: dashed for a dashed key
        (`max-num-batch-tokens` -> `max-num-batched-tokens`), with its leading dashes."""
        names = list(self.fields)
        norm = _norm(key)
        found = difflib.get_close_matches(norm, names, n=n, cutoff=0.6)
        if not found:
            # a word of the key may name the field (`prefix_caching` -> `enable_prefix_caching`)
            found = [name for name in names if norm and norm in name][:n]
        return tuple(spelled_like(key, name) for name in found)

    def check_keys(self, keys: Iterable[str]) -> dict[str, Key]:
        """Resolve every key; raise `UnknownFields` naming all unknown ones at once."""
        resolved: dict[str, Key] = {}
        unknown: list[tuple[str, tuple[str, ...]]] = []
        for key in keys:
            found = self.resolve(key)
            if found is None:
                unknown.append((key, self.close_matches(key)))
            else:
                resolved[key] = found
        if unknown:
            raise UnknownFields(self.name, unknown)
        return resolved


def _norm(key: str) -> str:
    return key.strip().lstrip("-").replace("-", "_")


def surface_names() -> tuple[str, ...]:
    return tuple(
        sorted(
            f"{p.parent.name}-{p.stem.removeprefix('fields-')}"
            for p in ENGINES_DIR.glob("*/fields-*.yaml")
        )
    )


@cache
def load_surface(name: str) -> Surface:
    """The surface of one release line (`vllm-0.33`, `sglang-0.5.23`); a former profile
    name (`sglang-0.5`, constraints.profiles.ALIASES) reads its successor's list."""
    name = ALIASES.get(name, name) if not field_list_path(name).is_file() else name
    path = field_list_path(name)
    if not name.partition("-")[2] or not path.is_file():
        raise UnknownSurface(name, surface_names())
    data = yaml.load(path.read_text(), Loader=_LOADER)  # a safe loader (libyaml when built)
    fields = {}
    for entry in data["fields"]:
        choices = entry.get("choices")
        fields[entry["name"]] = Field(
            name=entry["name"],
            type=entry["type"],
            default=entry.get("default"),
            section=entry.get("section", ""),
            choices=tuple(choices) if choices is not None else None,
            flags=tuple(entry.get("flags", ())),
            negation=entry.get("negation"),
            off_flags=tuple(entry.get("off_flags", ())),
            deprecated=bool(entry.get("deprecated", False)),
        )
    derived = {
        entry["field"]: DerivedDefault(
            field=entry["field"],
            cases=tuple(entry["cases"]),
            source=entry["source"],
            note=entry.get("note", ""),
        )
        for entry in data.get("derived", ())
    }
    return Surface(
        name=name,
        engine=data["engine"],
        release=str(data["release"]),
        source=data["source"],
        fields=fields,
        derived=derived,
    )


__all__ = [
    "DerivedDefault",
    "Field",
    "Key",
    "Surface",
    "UnknownFields",
    "UnknownSurface",
    "load_surface",
    "surface_names",
]
