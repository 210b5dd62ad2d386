"""`compare()`: one intent, each engine's own checker, side by side.

Per engine: the intent's features become the engine's native config (`mapping.native`),
which the engine's checker (`arbiter.check` through the engine's dialect) judges.
A hard feature the engine has no option for is a conflict; a soft one is dropped with
the reason. Soft wishes give way the way perf claims do, one checker run each: first
everything is tried; if the engine refuses, the hard features alone are checked (a
refusal there is the engine's conflict, with the checker's minimal conflict and rules),
then the soft wishes are added back in the order the intent lists them, each kept when
the engine still accepts and dropped with the engine's reason otherwise.

An engine whose checker module is not importable is reported `unavailable`, with why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..check import verdict_of
from ..dialects import DIALECTS
from ..dialects.protocol import Machine
from ..dialects.verdict import Verdict
from ..errors import ArbiterError
from .intent import Intent, read_intent
from .mapping import ENGINES, native, table_of
from .result import CHANGED, CONFLICTS, ERROR, HOLDS, UNAVAILABLE, Comparison, EngineResult
from .vocabulary import IntentError, IntentProblem

Checker = Callable[..., Any]


def checker(engine: str) -> tuple[Checker | None, str | None]:
    """The engine's checker: `arbiter.check` through its dialect (`DIALECTS`), never
    raising for bad input; or None and the reason its pack is missing."""
    try:
        dialect = DIALECTS[engine]
    except ModuleNotFoundError as exc:
        return None, f"{DIALECTS.entries[engine].dialect_module} is not importable ({exc})"
    except ImportError as exc:
        return None, str(exc)

    def run(config: Any, *, machine: Machine) -> Verdict:
        return verdict_of(dialect, config, machine=machine)

    return run, None


def parse_engines(engines: str | Iterable[str]) -> tuple[str, ...]:
    """Engine names from "trtllm,vllm" or a list; unknown or repeated names raise IntentError."""
    names = [e.strip() for e in engines.split(",")] if isinstance(engines, str) else list(engines)
    problems = [
        IntentProblem("engines", "unknown engine", name, ", ".join(ENGINES))
        for name in names
        if name not in ENGINES
    ]
    if not names:
        problems.append(IntentProblem("engines", "no engine named", None, ", ".join(ENGINES)))
    if len(set(names)) != len(names):
        problems.append(IntentProblem("engines", "an engine is named twice", names))
    if problems:
        raise IntentError(problems)
    return tuple(names)


def compare(
    intent: Intent | str | Path | Mapping[str, Any], engines: str | Iterable[str] = ENGINES
) -> Comparison:
    """Each engine's verdict on `intent` (an `Intent`, or a file or mapping `read_intent`
    reads), side by side (see the module docstring). Raises `IntentError` for bad input."""
    names = parse_engines(engines)
    if not isinstance(intent, Intent):
        intent = read_intent(intent)
    return Comparison(intent, tuple(compare_one(intent, name) for name in names))


def compare_one(intent: Intent, engine: str) -> EngineResult:
    """One engine's result for `intent`."""
    features = intent.features
    mapped = native(engine, features)
    missing = {f: r for f, r in mapped.missing.items() if f in intent.hard}
    dropped = {f: r for f, r in mapped.missing.items() if f in intent.soft}
    result = EngineResult(
        engine,
        table_of(engine).LABEL,
        CONFLICTS if missing else HOLDS,
        format=table_of(engine).FORMAT,
        config=mapped.config,
        options=mapped.options,
        missing=missing,
        dropped=dropped,
    )
    check, why = checker(engine)
    if check is None:
        result.status, result.reason = UNAVAILABLE, why
        return result
    hard = {f: v for f, v in intent.hard.items() if f not in missing}
    wishes = [f for f in intent.soft if f not in dropped]
    run = _Runner(check, intent, engine, result)
    chosen: dict[str, Any] = {**hard, **{f: intent.soft[f] for f in wishes}}
    verdict = run(chosen)
    if _refused(verdict) and wishes:
        chosen, verdict = _give_way(run, hard, {f: intent.soft[f] for f in wishes}, result)
    if result.status == ERROR or verdict is None:
        return result
    _settle(result, verdict, native(engine, chosen))
    return result


def _refused(verdict: Any) -> bool:
    return verdict is not None and verdict.verdict == "reject"


def _give_way(
    run: _Runner, hard: dict[str, Any], wishes: dict[str, Any], result: EngineResult
) -> tuple[dict[str, Any], Any]:
    """The engine refused hard + wishes: check the hard features alone (a refusal there is
    the engine's conflict), then add the wishes back in order, each kept while the engine
    accepts and dropped with its reason otherwise. (features kept, their verdict)"""
    chosen = dict(hard)
    verdict = run(chosen)
    if verdict is None or _refused(verdict):
        return chosen, verdict
    for wish, value in wishes.items():
        trial = run({**chosen, wish: value})
        if trial is None:  # the checker failed: the result says so
            break
        if _refused(trial):
            result.dropped[wish] = _why(trial)
        else:
            chosen[wish], verdict = value, trial
    return chosen, verdict


class _Runner:
    """Runs the checker on the native config of a set of features; counts the runs, and
    turns a checker fault into the `error` status."""

    def __init__(self, check: Checker, intent: Intent, engine: str, result: EngineResult):
        self.check, self.intent, self.engine, self.result = check, intent, engine, result
        self._seen: dict[tuple[str, ...], Any] = {}
        self._machine: Machine | Verdict | None = None

    def machine(self) -> Machine | Verdict:
        """The intent's machine, read once for all the runs (bad facts: a reject)."""
        if self._machine is None:
            try:
                self._machine = Machine.read(
                    self.intent.model, self.intent.device, self.intent.gpus
                )
            except ArbiterError as exc:
                self._machine = Verdict.of_error(exc)
        return self._machine

    def __call__(self, features: Mapping[str, Any]) -> Any:
        key = tuple(sorted(features))
        if key in self._seen:
            return self._seen[key]
        config = native(self.engine, features).config
        self.result.checks += 1
        machine = self.machine()
        try:
            verdict = (
                machine if isinstance(machine, Verdict) else self.check(config, machine=machine)
            )
        except Exception as exc:  # the contract says never raise: a fault of arbiter
            self.result.status = ERROR
            self.result.reason = f"check of {self.engine} raised {type(exc).__name__}: {exc}"
            verdict = None
        self._seen[key] = verdict
        return verdict


def _why(verdict: Any) -> str:
    text = "; ".join(verdict.reasons) or "refused by the engine"
    unnamed = [rule for rule in verdict.rules if rule not in text]
    return text + (f" (rules: {', '.join(unnamed)})" if unnamed else "")


def _explained(verdict: Any) -> tuple[dict[str, Any], ...]:
    """The conflicts of a reject in the explanation's JSON form (no conflict: none). The
    checker's verdict already listed them, so the explanation is worked out already."""
    error = getattr(verdict, "conflict", None)
    explanation = getattr(error, "explanation", None)
    if explanation is None:
        return ()
    return tuple(explanation.to_json()["conflicts"])


def _settle(result: EngineResult, verdict: Any, mapped: Any) -> None:
    result.options = {**mapped.options}
    if verdict.verdict == "reject":
        result.status = CONFLICTS
        result.conflicts = tuple(verdict.reasons)
        result.rules = tuple(verdict.rules)
        result.config = mapped.config
        result.explained = _explained(verdict)
        if getattr(verdict, "engine_conflicts", ()):
            from ..report.verdict_text import conflict_lines  # the engine's words

            result.in_words = tuple(conflict_lines(verdict))
        return
    result.config = dict(verdict.config) if verdict.config is not None else mapped.config
    result.changes = tuple(verdict.changes)
    result.warnings = tuple(getattr(verdict, "warnings", ()))
    result.engine_changes = tuple(getattr(verdict, "engine_changes", ()))
    if result.status != CONFLICTS:
        result.status = CHANGED if (verdict.changes or result.dropped) else HOLDS
    resolution = verdict.resolution
    if resolution is not None and result.status != CONFLICTS:  # capacity of what holds
        try:
            capacity = resolution.capacity
        except (KeyError, TypeError, ValueError, ArithmeticError):
            return  # a resolution without the memory facts (no model or device)
        result.kv_tokens = int(capacity.kv_tokens)
        result.kv_blocks = int(capacity.kv_blocks)
        result.tokens_per_block = int(capacity.tokens_per_block)


__all__ = ["checker", "compare", "compare_one", "parse_engines"]
