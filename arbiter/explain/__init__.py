"""Explanations: every conflict, every fix, every dropped claim, as data a renderer can print.

Vocabulary (DESIGN.md section 2): a **conflict** is a minimal unsatisfiable set (MUS) of
functional claims, with the rules that take part (a second minimisation over the rules with
the claims fixed); a **correction** is a minimal set of functional claims whose removal makes
the rest feasible (MCS). Setup claims are background: never blamed, never a correction, shown
as notes.

Algorithms, all on one feasibility oracle (`Oracle`: assumptions, no objective, 1 worker):

- the first conflict is a core-seeded deletion MUS (a few oracle calls);
- `Explainer.marco()` enumerates conflicts MARCO-style: a small CP-SAT "map" model over one
  Boolean per claim proposes the largest unexplored subset; an infeasible one is shrunk to
  a MUS and blocked upwards, a feasible one is grown (first from the witness the oracle
  found, then claim by claim) to a maximal satisfiable subset whose complement is blocked
  downwards;
- `Explainer.minimal_corrections()` enumerates corrections smallest first: each step keeps
  as many claims as possible in one CP-SAT optimisation, and a blocking clause rules the
  correction (and its supersets) out of the next step;
- `Explainer.preferred_correction()` grows a satisfiable set claim by claim in a
  preference order, so its complement is the correction FastDiag returns for that order
  (the least valuable claims are dropped first);
- the search stops when both enumerations are exhausted (the lists are complete) or at its
  budget: a count of conflicts and corrections, or a time limit (60% of it for conflicts,
  at least 40% for corrections). `Search.cut_by` says which one cut it;
- every reported correction is verified by re-solving the rest with the core
  (`arbiter.core.solve`), and says
  which option values the fix then allows.

A derivation **chain** walks a networkx graph of the conflict (claims, options and rules as
nodes) and propagates the values the claims fix through the rules until two of them clash;
it is rendered as one sentence. Comparisons over sums and products get Kconfig-style numbers
(`path [=value]`), see `numeric_notes`.

Stable codes (a renderer prints them; they never change meaning):

- CFG001  error: a set of functional claims cannot all hold (one per conflict)
- CFG002  error: the setup facts contradict the rules on their own (no claim to blame)
- CFG003  warning: the conflict search stopped at its budget; more conflicts or corrections
          may exist
- CFG004  error: the optimising solve reported no configuration while a feasibility check
          finds one (a solver disagreement: no claim is blamed)
- PERF010 warning: a performance claim was dropped because it conflicts with the functional
          claims and rules
- PERF011 warning: a performance claim was dropped: outranked by a higher priority tier
- PERF012 warning: a performance claim was dropped: outweighed inside its own tier
- PERF013 warning: a performance claim was dropped before optimality was proven (time limit)

Layout: `data` (records and the Explanation), `search` (MUS, MARCO, corrections),
`chains` (derivation sentences), `numbers` (Kconfig-style values), `assembly` (building
explanations), `resolved` (a solved problem as a Resolution whose drop reasons and
provenance are worked out on demand), `entry` (the lazy ConflictError and `explain()`).
The package is built on the core (`arbiter.core`), which never calls back into it.

The JSON form (`Explanation.to_json()`) is versioned: `{"schema": "arbiter.explanation",
"version": 1, ...}`; see `arbiter/report/json.py` for the field list.
"""

from __future__ import annotations

from .assembly import explain_dropped, explain_infeasible, explain_resolution
from .chains import ChainBuilder
from .data import (
    CODES,
    DEFAULT_LIMITS,
    DISAGREEMENT,
    DROP_CODES,
    SCHEMA,
    SCHEMA_VERSION,
    ConflictReport,
    Correction,
    DroppedReport,
    Explanation,
    Limits,
    Member,
    NumericNote,
    RuleRef,
    Search,
    claim_member,
    rule_ref,
    show_value,
)
from .entry import conflict_error, explain, explain_conflict
from .numbers import numeric_notes
from .resolved import ResolutionExplainer, resolve
from .search import Explainer

__all__ = [
    "CODES",
    "ChainBuilder",
    "ConflictReport",
    "Correction",
    "DEFAULT_LIMITS",
    "DISAGREEMENT",
    "DROP_CODES",
    "DroppedReport",
    "Explainer",
    "Explanation",
    "Limits",
    "Member",
    "NumericNote",
    "ResolutionExplainer",
    "RuleRef",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Search",
    "claim_member",
    "conflict_error",
    "explain",
    "explain_conflict",
    "explain_dropped",
    "explain_infeasible",
    "explain_resolution",
    "numeric_notes",
    "resolve",
    "rule_ref",
    "show_value",
]
