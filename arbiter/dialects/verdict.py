"""The engine's answer on a configuration (`Verdict`): accept, adjust or reject, in the
engine's own words, with the configuration it is about. `arbiter.check` returns one for
every engine; the command line, the service and `compare` render it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..errors import ArbiterError, ConflictError
    from ..resolution import Resolution
    from .answer import ConflictWords, FixWords

VerdictKind = Literal["accept", "adjust", "reject"]


@dataclass
class Verdict:
    """What the engine would make of a config: `accept` it as written, `adjust` it (the
    `changes` say how), or `reject` it (`reasons`: the conflicting claims with their
    rule ids, or every bad key). `rules` holds the rule ids of the conflicts,
    `unknown_keys` the keys no field of the release matches.

    `config` is the configuration the verdict is about, in the engine's `format`;
    `engine_changes` what the engine sets by itself for fields left open ("vLLM would set
    ..."; also among `warnings`); `notes` the dialect's own adjustments and
    `derivations` how the engine derives its values; `resolution` the solve behind it,
    `conflict` the ConflictError of a reject from a conflict (its `.explanation` has the
    conflict graph), `error` the bad-input error of a reject that never reached a solve.

    In the engine's own words (`arbiter.dialects.answer`): `engine_conflicts` each
    conflict as the user's keys, the rules and the numbers; `engine_fixes` the verified
    changes that make it consistent (a value where the rule allows one), least change
    first; `headline` the verdict in one line."""

    verdict: VerdictKind
    reasons: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # what the engine warns about while running as written
    rules: tuple[str, ...] = ()
    unknown_keys: tuple[str, ...] = ()
    not_arbitrated: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] | None = None
    resolution: Resolution | None = None
    conflict: ConflictError | None = None
    format: str = "yaml"
    engine_changes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    derivations: tuple[str, ...] = ()
    dialect: str = ""
    profile: str = ""
    error: ArbiterError | None = None
    engine_conflicts: tuple[ConflictWords, ...] = ()
    engine_fixes: tuple[FixWords, ...] = ()

    @property
    def headline(self) -> str:
        """The verdict in one line, in the engine's words ("vLLM would refuse this
        config: 1 conflict", "SGLang accepts this config with 2 changes")."""
        from . import DIALECTS  # the registry's labels (it imports no engine)

        label = DIALECTS.label(self.dialect) if self.dialect in DIALECTS else "the engine"
        if self.verdict == "reject":
            if self.conflict is not None:
                n = len(self.engine_conflicts) or len(self.reasons) or 1
                return f"{label} would refuse this config: {n} conflict{'s' if n != 1 else ''}"
            n = len(self.reasons) or 1
            return f"{label} would refuse this config: {n} problem{'s' if n != 1 else ''}"
        n = len(self.changes)
        if self.verdict == "adjust" and n:
            return f"{label} accepts this config with {n} change{'s' if n != 1 else ''}"
        return f"{label} accepts this config"

    @classmethod
    def of_conflict(cls, conflict: ConflictError, carried: dict[str, str] | None = None) -> Verdict:
        """A reject from a conflict: the conflicting claims, their rules, the error."""
        rules = tuple(dict.fromkeys(r for c in conflict.conflicts for r in c.rules))
        return cls(
            "reject",
            tuple(str(c) for c in conflict.conflicts),
            rules=rules,
            not_arbitrated=dict(carried or {}),
            conflict=conflict,
        )

    @classmethod
    def of_error(cls, error: ArbiterError) -> Verdict:
        """A reject from bad input (or a solve that failed): every problem named."""
        problems = getattr(error, "problems", None)
        reasons = tuple(str(p) for p in problems) if problems else (str(error),)
        unknown = tuple(getattr(error, "unknown_keys", ()) or ())
        return cls("reject", reasons, unknown_keys=unknown, error=error)

    @property
    def exit_code(self) -> int:
        """0 for accept and adjust, 1 for reject, 2 for a reject from bad input."""
        if self.verdict != "reject":
            return 0
        return 2 if self.error is not None else 1

    def lines(self) -> list[str]:
        """Every line the text report shows about the verdict, in order."""
        out = [f"verdict: {self.verdict}"]
        out += [f"reject: {r}" for r in self.reasons]
        out += [f"adjusted {c}" for c in self.changes]
        out += list(self.warnings)
        out += [d for d in self.derivations if d not in self.warnings]
        if self.not_arbitrated:
            out.append("not arbitrated (written back as given): " + ", ".join(self.not_arbitrated))
        return out

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON: every line the text report shows, as fields."""
        body: dict[str, Any] = {
            "dialect": self.dialect,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "adjustments": list(self.changes),
            "warnings": list(self.warnings),
            "engine_changes": list(self.engine_changes),
            "notes": list(self.notes),
            "derivations": list(self.derivations),
            "rules": list(self.rules),
            "unknown_keys": list(self.unknown_keys),
            "not_arbitrated": dict(self.not_arbitrated),
            "config": self.config,
            "format": self.format,
            "profile": self.profile,
            "lines": self.lines(),
        }
        return body


__all__ = ["Verdict", "VerdictKind"]
