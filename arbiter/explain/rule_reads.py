"""What each hard rule requires and which options it reads, worked out once per rule set.

A drop reason's neighbourhood search (`arbiter.explain.resolved`) looks at the options
every rule reads; the rules of a profile are the same objects from one call to the next
(`arbiter.problem` binds them once per facts), so their reads are kept here, keyed by the
rules' identities, instead of being recomputed for every resolution.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from constraints.rules import Rule

from .refute import Item

RuleKey = tuple[str, str]  # ("rule", rule id): the key `_candidates` uses


class RuleReads:
    """The rules' expressions and options read (not facts), by `("rule", id)`."""

    __slots__ = ("_items", "exprs", "pairs", "reads", "rules")

    def __init__(self, rules: Sequence[Rule], facts: Mapping[str, Any]):
        self.rules = tuple(rules)  # held: the cache key holds their ids
        self.exprs: dict[RuleKey, Any] = {("rule", r.id): r.expr for r in rules}
        self.reads: dict[RuleKey, frozenset[str]] = {
            key: frozenset(p for p in expr.paths() if p not in facts)
            for key, expr in self.exprs.items()
        }
        self.pairs = [(key[1], paths) for key, paths in self.reads.items()]  # (id, reads)
        self._items: dict[RuleKey, Item] = {}

    def item(self, key: RuleKey) -> Item:
        """The rule's `refute.Item`, made on first use (a dict write: safe to race)."""
        found = self._items.get(key)
        if found is None:
            found = self._items[key] = Item(self.exprs[key], self.reads[key])
        return found


_CACHE: OrderedDict[Any, RuleReads] = OrderedDict()
_LOCK = threading.Lock()
_SIZE = 32


def rule_reads(rules: Sequence[Rule], facts: Mapping[str, Any]) -> RuleReads:
    """`RuleReads` of `rules`, reused while the same rule objects and fact paths come back
    (the reads leave out facts, so the key holds which paths are facts, not their values)."""
    key = (tuple(id(r) for r in rules), frozenset(facts))
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
    found = RuleReads(rules, facts)
    with _LOCK:
        _CACHE[key] = found
        while len(_CACHE) > _SIZE:
            _CACHE.popitem(last=False)
    return found
