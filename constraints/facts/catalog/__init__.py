"""The bundled model catalog: re-authored config keys of the models the project knows,
found by name, Hugging Face id or alias.

`index.yaml` maps each entry name to its Hugging Face `id` and `aliases`; `<name>.yaml`
holds the entry's `source` (the repo and the model card or paper its values come from), the
`config` keys the model facts read (constraints/facts/model.py), and either the `fixture`
model under tests/fixtures/models/ whose facts it equals or the `published` totals it is
checked against (tests/constraints/test_model_catalog.py). Names match case-insensitively,
with and without the organisation (`Qwen3-32B` finds `Qwen/Qwen3-32B`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError

FOLDER = Path(__file__).parent
INDEX = FOLDER / "index.yaml"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class CatalogEntry:
    """One bundled model: its name, Hugging Face id, aliases and re-authored config."""

    name: str
    id: str
    aliases: tuple[str, ...]
    source: str
    config: Mapping[str, Any] = field(repr=False)
    fixture: str | None = None
    published: Mapping[str, Any] = field(default_factory=dict, repr=False)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(), Loader=_Loader)  # a safe loader (C when built)
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"cannot read the model catalog: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise SpecError("expected a mapping", source=str(path))
    return data


@cache
def index() -> dict[str, dict[str, Any]]:
    """Entry name -> {id, aliases}, as index.yaml lists them."""
    return _load(INDEX)


def names() -> tuple[str, ...]:
    """Every entry name, sorted."""
    return tuple(sorted(index()))


def _key(text: str) -> str:
    return text.strip().lower()


@cache
def _spellings() -> dict[str, tuple[str, str]]:
    """Every accepted spelling (lower case) -> (entry name, the id or alias it stands for):
    names, ids and aliases, each also without its organisation (a name, or an alias
    without one, stands for the entry's id)."""
    out: dict[str, tuple[str, str]] = {}
    for name, item in sorted(index().items()):
        written = [name, str(item["id"]), *(str(a) for a in item.get("aliases") or ())]
        for spelled in written:
            out.setdefault(_key(spelled), (name, spelled if "/" in spelled else str(item["id"])))
        for spelled in written:
            if "/" in spelled:
                out.setdefault(_key(spelled.rsplit("/", 1)[-1]), (name, spelled))
    return out


def lookup(ref: str) -> tuple[CatalogEntry, str] | None:
    """The entry a name, id or alias names, with the id or alias it matched; None if none."""
    found = _spellings().get(_key(ref)) or _spellings().get(_key(ref.rsplit("/", 1)[-1]))
    if found is None:
        return None
    return entry(found[0]), found[1]


def suggestions(ref: str, n: int = 3) -> tuple[str, ...]:
    """The catalog spellings closest to `ref` (for a "did you mean")."""
    spellings = _spellings()
    close = difflib.get_close_matches(_key(ref), list(spellings), n=n, cutoff=0.6)
    tail = difflib.get_close_matches(_key(ref.rsplit("/", 1)[-1]), list(spellings), n=n)
    out: list[str] = []
    for key in close + tail:
        spelled = spellings[key][1]
        if spelled not in out:
            out.append(spelled)
    return tuple(out[:n])


@cache
def entry(name: str) -> CatalogEntry:
    """The entry of that name (a SpecError naming the known ones when there is none)."""
    item = index().get(name)
    if item is None:
        raise SpecError(
            f"no catalog entry {name!r}; entries: {', '.join(names())}", source=str(INDEX)
        )
    path = FOLDER / f"{name}.yaml"
    data = _load(path)
    config = data.get("config")
    if not isinstance(config, dict):
        raise SpecError("expected a config mapping", source=str(path), key="config")
    return CatalogEntry(
        name=name,
        id=str(item["id"]),
        aliases=tuple(str(a) for a in item.get("aliases") or ()),
        source=str(data.get("source") or ""),
        config=config,
        fixture=data.get("fixture"),
        published=data.get("published") or {},
    )


__all__ = ["FOLDER", "INDEX", "CatalogEntry", "entry", "index", "lookup", "names", "suggestions"]
