"""Each dialect's key vocabulary, read from the field lists it already ships.

Detection (`arbiter.sources.detect`) asks, for one key of a config, which dialects know it
and which of their listed values a value is. The answers come from the release field
lists the dialects read themselves, never from a hand list: each pack's `vocab` module
(`arbiter/engines/<engine>/vocab.py`) builds its `Vocabulary` from them (vLLM 0.33 and
SGLang 0.5 through their release surfaces, TensorRT-LLM 1.0 and 1.2 through its
`LlmArgs` catalogues, MLC through its `EngineConfig` field table). This module holds the
`Vocabulary` record, the reader of a release surface, and the registry's engines in the
order detection names them: those whose keys take dashes (their configs are serve flags
written as YAML) first, then the rest, each in registry order. Every dialect's vocabulary,
read from the data each pack stores without importing the packs, is
`arbiter.sources.vocab_data.vocabularies`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dialects import DIALECTS as REGISTRY
from ..dialects.surface import Surface, load_surface

DIALECTS = tuple(
    sorted(REGISTRY, key=lambda name: not REGISTRY.entries[name].dashes)
)  # detection's order (a stable sort keeps the registry's inside each group)
LABELS = {name: REGISTRY.entries[name].config_label for name in DIALECTS}
ENGINES = {name: REGISTRY.label(name) for name in DIALECTS}
_LITERAL = re.compile(r"Literal\[([^\]]*)\]")


def norm(key: str) -> str:
    """A key in the one spelling the vocabularies use: no leading dashes, underscores."""
    return key.strip().lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Vocabulary:
    """The keys one dialect accepts at the top of its config (`keys`, normalised), the
    names one level down (`nested`: a TensorRT-LLM field written at the wrong level), the
    listed values of a key (`choices`) and whether its spelling takes dashes (`dashes`)."""

    dialect: str
    keys: frozenset[str]
    nested: frozenset[str] = frozenset()
    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    dashes: bool = False
    surface: Surface | None = None  # vLLM and SGLang: the release surface (spellings)
    native: frozenset[str] = frozenset()  # the spellings a config of this engine is written in
    sections: Mapping[str, frozenset[str]] = field(default_factory=dict)  # field -> its keys
    also: frozenset[str] = frozenset()  # names that are no config key: serve-only options
    any_case: frozenset[str] = frozenset()  # fields whose listed values match in any case
    serve_flags: frozenset[str] = frozenset()  # a serve command's own options (trtllm-serve)
    fields_as_flags: bool = False  # every config field is a serve flag too (vLLM, SGLang)

    def is_native(self, key: str) -> bool:
        """True when `key` is spelled the way this engine spells it (vLLM and SGLang: the
        field name with dashes, `max-num-seqs`; an alias flag or underscores are accepted
        spellings, not native ones)."""
        written = key.strip().lstrip("-")
        return written in self.native or written in self.keys and not self.dashes

    def field_of(self, key: str) -> str | None:
        """The field a key names in this dialect (any accepted spelling), or None."""
        if self.surface is not None:
            found = self.surface.resolve(key)
            return found.field.name if found is not None else None
        name = norm(key) if self.dashes else key.strip()
        return name if name in self.keys else None

    def flag(self, flag: str) -> bool | None:
        """How a serve command's option speaks for this engine: None when it is none of
        its options, True when spelled its own way, False in an accepted alias."""
        if flag in self.serve_flags:
            return True
        if self.fields_as_flags and self.field_of(flag) is not None:
            return self.is_native(flag)
        return None

    def close(self, key: str) -> tuple[str, float] | None:
        """The closest of this dialect's names to an unknown key, with its similarity
        (difflib's ratio, at least 0.75), among its keys, the nested section fields and
        the command-line options (`also`), or None."""
        import difflib  # only an unknown key needs it

        target = norm(key)
        names = sorted({*(norm(k) for k in self.keys), *self.nested, *self.also})
        found = difflib.get_close_matches(target, names, n=1, cutoff=0.75)
        if not found:
            return None
        return found[0], difflib.SequenceMatcher(None, target, found[0]).ratio()

    def lists(self, name: str, value: Any) -> bool | None:
        """True when `value` is a listed value of field `name`, False when the field lists
        its values and `value` is none of them, None when the field lists none."""
        listed = self.choices.get(name)
        if listed is None or isinstance(value, (Mapping, list, bool)) or value is None:
            return None
        return (str(value).lower() if name in self.any_case else str(value)) in listed


def surface_vocabulary(
    dialect: str,
    name: str,
    extra: Mapping[str, frozenset[str]] | None = None,
    any_case: Iterable[str] = (),
) -> Vocabulary:
    """The vocabulary of a dashed engine's release surface `name` (its fields, their flags
    and negations, their listed values, and `extra` listed values the surface only types);
    its serve flags are its fields."""
    surf = load_surface(name)
    keys = set(surf.fields)
    choices: dict[str, frozenset[str]] = {}
    for f in surf.fields.values():
        keys.update(norm(flag) for flag in (*f.flags, *f.off_flags) if flag)
        if f.negation:
            keys.add(norm(f.negation))
        listed = listed_values(f.choices, f.type)
        if listed:
            choices[f.name] = listed
    choices.update(extra or {})
    native = set()
    for f in surf.fields.values():
        native.add(f.name.replace("_", "-"))
        native.update(norm(off).replace("_", "-") for off in (f.negation, *f.off_flags) if off)
    return Vocabulary(
        dialect,
        frozenset(keys),
        choices=choices,
        dashes=True,
        surface=surf,
        native=frozenset(native),
        any_case=frozenset(any_case),
        fields_as_flags=True,
    )


def listed_values(choices: Iterable[Any] | None, type_text: str) -> frozenset[str] | None:
    """The values a field lists: its `choices`, else the members of a `Literal[...]` type
    that is the whole type (optionally `| None` or `Optional[...]`); a Literal in a union
    with `str` lists nothing, since any string passes."""
    if choices:
        return frozenset(str(c) for c in choices)
    text = type_text.strip().removesuffix(" | None")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    match = _LITERAL.fullmatch(text)
    if match is None:
        return None
    return frozenset(part.strip().strip("'\"") for part in match.group(1).split(","))
