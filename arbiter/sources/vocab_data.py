"""A dialect's `Vocabulary` as data: `vocab.json` in its pack folder, written by
scripts/gen_vocab.py from the pack's `vocab.vocabulary()` and read back by detection
(`vocabularies`) without importing the pack, so detecting the
engine of a file, or checking one as a named dialect, imports no other engine's modules.
tests/arbiter/sources/test_vocab_data.py keeps every file equal to what its pack builds.

Sets are written as sorted lists; a release surface by its name (read again through
`arbiter.dialects.surface.load_surface`, from the same field list)."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

from ..dialects import DIALECTS as REGISTRY
from ..dialects.surface import load_surface
from .vocab import DIALECTS, Vocabulary, surface_vocabulary

FILE = "vocab.json"
_SETS = ("keys", "nested", "native", "also", "any_case", "serve_flags")
_MAPS = ("choices", "sections")


def pack_folder(name: str) -> Path:
    """The folder of engine `name`'s pack, found without importing it."""
    spec = importlib.util.find_spec(REGISTRY.entries[name].module)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"no pack {REGISTRY.entries[name].module}", name=name)
    return Path(next(iter(spec.submodule_search_locations)))


def data_path(name: str) -> Path:
    """Where engine `name`'s vocabulary is stored as data."""
    return pack_folder(name) / FILE


def to_data(vocab: Vocabulary) -> dict[str, Any]:
    """`vocab` as JSON-ready data (sorted, so the file is stable)."""
    out: dict[str, Any] = {"dialect": vocab.dialect, "dashes": vocab.dashes}
    out["fields_as_flags"] = vocab.fields_as_flags
    out["surface"] = vocab.surface.name if vocab.surface is not None else None
    for name in _SETS:
        out[name] = sorted(getattr(vocab, name))
    for name in _MAPS:
        out[name] = {k: sorted(v) for k, v in sorted(getattr(vocab, name).items())}
    return out


def from_data(data: dict[str, Any]) -> Vocabulary:
    """The `Vocabulary` that `to_data` wrote."""
    surface = data["surface"]

    def words(name: str) -> frozenset[str]:
        return frozenset(str(w) for w in data[name])

    def table(name: str) -> dict[str, frozenset[str]]:
        return {str(k): frozenset(str(w) for w in v) for k, v in data[name].items()}

    return Vocabulary(
        data["dialect"],
        words("keys"),
        nested=words("nested"),
        choices=table("choices"),
        dashes=data["dashes"],
        surface=load_surface(surface) if surface is not None else None,
        native=words("native"),
        sections=table("sections"),
        also=words("also"),
        any_case=words("any_case"),
        serve_flags=words("serve_flags"),
        fields_as_flags=data["fields_as_flags"],
    )


def stored(name: str) -> Vocabulary | None:
    """Engine `name`'s vocabulary read from its pack's `vocab.json`; None without one."""
    path = data_path(name)
    if not path.is_file():
        return None
    return from_data(json.loads(path.read_text()))


def render(vocab: Vocabulary) -> str:
    """The text of a `vocab.json` (what scripts/gen_vocab.py writes)."""
    return json.dumps(to_data(vocab), indent=1, sort_keys=True) + "\n"


@cache
def vocabularies() -> dict[str, Vocabulary]:
    """The vocabulary of every dialect, in `DIALECTS` order, read without importing its
    pack where the pack stores it: its `vocab.json` (`vocab_data`, generated from the
    pack's `vocab.vocabulary()`), else the release surface its registry entry names, else
    its pack's `vocab.vocabulary()` itself."""
    out = {}
    for name in DIALECTS:
        surface = REGISTRY.entries[name].surface
        found = stored(name)
        if found is not None:
            out[name] = found
        elif surface:
            out[name] = surface_vocabulary(name, surface)
        else:
            out[name] = REGISTRY.part(name, "vocab").vocabulary()
    return out
