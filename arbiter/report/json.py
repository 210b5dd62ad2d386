"""The JSON report: `Explanation.to_json()` pretty-printed, keys in a fixed order.

Schema `arbiter.explanation`, version 1 (a field is only ever added in a new minor meaning;
renaming or removing one bumps `version`):

- `schema`, `version`, `status` ("conflict" or "resolved")
- `conflicts[]`: `code` (CFG001, or CFG002 when the setup facts alone contradict the
  rules), `claims[]` and `setups[]` ({name, kind, requires, source}), `rules[]` ({id, text,
  source, expr}), `facts` {path: value}, `chain` (one sentence), `numbers[]` ({where, text,
  lhs, op, rhs, holds, values}), `edges[]` ([claim or rule, rule, shared option path])
- `corrections[]`: `drop` (claim names), `verified`, `allows[]` ({path, value}), `hits`
  (1-based indices of the conflicts it breaks)
- `menus[]`: only when the conflicts found are all there are and share no claim: one
  list of claim names per conflict; dropping any one claim from each is a correction
- `dropped[]`: `code` (PERF010..PERF013), `claim`, `kind`, `weight`, `priority`,
  `message`, `against`, `rules[]`, `winners`, `chain`, `numbers[]`
- `notes[]`: setup facts, as sentences
- `search`: {complete, cut_by (null, "count" or "time"), conflicts_found,
  corrections_found, max_conflicts, max_corrections, time_budget_s}
"""

from __future__ import annotations

import json
from typing import Any


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
