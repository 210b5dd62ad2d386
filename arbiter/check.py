"""`check()`: the one check pipeline, the same for every engine.

read (the dialect: source -> typed `Reading`) -> the machine's claims -> `arbitrate` ->
refine (the dialect's optional second solve) -> write (the engine's own format) -> judge
(the engine's verdict: accept, adjust or reject, in its words). The command line
(`arbiter check`), the service (`POST /v1/check`), `arbiter compare`, the sweeps and the
benchmarks all call it, so one input gets one verdict whichever door it came through.

`check` raises for bad input (a typed error naming the culprit, exit 2); `verdict_of` is
the same check turning bad input into a `reject` verdict, for callers that never raise
(`compare`, the `check_<engine>` functions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constraints.profiles import Profile

from .callable_module import make_callable
from .dialects import DIALECTS
from .dialects.protocol import Arbitration, Dialect, Machine, ModelSource, Reading
from .dialects.verdict import Verdict
from .errors import ArbiterError, ConflictError, DialectError


def check(
    dialect: Dialect | str,
    source: Any = None,
    *,
    serve_args: str | None = None,
    machine: Machine | None = None,
    profile: str | Profile | None = None,
    engine: Any = None,
    time_limit_s: float | None = None,
    lines: Mapping[str, int] | None = None,
    words: bool = True,
) -> Verdict:
    """The engine's verdict on a configuration: `source` (a file path, or a mapping of
    the engine's own keys) and/or `serve_args` (its serving command line), on `machine`
    (`Machine.read(model, device, gpus)`; None: no facts given), for the release line
    `profile` (None: the dialect's). `engine` is a prebuilt engine (trtllm); `lines` the
    line of each key of the source as written, for the report. `words=False` leaves out a
    conflict's engine-word records and value fixes (the search behind them re-checks the
    configuration many times), for callers that need only the verdict and the conflict.

    Raises a typed error for bad input (exit 2); a conflict is a `reject` verdict whose
    `conflict` holds the ConflictError."""
    chosen = DIALECTS.get_dialect(dialect) if isinstance(dialect, str) else dialect
    if source is None and serve_args is None and engine is None:
        raise DialectError("give a configuration, serve arguments, or both", key="file")
    reading = chosen.read(
        source,
        serve_args=serve_args,
        machine=machine or Machine(),
        profile=profile,
        engine=engine,
    )
    return check_reading(chosen, reading, time_limit_s, lines, words=words)


def check_reading(
    dialect: Dialect,
    reading: Reading,
    time_limit_s: float | None = None,
    lines: Mapping[str, int] | None = None,
    *,
    words: bool = True,
) -> Verdict:
    """The pipeline after `Dialect.read`: machine claims, arbitrate, refine, write, judge.
    `lines`: the line of each key of the source as written (for the engine's words)."""
    verdict = _judged(dialect, reading, time_limit_s, lines, words=words)
    return _stamped(verdict, dialect, reading)


def _in_words(
    verdict: Verdict,
    dialect: Dialect,
    reading: Reading,
    claims: list[Any],
    lines: Mapping[str, int] | None,
) -> Verdict:
    """A conflict's verdict with its engine-word records (keys, numbers, value fixes)."""
    if verdict.conflict is None:
        return verdict
    from .dialects.answer import words_for  # the value search runs only for a conflict

    def recheck(changed: Reading) -> Verdict:  # a fix applied, checked end to end
        return _judged(dialect, changed, None, words=False)

    return words_for(verdict, dialect.name, reading, claims, lines, recheck=recheck)


def _judged(
    dialect: Dialect,
    reading: Reading,
    time_limit_s: float | None,
    lines: Mapping[str, int] | None = None,
    *,
    words: bool = True,
) -> Verdict:
    if reading.refusals:
        return Verdict("reject", tuple(reading.refusals), not_arbitrated=dict(reading.carried))
    # OR-Tools loads only when a configuration is checked, not when it is read
    from .solve import arbitrate

    claims = reading.solved_claims()
    profile: Any = reading.profile  # a registered name, or a dialect's own line (trtllm)
    mode = reading.mode
    try:
        resolution = arbitrate(claims, profile=profile, mode=mode, time_limit_s=time_limit_s)
    except ConflictError as exc:
        verdict = dialect.judge(reading, Arbitration(claims, conflict=exc), None)
        return _in_words(verdict, dialect, reading, claims, lines) if words else verdict
    more = dialect.refine(reading, resolution)
    if more is not None:
        try:
            resolution = arbitrate(more, profile=profile, mode=mode, time_limit_s=time_limit_s)
            claims, reading.refined = more, True
        except ConflictError:
            pass  # never stricter than the first solve: the first resolution stands
    try:
        written = dialect.write(resolution, reading)
    except DialectError as exc:  # the engine has no way to write what the solve found
        return Verdict("reject", (str(exc),), resolution=resolution, error=None)
    verdict = dialect.judge(reading, Arbitration(claims, resolution=resolution), written)
    verdict.format = written.format
    return verdict


def _stamped(verdict: Verdict, dialect: Dialect, reading: Reading) -> Verdict:
    verdict.dialect = dialect.name
    if verdict.resolution is not None:
        verdict.profile = str(verdict.resolution.stats.get("profile") or reading.profile_name)
    else:
        verdict.profile = reading.profile_name
    return verdict


def verdict_of(
    dialect: Dialect | str,
    source: Any = None,
    *,
    serve_args: str | None = None,
    model: ModelSource = None,
    device: Any = None,
    gpus: int = 1,
    profile: str | Profile | None = None,
    engine: Any = None,
    machine: Machine | None = None,
    time_limit_s: float | None = None,
) -> Verdict:
    """`check` with the machine read from `model`, `device` and `gpus` (unless `machine`
    is given), never raising for bad input: that is a `reject` whose `error` is set."""
    try:
        if machine is None:
            machine = Machine.read(model, device, gpus)
        return check(
            dialect,
            source,
            serve_args=serve_args,
            machine=machine,
            profile=profile,
            engine=engine,
            time_limit_s=time_limit_s,
        )
    except ArbiterError as exc:
        return Verdict.of_error(exc)


__all__ = ["Machine", "check", "check_reading", "verdict_of"]

make_callable(__name__, check)  # `arbiter.check(...)` runs it (callable_module.py)
