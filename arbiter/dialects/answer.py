"""A dialect's verdict in the engine's own words: the records a report renders.

`words_for(verdict, dialect, reading, claims)` fills a conflict verdict's
`engine_conflicts` (each conflict as the user's own keys and values, the rules' messages
and sources, the numbers with the engine's names, the facts it rests on named) and
`engine_fixes` (the verified minimal corrections as the change to make: a value where
the rule allows one, found by re-solving (`value_fixes`), else the key to drop), ordered
by how little they change. The records are typed and plain, so the text report, the
JSON report and the service all read the same data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from constraints.profiles import get_profile
from constraints.rules.base import Computed

from ..claims import AnyClaim, SetupClaim
from .protocol import Reading
from .words import PREFIXES, Words, show_value

Origin = Literal["given", "default", "fact"]
FixKind = Literal["value", "drop", "gpus"]
Relation = Literal["at most", "at least", "one of", "between", "=", "drop"]


@dataclass(frozen=True)
class KeyRef:
    """One key a conflict involves, in the engine's words: `key` as the user wrote it
    (dotted into a sub-config), its `value` (as written for a given key), where it came
    from (`given`; an engine `default`; a `fact` of the model or device) and its line."""

    key: str
    value: Any
    origin: Origin = "given"
    flag: bool = False  # written on a command line (`--key value`)
    line: int | None = None
    about: str = ""  # for a default or a fact: whose it is ("vLLM's default", "the model's")

    def text(self) -> str:
        if self.origin != "given":
            shown = "not set" if self.value is None else show_value(self.value)
            return f"{self.about} {self.key} {shown}".strip()
        if self.flag:
            return (
                f"--{self.key}" if self.value is True else f"--{self.key} {show_value(self.value)}"
            )
        return f"{self.key}: {show_value(self.value)}"


@dataclass(frozen=True)
class RuleWords:
    """A rule of a conflict: its id, its message in the engine's words and its source."""

    id: str
    message: str
    source: str


@dataclass(frozen=True)
class ConflictWords:
    """One conflict: the keys (each one necessary), the rules, the numbers and facts."""

    keys: tuple[KeyRef, ...]
    rules: tuple[RuleWords, ...]
    numbers: tuple[str, ...] = ()
    facts: tuple[KeyRef, ...] = ()


@dataclass(frozen=True)
class FixWords:
    """One change that makes the config consistent (each one verified by a re-solve):
    `kind` value (set `key` `relation` `value`), drop (remove `keys`) or gpus (pass
    `--gpus value`); `given` what the input has now; `breaks` the conflicts it breaks
    (1-based); `cost` how much it changes (fixes are ordered by it)."""

    kind: FixKind
    keys: tuple[str, ...]
    relation: Relation
    value: Any = None
    given: Any = None
    breaks: tuple[int, ...] = ()
    verified: bool = True
    flag: bool = False
    cost: float = 0.0

    def text(self) -> str:
        if self.kind == "gpus":
            if not self.keys:
                return f"pass --gpus {self.value}"
            tp = f"--{self.keys[0]} {self.value}" if self.flag else f"{self.keys[0]}: {self.value}"
            return f"pass --gpus {self.value}, with {tp}"
        key = self.keys[0] if self.keys else ""
        shown = f"--{key}" if self.flag else key
        if self.kind == "drop":
            return "drop " + " and ".join(f"--{k}" if self.flag else k for k in self.keys)
        sep = " " if self.flag else ": "
        if self.relation == "one of":
            return f"{shown}{sep}one of " + ", ".join(show_value(v) for v in self.value)
        if self.relation == "between":
            lo, hi = self.value
            return f"{shown}{sep}between {show_value(lo)} and {show_value(hi)}"
        if self.relation == "=":
            return f"{shown}{sep}{show_value(self.value)}"
        return f"{shown}{sep}{self.relation} {show_value(self.value)}"


Recheck = Callable[[Reading], Any]  # the pipeline's verdict on a changed reading


def words_for(
    verdict: Any,
    dialect: str,
    reading: Reading,
    claims: Sequence[AnyClaim],
    lines: Mapping[str, int] | None = None,
    *,
    recheck: Recheck,
) -> Any:
    """`verdict` (a reject from a conflict) with its engine-word records filled;
    `recheck` re-runs the check on a changed reading, to verify each fix end to end."""
    conflict = verdict.conflict
    explanation = conflict.explanation if conflict is not None else None
    if explanation is None:
        return verdict
    words = Words.of(dialect, reading, lines)
    by_name = {c.name: c for c in claims}
    conflicts = tuple(_conflict(words, reading, by_name, c) for c in explanation.conflicts)
    fixes = _fixes(words, reading, claims, by_name, explanation, recheck)
    return replace(verdict, engine_conflicts=conflicts, engine_fixes=fixes)


# ---------------------------------------------------------------------------- conflicts
def _field(claim: AnyClaim, dialect: str, reading: Reading) -> tuple[str, bool]:
    """(the engine field a claim is about, whether the input wrote it)."""
    source = claim.source or ""
    prefix = f"{reading.source}: "
    if source.startswith(prefix):
        return source[len(prefix) :].replace("-", "_"), True
    name = claim.name.removeprefix(PREFIXES.get(dialect, ""))
    for stem in ("default.", "derived."):
        name = name.removeprefix(stem)
    return name, False


def _sub_value(raw: Any, sub: str) -> Any:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, Mapping):
        value: Any = raw
        for part in sub.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value
    return None


def claim_key(words: Words, reading: Reading, claim: AnyClaim) -> KeyRef:
    """A claim as the key (and value) the user wrote, or the engine default it stands for."""
    found = claim_keys(words, reading, claim)
    return found[0] if found else KeyRef(claim.name, None, "default")


def claim_keys(
    words: Words, reading: Reading, claim: AnyClaim, paths: set[str] | None = None
) -> list[KeyRef]:
    """A claim as the keys (and values) the user wrote, or the engine defaults it stands
    for (a conjunction of defaults: the items on `paths`, the options of the conflict)."""
    from constraints.expr import And, Eq  # the expressions, loaded with the claims

    name, given = _field(claim, words.dialect, reading)
    expr = getattr(claim, "expr", None)
    solved = getattr(expr, "value", None)
    _, _, sub = name.partition(".")
    g = words.given_for(name)
    if given and g is not None:
        value = _sub_value(g.value, sub) if sub else g.value
        if value is None and sub:
            value = solved
        return [KeyRef(words.spell(name), value, "given", g.flag, g.line)]
    items = list(expr.items) if isinstance(expr, And) else [expr]
    eqs = [e for e in items if isinstance(e, Eq)]
    if paths is not None and len(eqs) > 1:
        eqs = [e for e in eqs if e.path in paths]
    flag = words.source == "--serve-args"
    about = f"{words.label}'s default"
    return [KeyRef(words.name(e.path), e.value, "default", flag, None, about) for e in eqs]


def _rules_read(rules: Iterable[Any], reading: Reading) -> set[str]:
    """The paths the shipped rules `rules` (a report's, by id) read under the reading's
    profile: a rule whose reads depend on the engine (the memory rules) reads only this
    engine's options, so no other engine's pack is consulted."""
    from constraints.rules import get_rule  # the shipped rules, loaded by the check

    terms = get_profile(reading.profile).memory_terms
    paths: set[str] = set()
    for r in rules:
        try:
            expr = get_rule(r.id).expr
        except KeyError:
            continue
        paths |= expr.reads_under(terms) if isinstance(expr, Computed) else expr.paths()
    return paths


def _conflict(words: Words, reading: Reading, by_name: Mapping[str, AnyClaim], report: Any):
    paths = _rules_read(report.rules, reading)
    keys = []
    seen = set()
    parts = dict(getattr(report, "parts", ()) or ())  # the pins of a claim that take part
    for m in report.claims:
        if m.name not in by_name:
            continue
        taking_part = set(parts[m.name]) if m.name in parts else paths
        for ref in claim_keys(words, reading, by_name[m.name], taking_part):
            if (ref.key, ref.origin) in seen:
                continue
            seen.add((ref.key, ref.origin))
            keys.append(ref)
    rules = tuple(RuleWords(r.id, words.text(r.text), r.source) for r in report.rules)
    numbers = tuple(words.text(n.text).replace(" * ", " x ") for n in report.numbers)
    facts = []
    for path, value in sorted(report.conflict.facts.items()):
        if path in paths:
            facts.append(KeyRef(words.name(path), value, "fact", about=""))
    for s in report.setups:
        claim = by_name.get(s.name)
        if not isinstance(claim, SetupClaim) or claim.name in ("model", "device"):
            continue
        for path, value in sorted(claim.fixes.items()):
            key = words.key(path)
            if path in paths and key is not None:
                facts.append(KeyRef(key, value, "default", about=f"{words.label}'s default"))
    return ConflictWords(tuple(keys), rules, numbers, tuple(facts))


# ---------------------------------------------------------------------------- fixes
def _fixes(
    words: Words,
    reading: Reading,
    claims: Sequence[AnyClaim],
    by_name: Mapping[str, AnyClaim],
    explanation: Any,
    recheck: Recheck,
) -> tuple[FixWords, ...]:
    from .value_fixes import (  # the solver's searches, only for a conflict's fixes
        FRACTION,
        SAFE_FRACTION,
        numeric_claim,
    )

    searches: dict[bool, Any] = {}  # the value searches (one model each), built on demand
    out: list[FixWords] = []
    for fix in explanation.corrections:
        if not fix.verified:
            continue
        refs = [claim_key(words, reading, by_name[n]) for n in fix.drop if n in by_name]
        if len(fix.drop) == 1 and fix.drop[0] in by_name:
            claim = by_name[fix.drop[0]]
            numeric = numeric_claim(claim)
            if numeric is not None:
                found = _verified_values(searches, words, reading, claims, claim, numeric, recheck)
                if found is not None:
                    out.append(_value_fix(refs[0], found, numeric[1], fix.hits))
                    continue
        allowed = dict(fix.allows)
        safe = SAFE_FRACTION.get(words.dialect, 0.95)
        if (allowed.get(FRACTION) or 0) > safe:
            continue  # never a fix that gives the engine more memory than its safe bound
        if any(r.origin != "given" for r in refs):
            continue  # an engine default is not the user's to drop (a value fix names it)
        out.append(
            FixWords(
                "drop",
                tuple(dict.fromkeys(_dropped(r.key) for r in refs)),
                "drop",
                breaks=tuple(fix.hits),
                flag=all(r.flag for r in refs),
                cost=10.0 * len(refs),
            )
        )
    gpus = _gpu_fix(words, reading, claims, explanation, recheck)
    if gpus is not None:
        out.append(gpus)
    return tuple(sorted(out, key=lambda f: (f.cost, f.keys)))


def _verified_values(
    searches: dict[bool, Any],
    words: Words,
    reading: Reading,
    claims: Sequence[AnyClaim],
    claim: AnyClaim,
    numeric: tuple[str, Any],
    recheck: Recheck,
) -> Any:
    """The values a numeric claim may take instead, each bound verified end to end: the
    reading with the claim at that value is checked again (arbitrate, refine, judge) and
    not refused. The search holds the hard claims first; where the engine then refuses
    (it keeps a default the first search let go), again with the engine's defaults held."""
    from . import DIALECTS  # the pack's own records (imported by the check already)
    from .value_fixes import ValueSearch  # the solver's searches, only for a conflict

    # the defaults the engine derives once and keeps, refusing to see them moved (vLLM)
    kept = tuple(getattr(DIALECTS.part(words.dialect, "native"), "KEPT_DEFAULTS", ()))
    for strict in (False, True) if kept else (False,):
        if strict not in searches:
            searches[strict] = ValueSearch(
                claims,
                profile=reading.profile,
                mode=reading.mode,
                dialect=words.dialect,
                strict=strict,
                kept=kept,
            )
        found = searches[strict].search(claim.name, *numeric)
        if found is None:
            continue
        if all(_accepted(recheck, reading, claim, numeric[0], v) for v in found.values):
            return found
    return None


def _accepted(recheck: Recheck, reading: Reading, claim: AnyClaim, path: str, value: Any) -> bool:
    """Whether the engine accepts the reading with `claim` setting `path` to `value`."""
    from ..claims import func  # the claims load with the check already

    changed = func(claim.name, {path: value}, source=claim.source)

    def swap(items: list[AnyClaim] | None) -> list[AnyClaim] | None:
        if items is None:
            return None
        return [changed if c.name == claim.name else c for c in items]

    again = replace(reading, claims=swap(reading.claims) or [], asked=swap(reading.asked))
    return bool(recheck(again).verdict != "reject")


def _accepted_on(recheck: Recheck, reading: Reading, gpus: int, spread: bool) -> bool:
    """Whether the engine accepts the reading on `gpus` GPUs of the same device (and,
    `spread`, with the tensor-parallel size the engine's defaults pin set to `gpus`)."""
    from ..claims import setup  # the claims load with the check already
    from .value_fixes import TP  # the option names of the fixes

    machine = reading.machine
    device = machine.device
    if device is not None:
        device = replace(device, count=gpus)
    claims = list(reading.claims)
    if spread:
        claims = [
            setup(c.name, {**c.fixes, TP: gpus}, source=c.source)
            if isinstance(c, SetupClaim) and TP in c.fixes
            else c
            for c in claims
        ]
    again = replace(reading, claims=claims, machine=replace(machine, device=device, gpus=gpus))
    return bool(recheck(again).verdict != "reject")


def _gpu_fix(
    words: Words,
    reading: Reading,
    claims: Sequence[AnyClaim],
    explanation: Any,
    recheck: Recheck,
) -> FixWords | None:
    """ "pass --gpus N" where the GPU count takes part in a conflict and N GPUs (with
    the layout spread over them where the user set none) make the claims hold."""
    from .value_fixes import COUNT, TP, gpu_fix  # the GPU count's re-checks, for a conflict

    involved = any(COUNT in _rules_read(c.rules, reading) for c in explanation.conflicts)
    if not involved:
        return None
    user_paths: set[str] = set()
    for claim in claims:
        if claim.kind == "func" and (claim.source or "").startswith(f"{reading.source}: "):
            user_paths |= claim.expr.paths()
    machine = reading.machine
    now = machine.device.count if machine.device is not None else machine.gpus

    def accepts(gpus: int, spread: bool) -> bool:
        return _accepted_on(recheck, reading, gpus, spread)

    found = gpu_fix(accepts, int(now or 1), spread=TP not in user_paths)
    if found is None:
        return None
    keys: tuple[str, ...] = ()
    if found.tensor_parallel is not None:
        keys = (words.key(TP) or "tensor_parallel_size",)
    hits = tuple(range(1, len(explanation.conflicts) + 1))
    return FixWords(
        "gpus", keys, "=", found.gpus, breaks=hits, flag=words.source == "--serve-args", cost=0.5
    )


def _dropped(key: str) -> str:
    """The key to drop for a claim: a sub-config's method is the sub-config itself."""
    head, _, sub = key.partition(".")
    return head if sub in ("method", "decoding_type") else key


def _value_fix(ref: KeyRef, found: Any, given: Any, hits: Sequence[int]) -> FixWords:
    values = found.values
    if found.relation in ("one of",):
        value: Any = values
        nearest = min(values, key=lambda v: abs(float(v) - float(given)))
    elif found.relation == "between":
        value = values
        nearest = min(values, key=lambda v: abs(float(v) - float(given)))
    else:
        value = values[0]
        nearest = value
    change = abs(float(nearest) - float(given)) / max(abs(float(given)), 1.0)
    return FixWords(
        "value",
        (ref.key,),
        found.relation,
        value,
        given,
        tuple(hits),
        flag=ref.flag,
        cost=min(change, 1.0),
    )


__all__ = [
    "ConflictWords",
    "FixWords",
    "KeyRef",
    "RuleWords",
    "claim_key",
    "words_for",
]
