"""A dialect's verdict as text, in the engine's own words (`arbiter check`, `compare`,
the service's text): the verdict first in one line, then what the engine will change by
itself, then each conflict as the user's keys and values (with file:line where known),
the rule's message and source, the numbers with the engine's names and the facts they
rest on; then the fixes, least change first. `verbose` adds the internal derivation
(the claim-level conflict report with its option paths and setup facts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dialects.words import Words


def _where(ref: Any, source: str | None, lines: Mapping[str, int]) -> str:
    line = ref.line if ref.line is not None else lines.get(ref.key.partition(".")[0])
    if ref.origin != "given" or not source or source == "<input>":
        return ""
    if source == "--serve-args":
        return ""
    return f"  ({source}:{line})" if line else f"  ({source})"


def conflict_lines(
    verdict: Any, *, source: str | None = None, lines: Mapping[str, int] | None = None
) -> list[str]:
    """The conflicts and fixes of a reject, in the engine's words (no headline)."""
    out: list[str] = []
    lines = lines or {}
    total = len(verdict.engine_conflicts)
    for i, c in enumerate(verdict.engine_conflicts, 1):
        names = [k.key for k in c.keys]
        if not names:  # no key of the config takes part: the model, GPU and release alone
            head = "the model, the GPUs and the release cannot hold together"
        elif len(names) == 1:
            head = f"{names[0]} cannot hold"
        else:
            verb = "cannot both hold" if len(names) == 2 else "cannot all hold"
            head = ", ".join(names[:-1]) + f" and {names[-1]} {verb}"
        out.append(f"conflict {i} of {total}: {head}" if total > 1 else f"conflict: {head}")
        for k in c.keys:
            out.append(f"  {k.text()}{_where(k, source, lines)}")
        for r in c.rules:
            out.append(f"  rule {r.id}: {r.message}")
            out.append(f"    source: {r.source}")
        for n in c.numbers:
            out.append(f"  numbers: {n}")
        if c.facts:
            out.append("  facts: " + "; ".join(f.text() for f in c.facts))
    if verdict.engine_fixes:
        out.append("fix (any one of these; least change first):")
        for i, fix in enumerate(verdict.engine_fixes, 1):
            breaks = ""
            if total > 1:
                breaks = f"  (breaks conflict{'s' if len(fix.breaks) != 1 else ''} "
                breaks += ", ".join(map(str, fix.breaks)) + ")"
            out.append(f"  {i}. {fix.text()}{breaks}")
    elif verdict.conflict is not None and not any(c.keys for c in verdict.engine_conflicts):
        out.append(
            "fix: no key of the config takes part; another checkpoint or GPU (--model,"
            " --device) or another release (--profile) is needed"
        )
    elif verdict.conflict is not None:
        out.append("fix: no single change to a key of the config was verified; see --verbose")
    return out


def reject_text(
    verdict: Any,
    *,
    verbose: bool = False,
    source: str | None = None,
    lines: Mapping[str, int] | None = None,
) -> list[str]:
    """A reject in the engine's words: the headline, then the conflicts and fixes (or
    the engine's reasons); `verbose` adds the full derivation."""
    out = [verdict.headline]
    words = Words.of(verdict.dialect, None)
    if verdict.conflict is not None and verdict.engine_conflicts:
        out += conflict_lines(verdict, source=source, lines=lines)
    elif verdict.conflict is None:
        out += [f"  {words.text(r)}" for r in verdict.reasons]
        if verdict.rules:
            out.append("  rules: " + ", ".join(verdict.rules))
    if verbose and verdict.conflict is not None:
        out.append("")
        out.append("derivation (arbiter's options and setup facts):")
        out += verdict.conflict.report("text").rstrip("\n").splitlines()
    elif verdict.conflict is not None:
        out.append("(--verbose: the full derivation, with arbiter's option paths)")
    return out


def accept_lines(verdict: Any, *, verbose: bool = False) -> list[str]:
    """The report under an accepted (or adjusted) configuration, one line each: what
    the engine sets by itself and the adjustments, in its words; `verbose` adds the
    solve's option changes."""
    from ..application.check import report_lines  # the full (internal) report

    if verbose:
        return [verdict.headline, *report_lines(verdict)]
    words = Words.of(verdict.dialect, None)
    out = [verdict.headline]
    out += [words.text(w) for w in verdict.warnings]
    out += [words.text(d) for d in verdict.derivations if d not in verdict.warnings]
    out += [f"adjusted {words.text(c)}" for c in verdict.changes]
    if verdict.not_arbitrated:
        out.append("not arbitrated (written back as given): " + ", ".join(verdict.not_arbitrated))
    if verdict.resolution is not None:
        out.append(f"capacity: {verdict.resolution.capacity}")
    out.append(f"profile: {verdict.profile}")
    return out


__all__ = ["accept_lines", "conflict_lines", "reject_text"]
